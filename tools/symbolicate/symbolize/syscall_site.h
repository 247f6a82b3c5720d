// Whether a sampled leaf address is where a thread waits in the kernel: right after a system
// call instruction. A thread sampled there that used little CPU since its previous sample was
// blocked (futex, poll, nanosleep, read of a pipe, ...); one sampled anywhere else without CPU
// time was runnable but waiting for a CPU, which is not idle.
#ifndef INPROF_TOOLS_SYMBOLICATE_SYSCALL_SITE_H_
#define INPROF_TOOLS_SYMBOLICATE_SYSCALL_SITE_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace inprof::symbolicate {

// The size of the system call instruction on `arch` ("x86_64", "aarch64"); 0 for others.
size_t syscall_instruction_size(std::string_view arch);

// True if `before`, the syscall_instruction_size(arch) bytes that end at the leaf address, are a
// system call instruction (x86-64: syscall; aarch64: svc).
bool is_syscall_instruction(std::string_view arch, std::span<const uint8_t> before);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_SYSCALL_SITE_H_
