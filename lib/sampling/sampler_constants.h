// Tuning of the sampler, shared by its parts (sampler*.cc, the thread visitor, the self-sample
// collector, the sample encoder): periods, back-offs and bounds.
#ifndef INPROF_LIB_SAMPLER_CONSTANTS_H_
#define INPROF_LIB_SAMPLER_CONSTANTS_H_

#include <cstddef>
#include <cstdint>

namespace inprof::internal {

inline constexpr uint64_t kOsNamesRefreshNs = 250000000;  // threads rename themselves after start
// A thread's OS name is read again only if it ran since the last read (it can rename itself
// only by running), or at least this long after it: another thread may have renamed it.
inline constexpr uint64_t kOsNameRecheckNs = 30000000000;
inline constexpr uint64_t kThreadListingPeriodNs = 4000000;
inline constexpr uint64_t kFullListingPeriodNs = 100000000;
// ... or this per thread: a listing takes ~1.25 µs per thread (the kernel's directory walk), so
// 0.4 % of a CPU whatever the count (at 100 µs, 14 ms a second of the sampler's at 1,000 threads).
inline constexpr uint64_t kFullListingPerThreadNs = 300000;
// A listing asked for by a changed thread count waits at least this many times the last one's
// length (ThreadVisitor::refresh()).
inline constexpr uint64_t kListingPauseFactor = 19;
// Where the kernel reports thread starts and ends (watch_activity()), a full listing only finds
// threads born to unwatched ones as another ended: at 2,000 threads, listing every 100 ms was a
// sixth of what the sampler spent.
inline constexpr uint64_t kWatchedFullListingPeriodNs = 1000000000;
// Where every thread descends from the one the records were opened on (a preloaded session),
// the records name every start and end, and a loss of any asks for a listing at once: the
// periodic one is only a safety net (at 10,000 threads each cost the sampler ~15 ms).
inline constexpr uint64_t kAllWatchedFullListingPeriodNs = 10000000000;
// Within a tick, a listing after records were lost at most this often (each listing of 10,000
// threads takes ~15 ms).
inline constexpr uint64_t kLostRecordsListingPeriodNs = 50000000;
// Without CPU samples a tick lists threads (for their names and ends: an allocating thread is
// added when its first allocation is drained) and drains the allocation pool, which wakes the
// sampler itself when half full.
inline constexpr uint64_t kNoCpuTickNs = 50000000;
inline constexpr int kLeafCandidateSlots = 8;
inline constexpr uint32_t kMaxBackoffTicks = 1024;
// With self-sampling the tick serves threads that mostly sleep (and collects the busy ones'
// queues): 1 kHz is enough for them, and spares a small machine ten times as many wake-ups at
// 10 kHz.
inline constexpr uint64_t kSelfSamplingMinPeriodNs = 1000000;
// A self-sampled thread's business is judged over at least this long (and 4 ticks): the OS's
// count of time waiting for a CPU moves in scheduler ticks (4 ms at 250 Hz).
inline constexpr uint64_t kSelfSamplingWindowNs = 20000000;
// A thread that ran within this keeps its timer or ring while it sleeps (it costs nothing then),
// unless another running thread waits for one: its next burst is sampled from its first
// interval, not from the tick that sees it again (a thread running 2 ms every 50 ms kept a
// quarter of its CPU in the profile; the rest went to its sleeping stack).
inline constexpr uint64_t kKeepWhileRanWithinNs = 1000000000;
inline constexpr uint64_t kScarceForTicks = 64;
// A thread refused a timer or ring for want of room asks again at most 2^this ticks later (those
// asks cost a few slot checks while every one is taken).
inline constexpr uint32_t kMostFullRefusalShift = 3;
// One whose signal mask the OS could not yet show truly (it was waiting for a CPU when asked)
// asks again at most 2^this ticks later.
inline constexpr uint32_t kMostUnsureRefusalShift = 1;
// Timers or rings given at one tick to threads found asleep after a burst: each costs the sampler
// system calls (a ring: an event opened and mapped), and a pool of threads that all wake at once
// must not make one tick long.
inline constexpr uint32_t kBurstArmsPerTick = 2;
inline constexpr uint32_t kMostIdleBackoffShift = 4;
// Where the kernel keeps no records of switches, a thread asleep past that back-off (dormant) is
// checked at most every kLongestDormantCheckNs (fewer threads: see below), the process's CPU clock
// standing guard (DormantThreads): read every kUnreadCpuCheckNs, or kUnreadCpuCheckPerThreadNs per
// thread if longer (the process's clock walks every thread, and the check walks their states:
// ~290 ns per thread with cold caches, so 10 µs per thread was ~3 % of a CPU, 25 µs 1.2 %, 50 µs
// 0.6 %; at 10,000 threads a check every 500 ms, half the longest dormant check), a round over the
// dormant threads, kDormantWakesPerTick a tick, once it counts more CPU than the threads' readings
// by their lag plus kUnreadCpuSlackNs.
inline constexpr uint32_t kMostDormantBackoffShift = 14;
inline constexpr uint64_t kLongestDormantCheckNs = 1000000000;
// ... or less where threads are fewer: kDormantCheckPerThreadNs per thread, kShortestDormantCheckNs
// at least (a check reads one clock, ~1.5 µs: 4,000 a second at most). The wall time a thread
// sleeps between its last check and a wake-up its CPU does not reveal (under kUnreadCpuSlackNs)
// is missing when the session ends or it exits before its next check: a whole second was, of two
// seconds that eight threads waited (truth_waits without the kernel's records).
inline constexpr uint64_t kShortestDormantCheckNs = 64000000;
inline constexpr uint64_t kDormantCheckPerThreadNs = 250000;
inline constexpr uint64_t kUnreadCpuCheckNs = 16000000;
inline constexpr uint64_t kUnreadCpuCheckPerThreadNs = 50000;
inline constexpr uint64_t kUnreadCpuSlackNs = 2000000;
inline constexpr uint32_t kDormantWakesPerTick = 512;
// A watched thread (watch_activity()) is checked at the tick after it is switched on, however
// long its back-off: its repeats only keep the wall-clock view, each weighed by the time since
// the previous one (a long sleep is one sample with its duration), and 1,024 intervals apart
// from its first check asleep (no shorter steps first) they cost 1,000 sleeping threads one
// record per tick. Each gets a last one when the session
// stops (write_final_repeats()).
inline constexpr uint32_t kMostWatchedIdleBackoffShift = 10;
// Threads a tick visits between two readings of the kernel's thread records (watch_activity()).
inline constexpr uint32_t kVisitsBetweenDrains = 128;
// Threads the kernel reported before a listing showed them: more than this many waiting (a burst
// of short-lived threads) and they are forgotten, asked by their clocks like unwatched ones.
inline constexpr size_t kMostPendingActivity = 4096;
// Repeats written for timer expirations a self-sampled thread missed while it waited for a CPU
// (or was stopped): at most this many per sample.
inline constexpr uint64_t kMaxMergedExpirations = 1000;
// A thread gets a timer only once it is this old (as seen by the sampler).
inline constexpr uint64_t kNewThreadGraceNs = 2000000;
// The most intervals of CPU one sample may stand for (symbolicate's SampleWeigher::kMaxIntervals:
// beyond it, CPU after a gap is counted as not represented): more is written as several.
inline constexpr uint64_t kMostIntervalsPerSample = 16;
// A self-sampled thread found asleep with this much CPU no snapshot has seen gets it written as
// run unseen (kSampleRanUnseen): bursts its timer's expirations (checked only at the kernel's
// scheduler tick) keep missing. Several ticks' worth: a timer that works leaves up to a tick of
// CPU for its next expiration, which places it in the code that ran.
inline constexpr uint64_t kUnseenSettledAfterNs = 50000000;

}  // namespace inprof::internal

#endif  // INPROF_LIB_SAMPLER_CONSTANTS_H_
