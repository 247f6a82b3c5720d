// Reads the unwind tables (DWARF CFI) of the modules mapped in this process and turns the row
// that covers an address into an UnwindRule. Implemented per object format under platform/.
//
// Used by the sampler thread only, after the sampled thread has resumed: it may allocate and take
// the loader's lock, but never while any thread is stopped. It never opens a file.
#ifndef INPROF_LIB_DWARF_CFI_PROVIDER_H_
#define INPROF_LIB_DWARF_CFI_PROVIDER_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "sampling/module_lister.h"
#include "unwind/dwarf/unwind_rule.h"

namespace inprof::internal {

class CfiProvider {
 public:
  static std::unique_ptr<CfiProvider> create();
  virtual ~CfiProvider() = default;

  // The modules mapped now. Tables are read lazily, on the first address that needs them.
  virtual void set_modules(const std::vector<ModuleInfo>& modules) = 0;
  // The rule for the absolute address `pc`.
  virtual UnwindRule rule_for(uint64_t pc) = 0;
  // The full rule behind a kExpression UnwindRule; valid until set_modules() drops its module.
  virtual const ExpressionRule& expression(uint32_t index) const = 0;
  // Grows whenever a module goes away, so rules cached under an older value are stale.
  virtual uint32_t generation() const = 0;
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_DWARF_CFI_PROVIDER_H_
