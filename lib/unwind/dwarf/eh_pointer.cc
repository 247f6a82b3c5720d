#include "unwind/dwarf/eh_pointer.h"

#include "unwind/dwarf/dwarf_constants.h"

namespace inprof::internal {

int encoded_size(uint8_t encoding) {
  switch (encoding & 0x0f) {
    case DW_EH_PE_absptr:
    case DW_EH_PE_signed:
    case DW_EH_PE_udata8:
    case DW_EH_PE_sdata8:
      return 8;
    case DW_EH_PE_udata2:
    case DW_EH_PE_sdata2:
      return 2;
    case DW_EH_PE_udata4:
    case DW_EH_PE_sdata4:
      return 4;
    default:
      return 0;
  }
}

namespace {

// The raw value in the encoding's format, sign-extended for the signed ones.
bool read_value(MemoryReader& reader, uint8_t format, uint64_t* out) {
  switch (format) {
    case DW_EH_PE_absptr:
    case DW_EH_PE_signed:
    case DW_EH_PE_udata8:
    case DW_EH_PE_sdata8:
      return reader.u64(out);
    case DW_EH_PE_uleb128:
      return reader.uleb(out);
    case DW_EH_PE_sleb128: {
      int64_t v;
      if (!reader.sleb(&v)) return false;
      *out = static_cast<uint64_t>(v);
      return true;
    }
    case DW_EH_PE_udata2:
    case DW_EH_PE_sdata2: {
      uint16_t v;
      if (!reader.u16(&v)) return false;
      *out =
          format == DW_EH_PE_sdata2 ? static_cast<uint64_t>(int64_t{static_cast<int16_t>(v)}) : v;
      return true;
    }
    case DW_EH_PE_udata4:
    case DW_EH_PE_sdata4: {
      uint32_t v;
      if (!reader.u32(&v)) return false;
      *out =
          format == DW_EH_PE_sdata4 ? static_cast<uint64_t>(int64_t{static_cast<int32_t>(v)}) : v;
      return true;
    }
    default:
      reader.fail();
      return false;
  }
}

}  // namespace

bool read_encoded_pointer(MemoryReader& reader, uint8_t encoding, const PointerBases& bases,
                          uint64_t* out) {
  if (encoding == DW_EH_PE_omit) {
    reader.fail();
    return false;
  }
  const uint8_t application = encoding & 0x70;
  if (application == DW_EH_PE_aligned) {
    const uint64_t aligned = (reader.position() + 7) & ~uint64_t{7};
    if (!reader.skip(aligned - reader.position())) return false;
  }
  const uint64_t field = reader.position();
  uint64_t value;
  if (!read_value(reader, encoding & 0x0f, &value)) return false;
  uint64_t base = 0;
  switch (application) {
    case DW_EH_PE_absptr:
    case DW_EH_PE_aligned:
      break;
    case DW_EH_PE_pcrel:
      base = field;
      break;
    case DW_EH_PE_textrel:
      base = bases.text;
      break;
    case DW_EH_PE_datarel:
      base = bases.data;
      break;
    case DW_EH_PE_funcrel:
      base = bases.function;
      break;
    default:
      reader.fail();
      return false;
  }
  if (application != DW_EH_PE_absptr && application != DW_EH_PE_aligned &&
      application != DW_EH_PE_pcrel && base == 0) {
    reader.fail();  // a base we were not given: do not guess
    return false;
  }
  value += base;
  if (encoding & DW_EH_PE_indirect) {
    uint64_t target;
    if (!reader.view().read(value, &target, sizeof(target))) {
      reader.fail();
      return false;
    }
    value = target;
  }
  *out = value;
  return true;
}

}  // namespace inprof::internal
