// What a module's binary answers on its own, without its debug file or a DWARF reader: the leaf
// fix-up's CFI question from the binary's .eh_frame, and its code bytes (the system-call check,
// syscall_site.h). A dump of a release already symbolized has new leaves the symbol cache has no
// answer for; asking the binary spares opening the module (libdwfl, its DWARF, the inflated debug
// image) just for them. The answers are those of the module's reader (ModuleSymbolizer), which
// asks the same .eh_frame first (cfi_slot.h) and reads the same bytes; where .eh_frame is silent,
// only the reader can tell (it also has the debug file's .debug_frame).
#ifndef INPROF_TOOLS_SYMBOLICATE_BINARY_CODE_H_
#define INPROF_TOOLS_SYMBOLICATE_BINARY_CODE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <utility>

#include "symbolize/debug_file_locator.h"

typedef struct Elf Elf;  // libelf's

namespace inprof::symbolicate {

// The bytes at `vaddr` of the loaded segment (PT_LOAD) that holds all of them, as the file has
// them (what the process had mapped). False where no segment does. Shared by BinaryCode and the
// module's reader, so that both answer alike.
bool read_loaded_code(Elf* elf, uint64_t vaddr, std::span<uint8_t> out);

class BinaryCode {
 public:
  // The module's binary (files.binary) read with libelf. Null when there is none (only a debug
  // file was found), it is not an ELF executable or shared object, or on Windows and for
  // Mach-O modules: their questions go to the module's reader.
  static std::unique_ptr<BinaryCode> open(const ModuleFiles& files);
  virtual ~BinaryCode() = default;
  BinaryCode(const BinaryCode&) = delete;
  BinaryCode& operator=(const BinaryCode&) = delete;

  // ModuleSymbolizer::return_address_slot's answer when .eh_frame covers `vaddr`; nullopt when
  // it does not (ask the reader).
  virtual std::optional<std::optional<unsigned>> return_address_slot(uint64_t vaddr,
                                                                     bool aarch64) = 0;
  // ModuleSymbolizer::read_code's answer (the binary's bytes where it is loaded).
  virtual bool read_code(uint64_t vaddr, std::span<uint8_t> out) = 0;
  // [start, end) of the .eh_frame entry (FDE) covering `vaddr`: one function's code (or a
  // separated part of it, such as a .cold one), known without any symbol. Nullopt where no
  // entry covers it.
  virtual std::optional<std::pair<uint64_t, uint64_t>> function_range(uint64_t vaddr) = 0;

 protected:
  BinaryCode() = default;
};

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_BINARY_CODE_H_
