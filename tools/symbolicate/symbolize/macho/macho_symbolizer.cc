#include "symbolize/macho/macho_symbolizer.h"

#include <utility>
#include <vector>

#include "symbolize/demangle.h"
#include "symbolize/macho/macho_file.h"
#include "symbolize/macho/macho_lines.h"

namespace inprof::symbolicate {
namespace {

class MachOModuleSymbolizer final : public ModuleSymbolizer {
 public:
  MachOModuleSymbolizer(MachOFile file, std::optional<MachOLines> lines)
      : file_(std::move(file)), lines_(std::move(lines)) {
    names_.resize(file_.symbols.size());
  }

  AddressSymbol symbolize(uint64_t vaddr) override {
    AddressSymbol out;
    const MachOSymbol* symbol = file_.symbol_at(vaddr);
    if (!symbol) return out;
    const std::string& name = demangled(static_cast<size_t>(symbol - file_.symbols.data()));
    out.symbol = NativeSymbolInfo{name, symbol->addr, symbol->end - symbol->addr};
    SourceFrame frame{name, "", 0, 0};
    // A line only inside the symbol: lines never name another function's code.
    if (lines_) {
      if (std::optional<MachOLines::Line> line = lines_->find(vaddr)) {
        frame.file = line->file;
        frame.line = line->line;
      }
    }
    out.frames.push_back(std::move(frame));
    return out;
  }

  std::optional<unsigned> return_address_slot(uint64_t, bool) override { return std::nullopt; }
  bool has_dwarf() const override { return lines_.has_value(); }

 private:
  // Mach-O prefixes C and C++ names with '_' ("__ZN4demo4leafEi", "_main").
  const std::string& demangled(size_t i) {
    if (!names_[i]) {
      const std::string& raw = file_.symbols[i].name;
      names_[i] = demangle(raw[0] == '_' ? raw.c_str() + 1 : raw.c_str());
    }
    return *names_[i];
  }

  MachOFile file_;
  std::optional<MachOLines> lines_;
  std::vector<std::optional<std::string>> names_;
};

}  // namespace

std::unique_ptr<ModuleSymbolizer> open_macho_symbolizer(const ModuleFiles& files,
                                                        std::string* why) {
  const std::string& path = files.binary.empty() ? files.debug : files.binary;
  std::optional<MachOFile> file = read_macho_file(path, files.arch, why);
  if (!file) {
    *why = path + ": " + *why;
    return nullptr;
  }
  // The .dSYM's line programs; without them (none found, or unreadable) names only.
  std::optional<MachOLines> lines;
  if (!files.debug.empty()) {
    std::string ignored;
    if (std::optional<MachOFile> dsym = read_macho_file(files.debug, files.arch, &ignored)) {
      lines = MachOLines::read(files.debug, *dsym, &ignored);
    }
  }
  return std::make_unique<MachOModuleSymbolizer>(std::move(*file), std::move(lines));
}

}  // namespace inprof::symbolicate
