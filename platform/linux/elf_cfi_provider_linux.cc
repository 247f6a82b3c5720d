// CfiProvider for ELF modules, reading each module's .eh_frame_hdr and .eh_frame where the loader
// mapped them (PT_GNU_EH_FRAME) with inprof's own parser (lib/unwind/dwarf/eh_frame.h). No file is
// ever opened: closing a descriptor of a file drops the program's POSIX (fcntl) locks on it, and a
// profiled process must not notice us. No process_vm_readv either (seccomp filters may forbid it).
//
// Each lookup runs inside a dl_iterate_phdr callback: the loader holds its lock there, so a
// concurrent dlclose cannot unmap the tables while they are read. The module is the loaded object
// whose load bias is the ModuleInfo's and whose segments hold the address; its GNU build-id
// (PT_NOTE, in memory) must be the ModuleInfo's where that has one. The vDSO is in the loader's
// list like any library.
//
// Not read any more (they were when libdw opened the files): .debug_frame, which exists only in
// files (code compiled with -fno-asynchronous-unwind-tables has no .eh_frame: its frames fall back
// to frame pointers), and modules the loader does not know (mapped by hand).
#include <elf.h>
#include <link.h>

#include <algorithm>
#include <cstddef>
#include <optional>

#include "loaded_image_linux.h"
#include "plt_unwind_linux.h"
#include "sigreturn_trampoline_linux.h"
#include "unwind/dwarf/cfi_provider.h"
#include "unwind/dwarf/eh_frame.h"
#include "unwind/dwarf/row_reduction.h"

namespace inprof::internal {
namespace {

// A module's readable segments, copied out the way module memory is read (loaded_image_linux.h).
class LoadedModuleView final : public RegionView {
 protected:
  void copy(void* out, const uint8_t* from, size_t size) const override {
    read_image(out, from, size);
  }
};

constexpr unsigned long long kNeverVerified = ~0ull;

struct Module {
  ModuleInfo info;
  // The loader's unload count (dlpi_subs) when the object at this address last showed the
  // module's build-id: while it stays the same, nothing was unloaded and the check holds.
  unsigned long long verified_at_subs = kNeverVerified;
};

bool same_module(const ModuleInfo& a, const ModuleInfo& b) {
  return a.start == b.start && a.path == b.path && a.build_id == b.build_id;
}

// One rule_for() call's question and answer, passed through dl_iterate_phdr.
struct Lookup {
  uint64_t pc;
  Module* module;
  std::vector<ExpressionRule>* expressions;
  UnwindRule rule;
};

// Whether the object is the module asked about: another file loaded where the module was would
// give wrong rules.
bool is_module(const dl_phdr_info* info, size_t size, Module& m) {
  const bool has_subs = size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs);
  if (has_subs && m.verified_at_subs == info->dlpi_subs) return true;
  if (!m.info.build_id.empty() && find_build_id(info) != m.info.build_id) return false;
  if (has_subs) m.verified_at_subs = info->dlpi_subs;
  return true;
}

// The rule for lookup->pc from this object's tables, if it is the module asked about.
int lookup_in_object(dl_phdr_info* info, size_t size, void* data) {
  auto* lookup = static_cast<Lookup*>(data);
  if (info->dlpi_addr != lookup->module->info.load_bias) return 0;
  LoadedModuleView view;
  EhFrameSections sections;
  bool holds_pc = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) ph = program_header(info, i);
    const uint64_t address = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD) {
      holds_pc |= lookup->pc >= address && lookup->pc - address < ph.p_memsz;
      if (ph.p_flags & PF_R) view.add(address, reinterpret_cast<const void*>(address), ph.p_memsz);
    } else if (ph.p_type == PT_GNU_EH_FRAME) {
      sections.hdr = address;
      sections.hdr_size = ph.p_memsz;
    }
  }
  if (!holds_pc) return 0;
  if (!is_module(info, size, *lookup->module)) return 1;
  std::optional<CfiRow> row;
  if (sections.hdr != 0) row = find_cfi_row(view, sections, lookup->pc);
  if (row) {
    lookup->rule = reduce_row(*row, view, lookup->expressions);
  } else if (auto stub = plt_rule(view, lookup->pc)) {
    lookup->rule = *stub;
  }
  return 1;
}

class ElfCfiProvider final : public CfiProvider {
 public:
  void set_modules(const std::vector<ModuleInfo>& infos) override {
    const bool removed = std::any_of(modules_.begin(), modules_.end(), [&](const Module& m) {
      return std::none_of(infos.begin(), infos.end(),
                          [&](const ModuleInfo& i) { return same_module(i, m.info); });
    });
    std::vector<Module> next;
    next.reserve(infos.size());
    for (const ModuleInfo& info : infos) next.push_back(Module{info});
    std::sort(next.begin(), next.end(),
              [](const Module& a, const Module& b) { return a.info.start < b.info.start; });
    modules_ = std::move(next);
    if (removed) ++generation_;  // rules of unloaded code must not be reused at new addresses
  }

  UnwindRule rule_for(uint64_t pc) override {
    if (is_sigreturn_trampoline(pc)) return sigreturn_rule();
    Module* m = find(pc);
    if (m == nullptr) return {};
    Lookup lookup{pc, m, &expressions_, UnwindRule{}};
    dl_iterate_phdr(lookup_in_object, &lookup);
    return lookup.rule;
  }

  const ExpressionRule& expression(uint32_t index) const override { return expressions_[index]; }
  uint32_t generation() const override { return generation_; }

 private:
  Module* find(uint64_t pc) {
    auto it = std::upper_bound(modules_.begin(), modules_.end(), pc,
                               [](uint64_t a, const Module& m) { return a < m.info.start; });
    if (it == modules_.begin()) return nullptr;
    --it;
    return pc < it->info.end ? &*it : nullptr;
  }

  // One shared expression for every signal trampoline the CFI does not describe fully.
  UnwindRule sigreturn_rule() {
    if (!sigreturn_index_) {
      sigreturn_index_ = static_cast<uint32_t>(expressions_.size());
      expressions_.push_back(sigreturn_trampoline_rule());
    }
    UnwindRule rule;
    rule.kind = RuleKind::kExpression;
    rule.signal_frame = true;
    rule.expression_index = *sigreturn_index_;
    return rule;
  }

  std::vector<Module> modules_;
  // Append-only: a cached rule's index stays valid. Expression rules are rare (PLT stubs, signal
  // trampolines, realigned frames), so the table stays small.
  std::vector<ExpressionRule> expressions_;
  std::optional<uint32_t> sigreturn_index_;
  uint32_t generation_ = 0;
};

}  // namespace

std::unique_ptr<CfiProvider> CfiProvider::create() { return std::make_unique<ElfCfiProvider>(); }

}  // namespace inprof::internal
