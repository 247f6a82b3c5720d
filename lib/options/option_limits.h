// The ranges of the options a user can set from outside the program, in one place: validate()
// enforces them on Options, and the environment parser (and through it `inprof record`) rejects
// the same values up front, naming the variable or flag instead of the C++ field.
#ifndef INPROF_LIB_OPTION_LIMITS_H_
#define INPROF_LIB_OPTION_LIMITS_H_

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace inprof::internal {

inline constexpr std::chrono::nanoseconds kMinInterval = std::chrono::microseconds(100);
inline constexpr std::chrono::nanoseconds kMaxInterval = std::chrono::seconds(1);
inline constexpr size_t kMinBufferSize = size_t{64} << 10;
inline constexpr size_t kMaxBufferSize = size_t{1} << 30;
inline constexpr size_t kMinStackCopySize = size_t{4} << 10;
inline constexpr size_t kMaxStackCopySize = size_t{1} << 20;
inline constexpr size_t kMinMaxFrames = 8;
inline constexpr size_t kMaxMaxFrames = 4096;  // the dump's limit (dump_records.h kMaxFrames)
inline constexpr std::chrono::seconds kMaxRingSeconds = std::chrono::hours(24 * 365);
inline constexpr size_t kDefaultAllocationSampleBytes = size_t{512} << 10;
inline constexpr size_t kMaxAllocationSampleBytes = size_t{1} << 40;
// Pull mode: the longest profile a scrape may ask for (INPROF_PULL_MAX_SECONDS).
inline constexpr uint64_t kMaxPullSeconds = 3600;

}  // namespace inprof::internal

#endif  // INPROF_LIB_OPTION_LIMITS_H_
