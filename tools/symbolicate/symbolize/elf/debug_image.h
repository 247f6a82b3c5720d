// A debug file's DWARF inflated once for every libdw handle that will read it.
//
// Debian's debug files (and most distributions') compress their .debug_* sections
// (SHF_COMPRESSED). libdw inflates every compressed DWARF section of a file when a handle opens
// it, location lists and macros included, on the opening thread, and again for each handle: a
// module split between threads paid it once per thread (python3.11: ~0.1 s of CPU each).
//
// A DebugImage is an anonymous in-memory file (memfd) laid out like the original: every byte
// range of the original is where it was (so program headers, notes and the symbol table keep
// their offsets), except the compressed sections. Those symbolization reads are inflated into
// space appended at the end, those it never reads (location lists, macros, name indexes) become
// SHT_NOBITS, and a new section header table after them describes the result. The inflating is
// split into tasks, one per section, that any thread may run, largest first. Handles map the
// image's pages; the kernel shares them.
//
// Only 64-bit little-endian ELF with SHF_COMPRESSED sections (zlib, or zstd) is rewritten;
// anything else, or any inconsistency, leaves the original file to libdw, which then says
// what is wrong with it.
#ifndef INPROF_TOOLS_SYMBOLICATE_DEBUG_IMAGE_H_
#define INPROF_TOOLS_SYMBOLICATE_DEBUG_IMAGE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace inprof::symbolicate {

class DebugImage {
 public:
  // Plans the image of the ELF file at `path`. Null when there is nothing to gain (no compressed
  // section symbolization reads), when the file is not one this rewrites, or on failure; `why`
  // then says which (empty: nothing to gain).
  static std::unique_ptr<DebugImage> plan(const std::string& path, std::string* why);
  // An image made before (debug_image_cache.h), `size` bytes at the start of the file `fd`,
  // which the object then owns.
  static std::unique_ptr<DebugImage> adopt(const std::string& path, int fd, uint64_t size);
  ~DebugImage();
  DebugImage(const DebugImage&) = delete;
  DebugImage& operator=(const DebugImage&) = delete;

  // The sections to inflate, largest first. run_task may be called from several threads at once,
  // each index once.
  size_t task_count() const { return tasks_.size(); }
  size_t task_bytes(size_t i) const { return tasks_[i].size; }
  void run_task(size_t i);

  // After every task ran: unmaps the image and reports whether it is complete. Then fd() reads
  // it (owned by this object; dup it to hand it on).
  bool finish(std::string* why);
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }
  // Bytes inflated, and bytes of compressed sections left out.
  uint64_t inflated_bytes() const { return inflated_bytes_; }
  uint64_t skipped_bytes() const { return skipped_bytes_; }

 private:
  struct Task {
    uint64_t source_offset;  // the compressed data (after its Elf64_Chdr) in the original
    uint64_t source_size;
    uint64_t target_offset;  // where its contents go in the image
    uint64_t size;           // inflated size (from the Chdr)
    uint32_t compression;    // ELFCOMPRESS_*
  };
  DebugImage() = default;
  // Maps the original read-only; false (why said where there is something to say) if it is not
  // one to rewrite.
  bool map_source(const std::string& path, std::string* why);
  // Makes the in-memory file: the original's bytes but for the `holes` (the compressed sections'
  // original ranges), the new ELF header at 0 and the section header table at `table_offset`.
  bool make_image(std::vector<std::pair<uint64_t, uint64_t>>& holes, const void* header,
                  size_t header_size, const void* section_table, size_t table_size,
                  uint64_t table_offset, std::string* why);

  std::string path_;
  int fd_ = -1;
  const uint8_t* source_ = nullptr;  // the original, mapped read-only
  size_t source_size_ = 0;
  uint8_t* image_ = nullptr;  // the memfd, mapped shared while tasks run
  uint64_t size_ = 0;
  uint64_t inflated_bytes_ = 0, skipped_bytes_ = 0;
  std::vector<Task> tasks_;
  std::atomic<size_t> failed_{0};
};

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_DEBUG_IMAGE_H_
