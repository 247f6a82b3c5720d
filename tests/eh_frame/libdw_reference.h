// The rules libdw gives for a module's .eh_frame, reduced the way inprof's provider reduced them
// while it used libdw (the reference the in-memory parser is compared against).
#ifndef INPROF_TESTS_EH_FRAME_LIBDW_REFERENCE_H_
#define INPROF_TESTS_EH_FRAME_LIBDW_REFERENCE_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "unwind/dwarf/unwind_rule.h"

namespace inprof::internal {

class LibdwReference {
 public:
  LibdwReference();
  ~LibdwReference();
  LibdwReference(const LibdwReference&) = delete;
  LibdwReference& operator=(const LibdwReference&) = delete;

  bool open_file(const std::string& path);
  bool open_memory(std::span<const uint8_t> image);
  // The rule at an ELF (unbiased) address; expression rules are appended to `expressions`.
  UnwindRule rule(uint64_t elf_address, std::vector<ExpressionRule>* expressions);

 private:
  struct State;
  State* state_;
};

}  // namespace inprof::internal

#endif  // INPROF_TESTS_EH_FRAME_LIBDW_REFERENCE_H_
