#include "unwind/dwarf/eh_frame.h"

#include "unwind/dwarf/dwarf_constants.h"

namespace inprof::internal {
namespace {

// A CIE or FDE's frame: its length and id (0 for a CIE, else the distance back to the CIE).
struct Record {
  bool terminator = false;
  uint64_t id_field = 0;  // where the id is
  uint64_t end = 0;       // one past the record
  uint32_t id = 0;
};

bool read_record(const MemoryView& view, uint64_t address, Record* rec) {
  MemoryReader r(view, address, UINT64_MAX);
  uint32_t length32;
  if (!r.u32(&length32)) return false;
  if (length32 == 0) {
    rec->terminator = true;
    rec->end = r.position();
    return true;
  }
  uint64_t length = length32;
  if (length32 == 0xffffffff && !r.u64(&length)) return false;  // the 64-bit format
  rec->terminator = false;
  rec->id_field = r.position();
  if (length < 4 || length > UINT64_MAX - rec->id_field) return false;
  rec->end = rec->id_field + length;
  return r.u32(&rec->id);
}

// Reads a pointer only to step over it (a personality routine's: never followed).
bool skip_encoded(MemoryReader& r, uint8_t encoding) {
  uint8_t format = encoding & 0x0f;
  if ((encoding & 0x70) == DW_EH_PE_aligned) format |= DW_EH_PE_aligned;
  uint64_t ignored;
  return read_encoded_pointer(r, format, PointerBases{}, &ignored);
}

// The augmentation data of a "z" CIE, as far as we know its letters.
bool parse_augmentation(MemoryReader& r, const char* letters, CieInfo* cie) {
  uint64_t length;
  if (!r.uleb(&length) || length > r.end() - r.position()) return false;
  const uint64_t data_end = r.position() + length;
  for (const char* a = letters; *a != '\0'; ++a) {
    uint8_t encoding;
    if (*a == 'R') {
      if (!r.u8(&cie->fde_encoding)) return false;
    } else if (*a == 'L') {
      if (!r.u8(&encoding)) return false;  // the LSDA's encoding: FDEs' data, skipped whole
    } else if (*a == 'P') {
      if (!r.u8(&encoding) || !skip_encoded(r, encoding)) return false;
    } else if (*a == 'S') {
      cie->signal_frame = true;
    } else if (*a != 'B' && *a != 'G') {  // aarch64's BTI and MTE flags carry no data
      break;  // unknown: its data and any after it are skipped by length
    }
  }
  if (r.position() > data_end) return false;
  return r.skip(data_end - r.position());
}

enum class TableResult { kFound, kNotCovered, kUnusable };

// Binary search of .eh_frame_hdr's table of {initial location, FDE address}, sorted by
// location. Also gives .eh_frame's address from the header.
TableResult search_table(const MemoryView& view, const EhFrameSections& s, uint64_t pc,
                         uint64_t* fde_address, uint64_t* eh_frame) {
  const uint64_t end = s.hdr_size ? s.hdr + s.hdr_size : UINT64_MAX;
  MemoryReader r(view, s.hdr, end);
  uint8_t version, eh_frame_encoding, count_encoding, table_encoding;
  if (!r.u8(&version) || !r.u8(&eh_frame_encoding) || !r.u8(&count_encoding) ||
      !r.u8(&table_encoding) || version != 1) {
    return TableResult::kUnusable;
  }
  PointerBases bases;
  bases.data = s.hdr;  // datarel in the header is relative to the header
  uint64_t frame;
  if (!read_encoded_pointer(r, eh_frame_encoding, bases, &frame)) return TableResult::kUnusable;
  if (*eh_frame == 0) *eh_frame = frame;
  uint64_t count;
  if (count_encoding == DW_EH_PE_omit || table_encoding == DW_EH_PE_omit ||
      !read_encoded_pointer(r, count_encoding, bases, &count)) {
    return TableResult::kUnusable;
  }
  const int size = encoded_size(table_encoding);
  const uint8_t application = table_encoding & 0x70;
  if (size == 0 || (table_encoding & DW_EH_PE_indirect) ||
      (application != DW_EH_PE_absptr && application != DW_EH_PE_datarel)) {
    return TableResult::kUnusable;  // entries we cannot index: walk .eh_frame instead
  }
  const uint64_t entry = 2 * static_cast<uint64_t>(size);
  const uint64_t table = r.position();
  if (count > (r.end() - table) / entry) return TableResult::kUnusable;
  auto read_entry = [&](uint64_t i, uint64_t* location, uint64_t* fde) {
    MemoryReader e(view, table + i * entry, table + (i + 1) * entry);
    return read_encoded_pointer(e, table_encoding, bases, location) &&
           (fde == nullptr || read_encoded_pointer(e, table_encoding, bases, fde));
  };
  uint64_t low = 0, high = count;  // the answer is the last entry with location <= pc
  while (low < high) {
    const uint64_t mid = low + (high - low) / 2;
    uint64_t location;
    if (!read_entry(mid, &location, nullptr)) return TableResult::kUnusable;
    if (location <= pc) {
      low = mid + 1;
    } else {
      high = mid;
    }
  }
  uint64_t location;
  if (low == 0) return TableResult::kNotCovered;
  if (!read_entry(low - 1, &location, fde_address)) return TableResult::kUnusable;
  return TableResult::kFound;
}

// Every record of .eh_frame in turn, to its terminator, its end or the first malformed one.
bool scan(const MemoryView& view, uint64_t begin, uint64_t end, const PointerBases& bases,
          uint64_t pc, FdeInfo* fde, CieInfo* cie) {
  for (uint64_t at = begin; at < end;) {
    Record rec;
    if (!read_record(view, at, &rec) || rec.terminator || rec.end > end) return false;
    if (rec.id != 0 && parse_fde(view, at, bases, fde, cie) && pc >= fde->pc_begin &&
        pc < fde->pc_end) {
      return true;
    }
    at = rec.end;  // always forward: a record is at least 8 bytes
  }
  return false;
}

}  // namespace

bool parse_cie(const MemoryView& view, uint64_t address, CieInfo* cie) {
  Record rec;
  if (!read_record(view, address, &rec) || rec.terminator || rec.id != 0) return false;
  MemoryReader r(view, rec.id_field + 4, rec.end);
  uint8_t version;
  char augmentation[16];
  if (!r.u8(&version) || (version != 1 && version != 3) ||
      !r.string(augmentation, sizeof(augmentation))) {
    return false;
  }
  const char* letters = augmentation;
  if (letters[0] == 'e' && letters[1] == 'h') {  // old GCC: an EH data pointer, unused
    if (!r.skip(8)) return false;
    letters += 2;
  }
  *cie = CieInfo{};
  if (!r.uleb(&cie->code_alignment) || !r.sleb(&cie->data_alignment)) return false;
  if (version == 1) {
    uint8_t column;
    if (!r.u8(&column)) return false;
    cie->return_address_register = column;
  } else if (!r.uleb(&cie->return_address_register)) {
    return false;
  }
  if (letters[0] == 'z') {
    cie->augmented = true;
    if (!parse_augmentation(r, letters + 1, cie)) return false;
  } else if (letters[0] != '\0') {
    return false;  // without "z" nothing says where unknown augmentation data ends
  }
  cie->instructions = r.position();
  cie->instructions_end = rec.end;
  return r.ok();
}

bool parse_fde(const MemoryView& view, uint64_t address, const PointerBases& bases, FdeInfo* fde,
               CieInfo* cie) {
  Record rec;
  if (!read_record(view, address, &rec) || rec.terminator || rec.id == 0 || rec.id > rec.id_field ||
      !parse_cie(view, rec.id_field - rec.id, cie)) {
    return false;
  }
  MemoryReader r(view, rec.id_field + 4, rec.end);
  uint64_t begin, range;
  // The range has the pointers' format but is a length: no base, never indirect.
  if (!read_encoded_pointer(r, cie->fde_encoding, bases, &begin) ||
      !read_encoded_pointer(r, cie->fde_encoding & 0x0f, PointerBases{}, &range) ||
      begin + range < begin) {
    return false;
  }
  if (cie->augmented) {
    uint64_t length;
    if (!r.uleb(&length) || !r.skip(length)) return false;
  }
  fde->pc_begin = begin;
  fde->pc_end = begin + range;
  fde->instructions = r.position();
  fde->instructions_end = rec.end;
  return r.ok();
}

std::optional<CfiRow> find_cfi_row(const MemoryView& view, const EhFrameSections& sections,
                                   uint64_t pc) {
  uint64_t eh_frame = sections.eh_frame;
  uint64_t fde_address = 0;
  TableResult table = TableResult::kUnusable;
  if (sections.hdr != 0) table = search_table(view, sections, pc, &fde_address, &eh_frame);
  if (table == TableResult::kNotCovered) return std::nullopt;
  FdeInfo fde;
  CieInfo cie;
  if (table == TableResult::kFound) {
    if (!parse_fde(view, fde_address, sections.bases, &fde, &cie)) return std::nullopt;
  } else if (eh_frame == 0 ||
             !scan(view, eh_frame, sections.eh_frame_end, sections.bases, pc, &fde, &cie)) {
    return std::nullopt;
  }
  CfiRow row;
  if (!run_cfa_program(view, cie, fde, sections.bases, pc, &row)) return std::nullopt;
  return row;
}

}  // namespace inprof::internal
