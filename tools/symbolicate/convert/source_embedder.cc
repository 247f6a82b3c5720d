#include "convert/source_embedder.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

namespace inprof::symbolicate {
namespace {

enum class ReadResult { kOk, kUnreadable, kTooLarge, kNotText };

ReadResult read_text_file(const std::string& path, size_t max_bytes, std::string* out) {
  std::error_code ec;
  // Only regular files: never a FIFO or a device that a path in the debug info names.
  if (path.empty() || !std::filesystem::is_regular_file(path, ec)) return ReadResult::kUnreadable;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) return ReadResult::kUnreadable;
  if (size > max_bytes) return ReadResult::kTooLarge;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return ReadResult::kUnreadable;
  out->clear();
  char buffer[65536];
  size_t n;
  bool too_large = false;
  while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) {
    if (out->size() + n > max_bytes) {  // grew since it was measured
      too_large = true;
      break;
    }
    out->append(buffer, n);
  }
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (too_large) return ReadResult::kTooLarge;
  if (failed) return ReadResult::kUnreadable;
  if (std::memchr(out->data(), 0, out->size())) return ReadResult::kNotText;
  return ReadResult::kOk;
}

// What the source view shows for a file whose text is not embedded: why, and what to do, in
// place of the viewer's bare "Source code not available".
std::string note(const std::string& why) {
  return "// inprof: this file's text is not in the profile: " + why + "\n";
}

}  // namespace

std::string SourceEmbedReport::summary() const {
  std::string s = "sources: " + std::to_string(embedded) + " of " + std::to_string(files) +
                  " files embedded for the source view (" + std::to_string((bytes + 1023) / 1024) +
                  " KiB)";
  auto add = [&](size_t n, const char* why) {
    if (n) s += "; " + std::to_string(n) + " " + why;
  };
  add(unreadable, "not readable here");
  add(relative, "named without their directory");
  add(too_large, "over the per-file cap");
  add(not_text, "not text");
  add(over_total, "past the total cap");
  return s;
}

SourceEmbedReport embed_sources(ProfileBuilder& builder, const SourceEmbedOptions& options) {
  SourceTable& sources = builder.mutable_sources();
  SourceEmbedReport report;
  report.files = sources.size();
  if (!options.enabled) return report;
  sources.content.assign(sources.size(), std::nullopt);
  std::string text;
  for (size_t i = 0; i < sources.size(); ++i) {
    const std::string& path = builder.strings()[raw(sources.filename[i])];
    // A relative name ("../csu/libc-start.c") is relative to a build directory that the debug
    // information did not give: read from here, it could be another file.
    if (path.empty() || path[0] != '/') {
      ++report.relative;
      sources.content[i] = note("the debug information names it \"" + path +
                                "\", without the directory it is relative to.");
      continue;
    }
    switch (read_text_file(path, options.max_file_bytes, &text)) {
      case ReadResult::kUnreadable:
        ++report.unreadable;
        sources.content[i] =
            note("it was not readable at " + path +
                 " where symbolicate ran. Symbolicate where the source is at that path (a "
                 "distribution's source package unpacked there, or the build tree).");
        continue;
      case ReadResult::kTooLarge:
        ++report.too_large;
        sources.content[i] = note("it is larger than --sources-max-file (" +
                                  std::to_string(options.max_file_bytes >> 10) + " KiB).");
        continue;
      case ReadResult::kNotText:
        ++report.not_text;
        continue;
      case ReadResult::kOk:
        break;
    }
    if (report.bytes + text.size() > options.max_total_bytes) {
      ++report.over_total;
      sources.content[i] = note("the profile's sources had reached --sources-max-total (" +
                                std::to_string(options.max_total_bytes >> 20) + " MiB).");
      continue;
    }
    report.bytes += text.size();
    ++report.embedded;
    sources.content[i] = std::move(text);
    text.clear();
  }
  return report;
}

}  // namespace inprof::symbolicate
