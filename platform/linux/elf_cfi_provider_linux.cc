// CfiProvider for ELF modules, with libdw reading .eh_frame (or .debug_frame). A module's file is
// opened on the first address that needs it and used only if its GNU build-id is the one mapped;
// the vDSO, which has no file, is read from memory.
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "dump/dump_records.h"
#include "dwarf/cfi_provider.h"
#include "plt_unwind_linux.h"
#include "sigreturn_trampoline_linux.h"

namespace inprof::internal {
namespace {

struct Module {
  ModuleInfo info;
  bool opened = false;
  int fd = -1;
  Elf* elf = nullptr;
  std::vector<uint8_t> image;     // the vDSO's bytes, which `elf` reads
  Dwarf_CFI* eh_frame = nullptr;  // from .eh_frame: what the compiler emits for unwinding
  Dwarf* dwarf = nullptr;         // only for .debug_frame, when .eh_frame lacks the address
  Dwarf_CFI* debug_frame = nullptr;
  uint64_t plt_start = 0, plt_end = 0;  // .plt (ELF addresses), for stubs without CFI
  std::vector<uint32_t> expressions;    // indices this module owns in the provider's table

  void close() {
    if (dwarf) dwarf_end(dwarf);
    if (eh_frame) dwarf_cfi_end(eh_frame);
    if (elf) elf_end(elf);
    if (fd >= 0) ::close(fd);
    dwarf = nullptr;
    eh_frame = nullptr;
    debug_frame = nullptr;
    elf = nullptr;
    fd = -1;
  }
};

bool same_module(const ModuleInfo& a, const ModuleInfo& b) {
  return a.start == b.start && a.path == b.path && a.build_id == b.build_id;
}

std::vector<ExprOp> convert(const Dwarf_Op* ops, size_t n) {
  std::vector<ExprOp> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = ExprOp{ops[i].atom, ops[i].number, ops[i].number2};
  return out;
}

// Matches "DW_OP_call_frame_cfa [, DW_OP_plus_uconst k]": a slot at CFA + k.
bool cfa_slot(const Dwarf_Op* ops, size_t n, int32_t* offset) {
  if (n < 1 || ops[0].atom != DW_OP_call_frame_cfa) return false;
  if (n == 1) {
    *offset = 0;
    return true;
  }
  if (n == 2 && ops[1].atom == DW_OP_plus_uconst) {
    auto k = static_cast<int64_t>(ops[1].number);
    if (k < INT32_MIN || k > INT32_MAX) return false;
    *offset = static_cast<int32_t>(k);
    return true;
  }
  return false;
}

class ElfCfiProvider final : public CfiProvider {
 public:
  ElfCfiProvider() { elf_version(EV_CURRENT); }
  ~ElfCfiProvider() override {
    for (auto& m : modules_) m.close();
  }

  void set_modules(const std::vector<ModuleInfo>& infos) override {
    std::vector<Module> next;
    next.reserve(infos.size());
    bool removed = false;
    for (auto& m : modules_) {
      bool kept = std::any_of(infos.begin(), infos.end(),
                              [&](const ModuleInfo& i) { return same_module(i, m.info); });
      if (!kept) {
        m.close();
        removed = true;
      }
    }
    for (const ModuleInfo& info : infos) {
      auto it = std::find_if(modules_.begin(), modules_.end(),
                             [&](const Module& m) { return same_module(info, m.info); });
      if (it != modules_.end()) {
        next.push_back(std::move(*it));
        it->fd = -1;
        it->elf = nullptr;
        it->eh_frame = nullptr;
        it->dwarf = nullptr;
      } else {
        Module m;
        m.info = info;
        next.push_back(std::move(m));
      }
    }
    std::sort(next.begin(), next.end(),
              [](const Module& a, const Module& b) { return a.info.start < b.info.start; });
    modules_ = std::move(next);
    if (removed) ++generation_;  // rules of unloaded code must not be reused at new addresses
  }

  UnwindRule rule_for(uint64_t pc) override {
    if (is_sigreturn_trampoline(pc)) return sigreturn_rule();
    Module* m = find(pc);
    if (m == nullptr) return {};
    if (!m->opened) open(*m);
    const uint64_t elf_address = pc - m->info.load_bias;
    Dwarf_Frame* frame = nullptr;
    if (!(m->eh_frame && dwarf_cfi_addrframe(m->eh_frame, elf_address, &frame) == 0) &&
        !(m->debug_frame && dwarf_cfi_addrframe(m->debug_frame, elf_address, &frame) == 0)) {
      if (elf_address >= m->plt_start && elf_address < m->plt_end) {
        if (auto stub = plt_rule(elf_address - m->plt_start)) return *stub;
      }
      return {};
    }
    UnwindRule rule = reduce(*m, frame);
    std::free(frame);
    return rule;
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

  void open(Module& m) {
    m.opened = true;
    if (m.info.flags & kModuleVdso) {
      // No file: copy the image (the kernel fails cleanly rather than faulting) and read that.
      m.image.resize(m.info.end - m.info.start);
      iovec local{m.image.data(), m.image.size()};
      iovec remote{reinterpret_cast<void*>(m.info.start), m.image.size()};
      if (syscall(SYS_process_vm_readv, getpid(), &local, 1, &remote, 1, 0) !=
          static_cast<long>(m.image.size())) {
        return;
      }
      m.elf = elf_memory(reinterpret_cast<char*>(m.image.data()), m.image.size());
    } else {
      // O_NONBLOCK: a FIFO put where a module was must not hold the sampler (fstat refuses it).
      m.fd = ::open(m.info.path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
      struct stat st;
      if (m.fd < 0 || fstat(m.fd, &st) != 0 || !S_ISREG(st.st_mode)) return;
      m.elf = elf_begin(m.fd, ELF_C_READ_MMAP, nullptr);
      // The whole file is mapped now: no descriptor is kept per module (a program with many
      // libraries keeps all of its descriptors).
      if (m.elf) elf_cntl(m.elf, ELF_C_FDDONE);
      ::close(m.fd);
      m.fd = -1;
    }
    if (m.elf == nullptr) return;
    if (!m.info.build_id.empty()) {
      // A file replaced on disk since it was loaded would give wrong rules: use none.
      const void* id = nullptr;
      ssize_t n = dwelf_elf_gnu_build_id(m.elf, &id);
      if (n != static_cast<ssize_t>(m.info.build_id.size()) ||
          std::memcmp(id, m.info.build_id.data(), m.info.build_id.size()) != 0) {
        return;
      }
    }
    find_plt(m);
    m.eh_frame = dwarf_getcfi_elf(m.elf);
    m.dwarf = dwarf_begin_elf(m.elf, DWARF_C_READ, nullptr);
    if (m.dwarf) m.debug_frame = dwarf_getcfi(m.dwarf);
  }

  static void find_plt(Module& m) {
    size_t names = 0;
    if (elf_getshdrstrndx(m.elf, &names) != 0) return;
    for (Elf_Scn* scn = elf_nextscn(m.elf, nullptr); scn; scn = elf_nextscn(m.elf, scn)) {
      GElf_Shdr header;
      if (gelf_getshdr(scn, &header) == nullptr) continue;
      const char* name = elf_strptr(m.elf, names, header.sh_name);
      if (name && std::strcmp(name, ".plt") == 0) {
        m.plt_start = header.sh_addr;
        m.plt_end = header.sh_addr + header.sh_size;
        return;
      }
    }
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

  UnwindRule reduce(Module& m, Dwarf_Frame* frame) {
    UnwindRule rule;
    bool signal_frame = false;
    const int ra_register = dwarf_frame_info(frame, nullptr, nullptr, &signal_frame);
    rule.signal_frame = signal_frame;
    if (ra_register < 0 || ra_register >= kRegisterCount) return rule;  // kMissing

    Dwarf_Op* cfa_ops = nullptr;
    size_t cfa_count = 0;
    if (dwarf_frame_cfa(frame, &cfa_ops, &cfa_count) != 0 || cfa_count == 0) return rule;

    Dwarf_Op ra_mem[3];
    Dwarf_Op* ra_ops = nullptr;
    size_t ra_count = 0;
    if (dwarf_frame_register(frame, ra_register, ra_mem, &ra_ops, &ra_count) != 0) return rule;
    if (ra_count == 0 && ra_ops != nullptr) {
      rule.kind = RuleKind::kEndOfStack;  // "undefined": nothing called this frame
      return rule;
    }

    // The simple shape: CFA = SP/FP + k, return address in a CFA slot (or still in LR), FP
    // unchanged or in a slot.
    if (!signal_frame && ra_register == kRegReturnAddress && cfa_count == 1) {
      const Dwarf_Op& c = cfa_ops[0];
      int cfa_register = -1;
      int64_t cfa_offset = 0;
      if (c.atom == DW_OP_bregx) {
        cfa_register = static_cast<int>(c.number);
        cfa_offset = static_cast<int64_t>(c.number2);
      } else if (c.atom >= DW_OP_breg0 && c.atom <= DW_OP_breg31) {
        cfa_register = c.atom - DW_OP_breg0;
        cfa_offset = static_cast<int64_t>(c.number);
      }
      Dwarf_Op fp_mem[3];
      Dwarf_Op* fp_ops = nullptr;
      size_t fp_count = 0;
      int32_t ra_offset = 0, fp_offset = 0;
      const bool ra_in_lr = kHasLinkRegister && ra_count == 0 && ra_ops == nullptr;
      if ((cfa_register == kRegSp || cfa_register == kRegFp) && cfa_offset >= INT32_MIN &&
          cfa_offset <= INT32_MAX &&
          (ra_in_lr || (ra_ops != nullptr && cfa_slot(ra_ops, ra_count, &ra_offset))) &&
          dwarf_frame_register(frame, kRegFp, fp_mem, &fp_ops, &fp_count) == 0) {
        const bool fp_same = fp_count == 0 && fp_ops == nullptr;
        const bool fp_in_slot = fp_ops != nullptr && cfa_slot(fp_ops, fp_count, &fp_offset);
        if (fp_same || fp_in_slot) {
          rule.kind = RuleKind::kSimple;
          rule.cfa_register = static_cast<uint8_t>(cfa_register);
          rule.cfa_offset = static_cast<int32_t>(cfa_offset);
          rule.ra_offset = ra_offset;
          rule.ra_in_lr = ra_in_lr;
          rule.fp_saved = fp_in_slot;
          rule.fp_offset = fp_offset;
          return rule;
        }
      }
    }

    // Everything else keeps its expressions.
    ExpressionRule full;
    full.cfa = convert(cfa_ops, cfa_count);
    full.return_address_register = ra_register;
    full.signal_frame = signal_frame;
    for (int r = 0; r < kRegisterCount; ++r) {
      Dwarf_Op mem[3];
      Dwarf_Op* ops = nullptr;
      size_t n = 0;
      RegisterRule& rr = full.registers[r];
      if (dwarf_frame_register(frame, r, mem, &ops, &n) != 0) {
        rr.kind = RegisterRule::Kind::kUndefined;
      } else if (n == 0) {
        rr.kind = ops == nullptr ? RegisterRule::Kind::kSame : RegisterRule::Kind::kUndefined;
      } else if (ops[n - 1].atom == DW_OP_stack_value) {
        rr.kind = RegisterRule::Kind::kValue;
        rr.ops = convert(ops, n - 1);
      } else {
        rr.kind = RegisterRule::Kind::kAddress;
        rr.ops = convert(ops, n);
      }
    }
    rule.kind = RuleKind::kExpression;
    rule.expression_index = static_cast<uint32_t>(expressions_.size());
    expressions_.push_back(std::move(full));
    m.expressions.push_back(rule.expression_index);
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
