#include "read/dump_set.h"

#include <algorithm>
#include <filesystem>

namespace inprof::symbolicate {

std::optional<std::vector<std::string>> expand_dump_paths(const std::vector<std::string>& args,
                                                          std::string* error) {
  namespace fs = std::filesystem;
  std::vector<std::string> paths;
  for (const std::string& arg : args) {
    std::error_code ec;
    if (!fs::is_directory(arg, ec)) {
      paths.push_back(arg);  // a file, or a path the reader reports as missing
      continue;
    }
    std::vector<std::string> found;
    for (fs::directory_iterator it(arg, ec), end; !ec && it != end; it.increment(ec)) {
      // An empty file holds nothing (a ring-mode session's output beside its crash capture).
      if (it->path().extension() == ".inprof" && it->is_regular_file(ec) && it->file_size(ec) > 0) {
        found.push_back(it->path().string());
      }
    }
    if (ec) {
      *error = "cannot read the directory '" + arg + "': " + ec.message();
      return std::nullopt;
    }
    if (found.empty()) {
      *error = "'" + arg + "' is a directory without .inprof dumps";
      return std::nullopt;
    }
    std::sort(found.begin(), found.end());
    paths.insert(paths.end(), found.begin(), found.end());
  }
  return paths;
}

}  // namespace inprof::symbolicate
