// A module image that the dump holds (the vDSO's: it has no file) written to a temporary file,
// so that the ELF readers, which read files, can take its symbol table like any binary's.
#ifndef INPROF_TOOLS_SYMBOLICATE_SYMBOLIZE_IMAGE_FILE_H_
#define INPROF_TOOLS_SYMBOLICATE_SYMBOLIZE_IMAGE_FILE_H_

#include <cstdint>
#include <span>
#include <string>

namespace inprof::symbolicate {

// The path of a temporary file ($TMPDIR or /tmp) holding `image`, removed when the process
// exits. The same bytes (the same memory) give the same file. Empty, with the reason in `why`,
// when it cannot be written.
std::string temporary_image_file(std::span<const uint8_t> image, std::string* why);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_SYMBOLIZE_IMAGE_FILE_H_
