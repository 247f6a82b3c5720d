#include "serve/disassembler.h"

#if defined(INPROF_HAVE_CAPSTONE)
#include <capstone/capstone.h>
#endif

namespace inprof::symbolicate {

#if !defined(INPROF_HAVE_CAPSTONE)
std::optional<Disassembly> disassemble(const std::string&, std::span<const uint8_t>, uint64_t,
                                       std::string* why) {
  *why = "symbolicate was built without Capstone (libcapstone-dev): no disassembly";
  return std::nullopt;
}
#else

std::optional<Disassembly> disassemble(const std::string& arch, std::span<const uint8_t> code,
                                       uint64_t address, std::string* why) {
  cs_arch cs_architecture;
  cs_mode mode;
  Disassembly result;
  if (arch == "x86_64") {
    cs_architecture = CS_ARCH_X86;
    mode = CS_MODE_64;
    result.syntax = "Intel";
  } else if (arch == "aarch64") {
    cs_architecture = CS_ARCH_ARM64;
    mode = CS_MODE_ARM;
    result.syntax = "ARM";
  } else {
    *why = "no disassembler for architecture '" + arch + "'";
    return std::nullopt;
  }
  csh handle;
  if (cs_open(cs_architecture, mode, &handle) != CS_ERR_OK) {
    *why = "Capstone cannot disassemble " + arch;
    return std::nullopt;
  }
  cs_insn* insn = cs_malloc(handle);
  const uint8_t* bytes = code.data();
  size_t size = code.size();
  uint64_t at = address;
  while (size > 0 && cs_disasm_iter(handle, &bytes, &size, &at, insn)) {
    std::string text = insn->mnemonic;
    if (insn->op_str[0]) {
      text += ' ';
      text += insn->op_str;
    }
    result.instructions.push_back({static_cast<uint32_t>(insn->address - address), text});
  }
  cs_free(insn, 1);
  cs_close(&handle);
  return result;
}
#endif

}  // namespace inprof::symbolicate
