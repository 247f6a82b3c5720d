#include "pe_file.h"

// <windows.h> must come first.
// clang-format off
#include <windows.h>
// clang-format on

#include <cstdlib>
#include <cstring>
#include <string_view>

#include "pe_image_windows.h"
#include "sampling/module_lister.h"
#include "text_windows.h"

namespace inprof::symbolicate {
namespace {

std::string last_error_text() { return "Windows error " + std::to_string(GetLastError()); }

class FileHandle {
 public:
  explicit FileHandle(HANDLE h) : h_(h) {}
  ~FileHandle() {
    if (h_ != INVALID_HANDLE_VALUE) CloseHandle(h_);
  }
  FileHandle(const FileHandle&) = delete;
  FileHandle& operator=(const FileHandle&) = delete;
  HANDLE get() const { return h_; }

 private:
  HANDLE h_;
};

bool read_at(HANDLE file, uint64_t offset, void* out, DWORD size) {
  OVERLAPPED at = {};
  at.Offset = static_cast<DWORD>(offset);
  at.OffsetHigh = static_cast<DWORD>(offset >> 32);
  DWORD got = 0;
  return ReadFile(file, out, size, &got, &at) && got == size;
}

// Whether one of the sections is .debug_info. Its name is longer than the section table's eight
// bytes, so the table holds "/N": N is the offset of the name in the COFF string table, which
// follows the symbol table (18-byte entries).
bool has_debug_info_section(HANDLE file) {
  IMAGE_DOS_HEADER dos;
  if (!read_at(file, 0, &dos, sizeof dos) || dos.e_magic != IMAGE_DOS_SIGNATURE) return false;
  DWORD signature = 0;
  IMAGE_FILE_HEADER header;
  const uint64_t nt = static_cast<uint32_t>(dos.e_lfanew);
  if (!read_at(file, nt, &signature, sizeof signature) || signature != IMAGE_NT_SIGNATURE ||
      !read_at(file, nt + sizeof signature, &header, sizeof header)) {
    return false;
  }
  const uint64_t strings =
      uint64_t(header.PointerToSymbolTable) + uint64_t(header.NumberOfSymbols) * 18;
  uint64_t at = nt + sizeof signature + sizeof header + header.SizeOfOptionalHeader;
  for (WORD i = 0; i < header.NumberOfSections; ++i, at += sizeof(IMAGE_SECTION_HEADER)) {
    IMAGE_SECTION_HEADER section;
    if (!read_at(file, at, &section, sizeof section)) return false;
    char name[16] = {};
    std::memcpy(name, section.Name, IMAGE_SIZEOF_SHORT_NAME);
    if (name[0] == '/' && header.PointerToSymbolTable != 0) {
      const unsigned long offset = std::strtoul(name + 1, nullptr, 10);
      std::memset(name, 0, sizeof name);
      if (!read_at(file, strings + offset, name, sizeof name - 1)) continue;
    }
    if (std::string_view(name) == ".debug_info") return true;
  }
  return false;
}

}  // namespace

std::optional<PeFileInfo> inspect_pe_file(const std::string& path, std::string* why) {
  const std::wstring wide = internal::to_wide(path);
  FileHandle file(CreateFileW(wide.c_str(), GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_DELETE,
                              nullptr, OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, nullptr));
  if (file.get() == INVALID_HANDLE_VALUE) {
    *why = "cannot open '" + path + "' (" + last_error_text() + ")";
    return std::nullopt;
  }
  BY_HANDLE_FILE_INFORMATION attributes;
  if (GetFileType(file.get()) != FILE_TYPE_DISK ||
      !GetFileInformationByHandle(file.get(), &attributes) ||
      (attributes.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY)) {
    *why = "'" + path + "' is not a regular file";
    return std::nullopt;
  }
  PeFileInfo info;
  info.has_dwarf = has_debug_info_section(file.get());

  // Mapped as an image (the loader checks the headers and lays the sections out at their RVAs,
  // runs no code), the file is read by exactly the code that read the module in the profiled
  // process.
  HMODULE image = LoadLibraryExW(wide.c_str(), nullptr, LOAD_LIBRARY_AS_IMAGE_RESOURCE);
  if (!image) {
    *why = "'" + path + "' is not a PE image (" + last_error_text() + ")";
    return std::nullopt;
  }
  // The handle of a resource mapping has its low bits set as a tag.
  const auto* base =
      reinterpret_cast<const uint8_t*>(reinterpret_cast<uintptr_t>(image) & ~uintptr_t(3));
  internal::ModuleInfo module;
  const bool described = internal::describe_pe_image(base, module);
  FreeLibrary(image);
  if (!described) {
    *why = "'" + path + "' is not a 64-bit PE image";
    return std::nullopt;
  }
  info.identity = std::move(module.build_id);
  info.image_base = module.start - module.load_bias;
  info.image_size = static_cast<uint32_t>(module.end - module.start);
  return info;
}

}  // namespace inprof::symbolicate
