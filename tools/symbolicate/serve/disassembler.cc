#include "serve/disassembler.h"

#if defined(INPROF_HAVE_CAPSTONE)
#include <capstone/capstone.h>
#include <dlfcn.h>
#endif

namespace inprof::symbolicate {

#if !defined(INPROF_HAVE_CAPSTONE)
std::optional<Disassembly> disassemble(const std::string&, std::span<const uint8_t>, uint64_t,
                                       std::string* why) {
  *why = "symbolicate was built without Capstone (libcapstone-dev): no disassembly";
  return std::nullopt;
}
#else

namespace {

// Capstone, loaded when first needed (CMakeLists.txt says why it is not linked).
struct Capstone {
  decltype(&cs_open) open = nullptr;
  decltype(&cs_malloc) malloc = nullptr;
  decltype(&cs_disasm_iter) disasm_iter = nullptr;
  decltype(&cs_free) free = nullptr;
  decltype(&cs_close) close = nullptr;
  bool loaded() const { return open && malloc && disasm_iter && free && close; }
};

template <typename F>
void bind(void* library, const char* name, F* f) {
  *f = reinterpret_cast<F>(dlsym(library, name));
}

// Null when the library cannot be loaded (removed since the build).
const Capstone* capstone() {
  static const Capstone loaded = [] {
    Capstone c;
    void* library = dlopen(INPROF_CAPSTONE_NAME, RTLD_NOW | RTLD_LOCAL);
    if (!library) library = dlopen(INPROF_CAPSTONE_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!library) return c;  // kept loaded for the process's life once it is
    bind(library, "cs_open", &c.open);
    bind(library, "cs_malloc", &c.malloc);
    bind(library, "cs_disasm_iter", &c.disasm_iter);
    bind(library, "cs_free", &c.free);
    bind(library, "cs_close", &c.close);
    return c;
  }();
  return loaded.loaded() ? &loaded : nullptr;
}

}  // namespace

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
  const Capstone* cs = capstone();
  if (!cs) {
    *why = std::string("cannot load Capstone (") + INPROF_CAPSTONE_NAME + "): no disassembly";
    return std::nullopt;
  }
  csh handle;
  if (cs->open(cs_architecture, mode, &handle) != CS_ERR_OK) {
    *why = "Capstone cannot disassemble " + arch;
    return std::nullopt;
  }
  cs_insn* insn = cs->malloc(handle);
  const uint8_t* bytes = code.data();
  size_t size = code.size();
  uint64_t at = address;
  while (size > 0 && cs->disasm_iter(handle, &bytes, &size, &at, insn)) {
    std::string text = insn->mnemonic;
    if (insn->op_str[0]) {
      text += ' ';
      text += insn->op_str;
    }
    result.instructions.push_back({static_cast<uint32_t>(insn->address - address), text});
  }
  cs->free(insn, 1);
  cs->close(&handle);
  return result;
}
#endif

}  // namespace inprof::symbolicate
