// What a sleeping thread waits on, from the system call the sampler found it blocked in and that
// call's first argument (dump_records.h, SampleWait): "futex 0x7f3a…", "read fd 5", "sleep".
// Shown as the leaf of the thread's idle samples, so that the call tree groups blocked time by
// reason and by the object waited on (issue 43).
#ifndef INPROF_TOOLS_SYMBOLICATE_CONVERT_WAIT_REASONS_H_
#define INPROF_TOOLS_SYMBOLICATE_CONVERT_WAIT_REASONS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace inprof::symbolicate {

// What the first argument of a call that waits names.
enum class WaitObject : uint8_t {
  kNone,        // nothing worth naming (a sleep, a poll's array)
  kFutex,       // a futex word's address: a lock, a condition variable, a join
  kDescriptor,  // a file descriptor: socket, pipe, file, eventfd
};

struct WaitReason {
  std::string_view call;  // the system call's name: "futex", "read", "epoll_wait"
  std::string_view kind;  // a short reason: "lock", "read", "poll", "sleep", "child", "signal"
  WaitObject object = WaitObject::kNone;
};

// The reason for system call `number` on `arch` ("x86_64", "aarch64"); nullopt for a number this
// table does not know (named by its number).
std::optional<WaitReason> wait_reason(std::string_view arch, uint32_t number);

// The leaf frame's name for a wait: "[blocked: futex 0x55d0c0ffee40]", "[blocked: read pipe fd
// 5]" (`object_kind`: the descriptor's DescriptorKind when the sample was taken, 0 unknown),
// "[blocked: nanosleep]", "[blocked: system call 1234]"; a futex in a variable the symbol tables
// name, by that name: "[blocked: futex g_cache_mutex]".
std::string wait_frame_name(std::string_view arch, uint32_t number, uint64_t object,
                            uint8_t object_kind = 0,
                            const std::optional<std::string>& object_name = std::nullopt);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_CONVERT_WAIT_REASONS_H_
