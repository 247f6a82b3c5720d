#include "convert/wait_reasons.h"

#include <cinttypes>
#include <cstdio>

namespace inprof::symbolicate {
namespace {

struct CallEntry {
  uint32_t x86_64;  // kNoNumber where the architecture has no such call
  uint32_t aarch64;
  WaitReason reason;
};
constexpr uint32_t kNoNumber = UINT32_MAX;
constexpr WaitObject kFutex = WaitObject::kFutex;
constexpr WaitObject kFd = WaitObject::kDescriptor;
constexpr WaitObject kNone = WaitObject::kNone;

// The system calls a thread blocks in, by number on each architecture (x86-64's own table;
// aarch64 uses the kernel's generic one, without the calls it replaced: poll, select, ...).
constexpr CallEntry kCalls[] = {
    {202, 98, {"futex", "lock", kFutex}},
    {449, 449, {"futex_waitv", "lock", kNone}},
    {0, 63, {"read", "read", kFd}},
    {1, 64, {"write", "write", kFd}},
    {17, 67, {"pread64", "read", kFd}},
    {18, 68, {"pwrite64", "write", kFd}},
    {19, 65, {"readv", "read", kFd}},
    {20, 66, {"writev", "write", kFd}},
    {295, 69, {"preadv", "read", kFd}},
    {327, 286, {"preadv2", "read", kFd}},
    {45, 207, {"recvfrom", "read", kFd}},
    {47, 212, {"recvmsg", "read", kFd}},
    {299, 243, {"recvmmsg", "read", kFd}},
    {44, 206, {"sendto", "write", kFd}},
    {46, 211, {"sendmsg", "write", kFd}},
    {307, 269, {"sendmmsg", "write", kFd}},
    {43, 202, {"accept", "accept", kFd}},
    {288, 242, {"accept4", "accept", kFd}},
    {42, 203, {"connect", "connect", kFd}},
    {275, 76, {"splice", "read", kFd}},
    {232, kNoNumber, {"epoll_wait", "poll", kFd}},
    {281, 22, {"epoll_pwait", "poll", kFd}},
    {441, 441, {"epoll_pwait2", "poll", kFd}},
    {7, kNoNumber, {"poll", "poll", kNone}},
    {271, 73, {"ppoll", "poll", kNone}},
    {23, kNoNumber, {"select", "poll", kNone}},
    {270, 72, {"pselect6", "poll", kNone}},
    {426, 426, {"io_uring_enter", "poll", kFd}},
    {208, 4, {"io_getevents", "poll", kNone}},
    {35, 101, {"nanosleep", "sleep", kNone}},
    {230, 115, {"clock_nanosleep", "sleep", kNone}},
    {34, kNoNumber, {"pause", "signal", kNone}},
    {130, 133, {"rt_sigsuspend", "signal", kNone}},
    {128, 137, {"rt_sigtimedwait", "signal", kNone}},
    {61, 260, {"wait4", "child", kNone}},
    {247, 95, {"waitid", "child", kNone}},
    {73, 32, {"flock", "file lock", kFd}},
    {72, 25, {"fcntl", "file lock", kFd}},
    {70, 188, {"msgrcv", "ipc", kNone}},
    {69, 189, {"msgsnd", "ipc", kNone}},
    {65, 193, {"semop", "ipc", kNone}},
    {220, 192, {"semtimedop", "ipc", kNone}},
};

// By DescriptorKind (stack_snapshot.h); empty: not said.
constexpr const char* kDescriptorKinds[] = {"",      "file",    "socket",   "pipe",  "eventfd",
                                            "epoll", "timerfd", "signalfd", "device"};

}  // namespace

std::optional<WaitReason> wait_reason(std::string_view arch, uint32_t number) {
  const bool x86 = arch == "x86_64";
  if (!x86 && arch != "aarch64") return std::nullopt;
  for (const CallEntry& e : kCalls) {
    if ((x86 ? e.x86_64 : e.aarch64) == number) return e.reason;
  }
  return std::nullopt;
}

std::string wait_frame_name(std::string_view arch, uint32_t number, uint64_t object,
                            uint8_t object_kind, const std::optional<std::string>& object_name) {
  const std::optional<WaitReason> reason = wait_reason(arch, number);
  if (reason && reason->object == WaitObject::kFutex && object_name) {
    return "[blocked: " + std::string(reason->call) + " " + *object_name + "]";
  }
  char text[96];
  if (!reason) {
    std::snprintf(text, sizeof(text), "[blocked: system call %" PRIu32 "]", number);
  } else if (reason->object == WaitObject::kFutex) {
    std::snprintf(text, sizeof(text), "[blocked: %.*s 0x%" PRIx64 "]",
                  static_cast<int>(reason->call.size()), reason->call.data(), object);
  } else if (reason->object == WaitObject::kDescriptor && object <= INT32_MAX) {
    std::string_view kind =
        object_kind < std::size(kDescriptorKinds) ? kDescriptorKinds[object_kind] : "";
    if (kind == "epoll" && reason->call.starts_with("epoll")) kind = "";  // said already
    std::snprintf(text, sizeof(text), "[blocked: %.*s %.*s%sfd %" PRIu64 "]",
                  static_cast<int>(reason->call.size()), reason->call.data(),
                  static_cast<int>(kind.size()), kind.data(), kind.empty() ? "" : " ", object);
  } else {
    std::snprintf(text, sizeof(text), "[blocked: %.*s]", static_cast<int>(reason->call.size()),
                  reason->call.data());
  }
  return text;
}

}  // namespace inprof::symbolicate
