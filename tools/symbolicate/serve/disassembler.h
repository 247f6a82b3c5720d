// Machine code to text for the assembly view (/asm/v1): Capstone, Debian's libcapstone, loaded on
// first use.
#ifndef INPROF_TOOLS_SYMBOLICATE_SERVE_DISASSEMBLER_H_
#define INPROF_TOOLS_SYMBOLICATE_SERVE_DISASSEMBLER_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace inprof::symbolicate {

struct Instruction {
  uint32_t offset = 0;  // from the start of the bytes given
  std::string text;     // "mov rax, qword ptr [rbp - 8]"
};

struct Disassembly {
  std::string syntax;  // "Intel" (x86-64) or "ARM" (aarch64)
  std::vector<Instruction> instructions;
};

// Decodes `code`, which sits at `address` (for the targets of relative jumps and calls), for
// `arch` ("x86_64" or "aarch64"). Stops at the first byte sequence that is no instruction.
// nullopt, with the reason in `why`, for another architecture or when Capstone cannot start.
std::optional<Disassembly> disassemble(const std::string& arch, std::span<const uint8_t> code,
                                       uint64_t address, std::string* why);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_SERVE_DISASSEMBLER_H_
