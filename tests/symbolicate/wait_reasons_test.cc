#include "convert/wait_reasons.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>

namespace inprof::symbolicate {
namespace {

TEST(WaitReasons, NamesTheCallAndWhatItWaitsOn) {
  EXPECT_EQ(wait_frame_name("x86_64", 202, 0x55d0c0ffee40), "[blocked: futex 0x55d0c0ffee40]");
  EXPECT_EQ(wait_frame_name("aarch64", 98, 0xffff0000a010), "[blocked: futex 0xffff0000a010]");
  EXPECT_EQ(wait_frame_name("x86_64", 0, 5), "[blocked: read fd 5]");
  EXPECT_EQ(wait_frame_name("aarch64", 63, 5), "[blocked: read fd 5]");
  EXPECT_EQ(wait_frame_name("x86_64", 232, 7), "[blocked: epoll_wait fd 7]");
  // With what the descriptor was (DescriptorKind): a pipe, a socket; an epoll set says so already.
  EXPECT_EQ(wait_frame_name("x86_64", 0, 5, 3), "[blocked: read pipe fd 5]");
  EXPECT_EQ(wait_frame_name("x86_64", 45, 4, 2), "[blocked: recvfrom socket fd 4]");
  EXPECT_EQ(wait_frame_name("x86_64", 0, 3, 1), "[blocked: read file fd 3]");
  EXPECT_EQ(wait_frame_name("x86_64", 232, 7, 5), "[blocked: epoll_wait fd 7]");
  EXPECT_EQ(wait_frame_name("x86_64", 0, 9, 200), "[blocked: read fd 9]");  // a kind unknown here
  EXPECT_EQ(wait_frame_name("aarch64", 22, 7), "[blocked: epoll_pwait fd 7]");
  EXPECT_EQ(wait_frame_name("x86_64", 230, 0x7ffd0000), "[blocked: clock_nanosleep]");
  EXPECT_EQ(wait_frame_name("x86_64", 7, 0x7ffd0000), "[blocked: poll]");  // an array: not named
  EXPECT_EQ(wait_frame_name("x86_64", 61, 1234), "[blocked: wait4]");
}

TEST(WaitReasons, AnUnknownCallOrArchitectureIsNamedByItsNumber) {
  EXPECT_EQ(wait_frame_name("x86_64", 4000, 1), "[blocked: system call 4000]");
  EXPECT_EQ(wait_frame_name("riscv64", 98, 1), "[blocked: system call 98]");
  // A descriptor argument that is no descriptor is not shown as one.
  EXPECT_EQ(wait_frame_name("x86_64", 0, uint64_t{1} << 40), "[blocked: read]");
  EXPECT_FALSE(wait_reason("x86_64", 39));  // getpid: nothing a thread waits in
}

#if defined(__x86_64__)
// The table's x86-64 numbers are the kernel's (the host's headers).
TEST(WaitReasons, X86NumbersAreTheKernels) {
  EXPECT_EQ(wait_reason("x86_64", SYS_futex)->call, "futex");
  EXPECT_EQ(wait_reason("x86_64", SYS_read)->call, "read");
  EXPECT_EQ(wait_reason("x86_64", SYS_recvfrom)->call, "recvfrom");
  EXPECT_EQ(wait_reason("x86_64", SYS_epoll_wait)->call, "epoll_wait");
  EXPECT_EQ(wait_reason("x86_64", SYS_epoll_pwait)->call, "epoll_pwait");
  EXPECT_EQ(wait_reason("x86_64", SYS_clock_nanosleep)->call, "clock_nanosleep");
  EXPECT_EQ(wait_reason("x86_64", SYS_accept4)->call, "accept4");
  EXPECT_EQ(wait_reason("x86_64", SYS_waitid)->call, "waitid");
  EXPECT_EQ(wait_reason("x86_64", SYS_futex)->object, WaitObject::kFutex);
  EXPECT_EQ(wait_reason("x86_64", SYS_read)->object, WaitObject::kDescriptor);
}
#endif

}  // namespace
}  // namespace inprof::symbolicate
