// Reading a loaded module's own program headers and notes in memory, from a dl_iterate_phdr
// callback (the loader's lock keeps the module mapped meanwhile). No file is opened.
#ifndef INPROF_PLATFORM_LINUX_LOADED_IMAGE_LINUX_H_
#define INPROF_PLATFORM_LINUX_LOADED_IMAGE_LINUX_H_

#include <link.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace inprof::internal {

// Copies module memory byte by byte, unseen by ThreadSanitizer (see the definition).
void read_image(void* dst, const void* src, size_t n);
ElfW(Phdr) program_header(const dl_phdr_info* info, int i);
// The GNU build-id found in the module's PT_NOTE segments; empty if none.
std::vector<uint8_t> find_build_id(const dl_phdr_info* info);

}  // namespace inprof::internal

#endif  // INPROF_PLATFORM_LINUX_LOADED_IMAGE_LINUX_H_
