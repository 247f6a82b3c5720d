// The Windows build's ModuleSymbolizer: DbgHelp. Each symbolizer is a DbgHelp session of its own
// (SymInitialize with a unique value instead of a process handle, which DbgHelp allows when it
// is not asked to invade a process) holding the one module, loaded at its preferred ImageBase so
// that the addresses symbolicate passes (PE virtual addresses) are DbgHelp's. DbgHelp reads PDBs
// (MSVC) and, Wine's, MinGW's DWARF 4 from the PE. Inline frames come from the inline-trace
// functions (DbgHelp 6.2 and later, Wine 7 and later), looked up at run time.
//
// Every DbgHelp function is single-threaded, whatever the session. The Windows build symbolizes
// on one thread (kSymbolizersRunInParallel); all calls still hold one lock, so that no caller
// can break that by accident.

// <windows.h> must come before <dbghelp.h>.
// clang-format off
#include <windows.h>
#include <dbghelp.h>
// clang-format on

#include <atomic>
#include <mutex>

#include "pe_file.h"
#include "symbolize/module_symbolizer.h"
#include "text_windows.h"

namespace inprof::symbolicate {
namespace {

std::mutex& dbghelp_lock() {
  static std::mutex lock;
  return lock;
}

// Not in MinGW-w64 10's <dbghelp.h>.
using AddrIncludeInlineTraceFn = DWORD(WINAPI*)(HANDLE, DWORD64);
using QueryInlineTraceFn = BOOL(WINAPI*)(HANDLE, DWORD64, DWORD, DWORD64, DWORD64, LPDWORD,
                                         LPDWORD);
using FromInlineContextWFn = BOOL(WINAPI*)(HANDLE, DWORD64, ULONG, PDWORD64, PSYMBOL_INFOW);
using GetLineFromInlineContextWFn = BOOL(WINAPI*)(HANDLE, DWORD64, ULONG, DWORD64, PDWORD,
                                                  PIMAGEHLP_LINEW64);

struct InlineApi {
  AddrIncludeInlineTraceFn include = nullptr;
  QueryInlineTraceFn query = nullptr;
  FromInlineContextWFn symbol = nullptr;
  GetLineFromInlineContextWFn line = nullptr;
  bool usable() const { return include && query && symbol && line; }
};

template <typename Fn>
Fn lookup_function(HMODULE dll, const char* name) {
  return reinterpret_cast<Fn>(reinterpret_cast<void*>(GetProcAddress(dll, name)));
}

const InlineApi& inline_api() {
  static const InlineApi api = [] {
    InlineApi a;
    if (HMODULE dll = GetModuleHandleW(L"dbghelp.dll")) {
      a.include = lookup_function<AddrIncludeInlineTraceFn>(dll, "SymAddrIncludeInlineTrace");
      a.query = lookup_function<QueryInlineTraceFn>(dll, "SymQueryInlineTrace");
      a.symbol = lookup_function<FromInlineContextWFn>(dll, "SymFromInlineContextW");
      a.line = lookup_function<GetLineFromInlineContextWFn>(dll, "SymGetLineFromInlineContextW");
    }
    return a;
  }();
  return api;
}

std::string error_text(const char* what) {
  return std::string(what) + " failed (Windows error " + std::to_string(GetLastError()) + ")";
}

// SYMBOL_INFOW with room for a long (C++) name.
struct SymbolBuffer {
  SymbolBuffer() {
    info.SizeOfStruct = sizeof(SYMBOL_INFOW);
    info.MaxNameLen = kMaxName;
  }
  std::string name() const {
    std::string text = internal::to_utf8(info.Name, static_cast<int>(info.NameLen));
    // Names from a COFF symbol table or exports may still be mangled.
    return text.compare(0, 2, "_Z") == 0 ? demangle(text.c_str()) : text;
  }
  static constexpr ULONG kMaxName = 2048;
  SYMBOL_INFOW info{};
  WCHAR room[kMaxName];
};

struct LineInfo {
  std::string file;
  uint32_t line = 0;
};

LineInfo to_line(const IMAGEHLP_LINEW64& line) {
  LineInfo out;
  if (line.FileName) out.file = internal::to_utf8(line.FileName);
  out.line = line.LineNumber;
  return out;
}

class DbgHelpSymbolizer final : public ModuleSymbolizer {
 public:
  DbgHelpSymbolizer(HANDLE session, bool has_debug_info)
      : session_(session), has_debug_info_(has_debug_info) {}
  // The session stays until the process exits: Wine 8's SymUnloadModule64 (and so SymCleanup)
  // frees a bad pointer for MinGW modules now and then (pdb_module_remove) and crashes.
  // symbolicate opens one session per module and exits when done.
  ~DbgHelpSymbolizer() override = default;

  AddressSymbol symbolize(uint64_t vaddr) override;
  // No CFI here: the Windows sampler unwinds with RtlVirtualUnwind, which needs no leaf fix-up.
  std::optional<unsigned> return_address_slot(uint64_t, bool) override { return std::nullopt; }
  bool has_dwarf() const override { return has_debug_info_; }

 private:
  std::optional<LineInfo> line_at(DWORD64 address) {
    IMAGEHLP_LINEW64 line{};
    line.SizeOfStruct = sizeof line;
    DWORD displacement = 0;
    if (!SymGetLineFromAddrW64(session_, address, &displacement, &line)) return std::nullopt;
    return to_line(line);
  }

  HANDLE session_;
  bool has_debug_info_;
};

AddressSymbol DbgHelpSymbolizer::symbolize(uint64_t vaddr) {
  std::lock_guard<std::mutex> hold(dbghelp_lock());
  AddressSymbol out;
  SymbolBuffer symbol;
  DWORD64 displacement = 0;
  if (!SymFromAddrW(session_, vaddr, &displacement, &symbol.info)) return out;
  NativeSymbolInfo native{symbol.name(), symbol.info.Address, std::nullopt};
  if (symbol.info.Size) native.size = symbol.info.Size;

  // The physical function: where it starts stands for its declaration.
  SourceFrame physical{native.name, "", 0, 0};
  if (std::optional<LineInfo> start = line_at(symbol.info.Address)) {
    physical.file = start->file;
    physical.decl_line = start->line;
  }
  if (std::optional<LineInfo> here = line_at(vaddr)) {
    if (physical.file.empty()) physical.file = here->file;
    physical.line = here->line;
  }
  out.frames.push_back(std::move(physical));
  out.symbol = std::move(native);

  // Inlined levels: contexts first (innermost) to first + count - 1 (outermost).
  const InlineApi& api = inline_api();
  const DWORD count = api.usable() ? api.include(session_, vaddr) : 0;
  DWORD first = 0, frame_index = 0;
  if (count == 0 || !api.query(session_, vaddr, 0, vaddr, vaddr, &first, &frame_index)) return out;
  for (DWORD k = count; k-- > 0;) {
    SymbolBuffer inlined;
    DWORD64 inline_displacement = 0;
    if (!api.symbol(session_, vaddr, first + k, &inline_displacement, &inlined.info)) break;
    SourceFrame frame{inlined.name(), "", 0, 0};
    IMAGEHLP_LINEW64 line{};
    line.SizeOfStruct = sizeof line;
    DWORD line_displacement = 0;
    if (api.line(session_, vaddr, first + k, 0, &line_displacement, &line)) {
      LineInfo l = to_line(line);
      frame.file = l.file;
      frame.line = l.line;
    }
    out.frames.push_back(std::move(frame));
  }
  return out;
}

}  // namespace

// DbgHelp reads the PE and its DWARF as they are.
void prepare_for_handles(const std::vector<ModuleFiles*>&, unsigned) {}
void wait_for_debug_image_saves() {}

std::unique_ptr<ModuleSymbolizer> ModuleSymbolizer::open(const ModuleFiles& files,
                                                         std::string* why) {
  std::optional<PeFileInfo> pe = inspect_pe_file(files.binary, why);
  if (!pe) return nullptr;
  std::lock_guard<std::mutex> hold(dbghelp_lock());
  static const bool options_set = [] {
    // Demangled names, lines, no dialogs, and never a PDB whose GUID and age differ.
    SymSetOptions(SYMOPT_UNDNAME | SYMOPT_LOAD_LINES | SYMOPT_FAIL_CRITICAL_ERRORS |
                  SYMOPT_NO_PROMPTS | SYMOPT_EXACT_SYMBOLS);
    return true;
  }();
  (void)options_set;
  // A session per symbolizer: any unique value serves as its "process" handle.
  static std::atomic<uintptr_t> next_session{0x10000};
  const auto session = reinterpret_cast<HANDLE>(next_session.fetch_add(4));
  if (!SymInitializeW(session, nullptr, FALSE)) {
    *why = error_text("DbgHelp SymInitialize");
    return nullptr;
  }
  const std::wstring path = internal::to_wide(files.binary);
  const DWORD64 base = SymLoadModuleExW(session, nullptr, path.c_str(), nullptr, pe->image_base,
                                        pe->image_size, nullptr, 0);
  if (base == 0) {
    *why = error_text("DbgHelp SymLoadModuleEx");
    SymCleanup(session);
    return nullptr;
  }
  IMAGEHLP_MODULEW64 module{};
  module.SizeOfStruct = sizeof module;
  bool has_debug_info = false;
  if (SymGetModuleInfoW64(session, base, &module)) {
    has_debug_info = module.SymType == SymPdb || module.SymType == SymDia ||
                     module.SymType == SymCv || module.SymType == SymDeferred;
  }
  return std::make_unique<DbgHelpSymbolizer>(session, has_debug_info);
}

}  // namespace inprof::symbolicate
