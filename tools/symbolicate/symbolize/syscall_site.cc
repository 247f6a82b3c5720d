#include "symbolize/syscall_site.h"

namespace inprof::symbolicate {

size_t syscall_instruction_size(std::string_view arch) {
  if (arch == "x86_64") return 2;
  if (arch == "aarch64") return 4;
  return 0;
}

bool is_syscall_instruction(std::string_view arch, std::span<const uint8_t> before) {
  if (before.size() != syscall_instruction_size(arch) || before.empty()) return false;
  if (arch == "x86_64") return before[0] == 0x0f && before[1] == 0x05;  // syscall
  // svc #imm16: 0xd4000001 | imm16 << 5, little-endian.
  const uint32_t insn = uint32_t(before[0]) | uint32_t(before[1]) << 8 | uint32_t(before[2]) << 16 |
                        uint32_t(before[3]) << 24;
  return (insn & 0xffe0001f) == 0xd4000001;
}

}  // namespace inprof::symbolicate
