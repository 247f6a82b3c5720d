// Symbolizes addresses inside one module: function names, inline chains and lines. The seam
// between symbolicate and the platform's debug-information reader: on Linux the module's ELF and
// DWARF read with libdw (elf/dwarf_symbolizer.cc), on Windows DbgHelp
// (windows/dbghelp_symbolizer.cc). Not thread-safe: use one per thread.
#ifndef INPROF_TOOLS_SYMBOLICATE_MODULE_SYMBOLIZER_H_
#define INPROF_TOOLS_SYMBOLICATE_MODULE_SYMBOLIZER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "dump/dump_records.h"
#include "symbolize/debug_file_locator.h"
#include "symbolize/demangle.h"

namespace inprof::symbolicate {

class ModuleIndex;

// One function level at an address: the physical function or one inlined into it.
struct SourceFrame {
  std::string function;    // demangled
  std::string file;        // where the function is declared (or, failing that, the line's file)
  uint32_t decl_line = 0;  // the function's first line; 0 if unknown
  uint32_t line = 0;       // the line executing in this function at the address; 0 if unknown
  // Nonzero when `function`, `file` and `decl_line` are those of one function entry of the debug
  // information, the same for every address of the module that has this key (with DWARF, the
  // DIE's offset): callers may then reuse what they made of them.
  uint64_t function_key = 0;
};

struct NativeSymbolInfo {
  std::string name;    // demangled
  uint64_t vaddr = 0;  // the module's own virtual address of the symbol's start
  std::optional<uint64_t> size;
};

struct AddressSymbol {
  // Outermost (the physical function) first, deepest inlinee last. Empty: nothing known.
  std::vector<SourceFrame> frames;
  std::optional<NativeSymbolInfo> symbol;
};

// Which compilation unit holds each address range of a module, as its module index recorded it
// from the reader's own answers (module_index.h): a reader handed it takes an address's unit
// from it instead of working it out (libdwfl's first look-up reads every unit's ranges: 1 ms of
// a warm run that opens libc for one new unit).
struct KnownUnits {
  struct Range {
    uint64_t addr, length;  // the debug information's addresses: the module's minus `bias`
    uint64_t unit;          // its DIE's offset; 0: not known (the reader decides)
  };
  uint64_t bias = 0;
  std::vector<Range> ranges;  // by address, not overlapping
};

// A module's ELF function symbols as its module index recorded them from a reader's own table
// (module_index.h): one per address (the best ranked), by start, names without a symbol version.
// A reader handed them does not read and sort the symbol table again (python3.11's and libc's:
// 2 ms of a warm run that opens them for a few new units).
struct KnownSymbol {
  uint64_t start;
  uint64_t size;  // 0: unknown, runs to the next symbol
  // As in the symbol table (demangled when used); NUL-terminated, in storage that whoever holds
  // the symbols keeps (ModuleIndex::Module::names).
  std::string_view name;
};
using KnownSymbols = std::vector<KnownSymbol>;

// Whether several symbolizers may work on separate threads at once. DbgHelp's functions are
// single-threaded (its sessions share state): the Windows build symbolizes on one thread.
#if defined(_WIN32)
inline constexpr bool kSymbolizersRunInParallel = false;
#else
inline constexpr bool kSymbolizersRunInParallel = true;
#endif

// Work every handle opened on a module's files would repeat, done once for all of them before
// they open: on Linux, the debug file's compressed DWARF inflated into a shared in-memory copy
// (debug_image.h), its sections inflated on up to `threads` threads at once. Sets
// `debug_image` of the files it helps; leaves the others as they are (their handles read the
// files themselves), and says nothing: any problem with a file is reported when it is opened.
// Nothing to do on Windows.
// The inflated images it keeps for the next run (ModuleFiles::image_cache) are written to the
// cache on threads of their own, which the run need not wait for: the write, its checksum and
// above all its fsync (2-3 ms on a virtual disk) overlap what the run does next.
void prepare_for_handles(const std::vector<ModuleFiles*>& files, unsigned threads);
// Returns once every image prepare_for_handles left to be written is written (or failed to be).
// run_symbolicate calls it before it returns; the process's exit waits for them too.
void wait_for_debug_image_saves();

class ModuleSymbolizer {
 public:
  // Opens the files found for a module (see debug_file_locator.h) with this platform's reader.
  // Returns null, with the reason in `why`, when they cannot be read.
  static std::unique_ptr<ModuleSymbolizer> open(const ModuleFiles& files, std::string* why);
  // Locates the module's files with the default search (recorded path, system directories) first.
  static std::unique_ptr<ModuleSymbolizer> open(const internal::ModuleRecord& module,
                                                std::string* why) {
    std::optional<ModuleFiles> files = locate_module_files(module, LocateOptions{}, why);
    return files ? open(*files, why) : nullptr;
  }
  virtual ~ModuleSymbolizer() = default;
  ModuleSymbolizer(const ModuleSymbolizer&) = delete;
  ModuleSymbolizer& operator=(const ModuleSymbolizer&) = delete;

  // What is known about the code at `vaddr`, an address in the module's own (unrelocated)
  // layout: the ELF virtual address, or the PE's preferred ImageBase + RVA. Cached.
  const AddressSymbol& lookup(uint64_t vaddr) {
    auto it = cache_.find(vaddr);
    if (it != cache_.end()) return it->second;
    return cache_.emplace(vaddr, symbolize(vaddr)).first->second;
  }
  // The same, uncached.
  virtual AddressSymbol symbolize(uint64_t vaddr) = 0;

  // Which unit of the debug information `vaddr` belongs to (with DWARF, its compilation unit),
  // as a key: addresses of different units can be symbolized on different handles without
  // either parsing what the other does. 0 when unknown; the same for every address when the
  // reader cannot tell.
  virtual uint64_t unit_of(uint64_t /*vaddr*/) { return 0; }

  // Where a function that has no frame record at `vaddr` keeps its return address, as a leaf
  // candidate slot (FORMAT.md): on x86-64, if the CFI defines the CFA as rsp + off, the stack
  // slot (off - 8) / 8; on aarch64, if the CFA is sp-based, the link register
  // (internal::kLeafCandidateLinkRegister). Nothing when the CFA is based on the frame pointer
  // (the frame-pointer walk was right), no CFI covers the address, or the reader has no CFI.
  virtual std::optional<unsigned> return_address_slot(uint64_t vaddr, bool aarch64) = 0;

  virtual bool has_dwarf() const = 0;

  // Takes `known` (see KnownUnits) for the units of the addresses it is asked; readers without
  // units ignore it. Only a reader whose own addresses agree (the same bias) uses it.
  virtual void use_known_units(std::shared_ptr<const KnownUnits> /*known*/) {}
  // Takes `known` (see KnownSymbol) as its ELF symbols, if asked before it needs them (before
  // the first address); readers without an ELF symbol table ignore it.
  virtual void use_known_symbols(std::shared_ptr<const KnownSymbols> /*known*/) {}

  // Adds to `index` (module_index.h) what this handle has read: the module-wide part if the
  // index has none, and each compilation unit an address fell in, whole, that it lacks. Only
  // what the index would answer exactly as this reader does. Nothing for readers without one.
  virtual void export_index(ModuleIndex& /*index*/) {}

  // Copies the module's code bytes at [vaddr, vaddr + out.size()) into `out`, from the binary
  // as it is mapped. False when they are not at hand (only a debug file was found, whose code
  // sections are empty; a reader that does not offer them).
  virtual bool read_code(uint64_t /*vaddr*/, std::span<uint8_t> /*out*/) { return false; }

 protected:
  ModuleSymbolizer() = default;

 private:
  std::unordered_map<uint64_t, AddressSymbol> cache_;
};

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_MODULE_SYMBOLIZER_H_
