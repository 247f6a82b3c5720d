// One row of a CFI table: how to find the CFA and each register's caller value at one address,
// as the .eh_frame instructions leave it (DWARF 5, section 6.4.1).
#ifndef INPROF_LIB_DWARF_CFI_ROW_H_
#define INPROF_LIB_DWARF_CFI_ROW_H_

#include <cstdint>

#include "unwind/arch.h"

namespace inprof::internal {

struct CfiRegister {
  enum class Kind : uint8_t {
    kUndefined,
    kSameValue,
    kOffset,         // saved at CFA + value
    kValOffset,      // is CFA + value
    kRegister,       // in register `value`
    kExpression,     // saved at the address the expression (at `value`, `length` bytes) yields
    kValExpression,  // is the value the expression yields
  };
  Kind kind = Kind::kUndefined;
  int64_t value = 0;
  uint64_t length = 0;
};

struct CfiRow {
  bool cfa_is_expression = false;
  uint64_t cfa_register = 0;  // CFA = register + offset
  int64_t cfa_offset = 0;
  uint64_t cfa_expression = 0;  // or the value of the expression at this address
  uint64_t cfa_expression_length = 0;
  // Only the registers the unwinder tracks; rules for others are parsed and dropped.
  CfiRegister registers[kRegisterCount];
  uint64_t return_address_register = 0;
  bool signal_frame = false;  // from the CIE's "S" augmentation
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_DWARF_CFI_ROW_H_
