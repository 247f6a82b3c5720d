#include "pe_image_windows.h"

#include <windows.h>

#include <cstring>

namespace inprof::internal {
namespace {

struct CodeViewRsds {
  uint32_t signature;  // 'RSDS'
  uint8_t guid[16];
  uint32_t age;
};

}  // namespace

bool describe_pe_image(const uint8_t* base, ModuleInfo& m) {
  const auto* dos = reinterpret_cast<const IMAGE_DOS_HEADER*>(base);
  if (dos->e_magic != IMAGE_DOS_SIGNATURE) return false;
  const auto* nt = reinterpret_cast<const IMAGE_NT_HEADERS64*>(base + dos->e_lfanew);
  if (nt->Signature != IMAGE_NT_SIGNATURE ||
      nt->OptionalHeader.Magic != IMAGE_NT_OPTIONAL_HDR64_MAGIC) {
    return false;
  }
  const IMAGE_OPTIONAL_HEADER64& optional = nt->OptionalHeader;
  const auto start = reinterpret_cast<uint64_t>(base);
  m.start = start;
  m.end = start + optional.SizeOfImage;
  m.load_bias = start - optional.ImageBase;
  m.file_offset = 0;

  const IMAGE_SECTION_HEADER* section = IMAGE_FIRST_SECTION(nt);
  for (WORD i = 0; i < nt->FileHeader.NumberOfSections; ++i, ++section) {
    if (section->Characteristics & IMAGE_SCN_MEM_EXECUTE) {
      const uint64_t begin = start + section->VirtualAddress;
      m.code_ranges.emplace_back(begin, begin + section->Misc.VirtualSize);
    }
  }

  if (optional.NumberOfRvaAndSizes > IMAGE_DIRECTORY_ENTRY_DEBUG) {
    const IMAGE_DATA_DIRECTORY& dir = optional.DataDirectory[IMAGE_DIRECTORY_ENTRY_DEBUG];
    const auto* entry = reinterpret_cast<const IMAGE_DEBUG_DIRECTORY*>(base + dir.VirtualAddress);
    const size_t count = dir.VirtualAddress ? dir.Size / sizeof(IMAGE_DEBUG_DIRECTORY) : 0;
    for (size_t i = 0; i < count; ++i, ++entry) {
      if (entry->Type != IMAGE_DEBUG_TYPE_CODEVIEW || entry->AddressOfRawData == 0 ||
          entry->SizeOfData < sizeof(CodeViewRsds) ||
          entry->AddressOfRawData + sizeof(CodeViewRsds) > optional.SizeOfImage) {
        continue;
      }
      CodeViewRsds rsds;
      std::memcpy(&rsds, base + entry->AddressOfRawData, sizeof(rsds));
      if (rsds.signature != 0x53445352) continue;  // "RSDS"
      m.build_id.assign(rsds.guid, rsds.guid + 16);
      for (int b = 0; b < 4; ++b) m.build_id.push_back(uint8_t(rsds.age >> (8 * b)));
      return true;
    }
  }
  for (uint32_t value : {uint32_t(nt->FileHeader.TimeDateStamp), uint32_t(optional.SizeOfImage)}) {
    for (int b = 0; b < 4; ++b) m.build_id.push_back(uint8_t(value >> (8 * b)));
  }
  return true;
}

}  // namespace inprof::internal
