#include "symbolize/image_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>

namespace inprof::symbolicate {
namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::pair<const uint8_t*, size_t>, std::string> files;
  ~Registry() {
    for (const auto& [key, path] : files) std::remove(path.c_str());
  }
};

Registry& registry() {
  static Registry r;  // destroyed at exit: the files go with it
  return r;
}

}  // namespace

std::string temporary_image_file(std::span<const uint8_t> image, std::string* why) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto key = std::make_pair(image.data(), image.size());
  if (auto it = r.files.find(key); it != r.files.end()) return it->second;
  const char* tmp = std::getenv("TMPDIR");
  std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/symbolicate-image-XXXXXX";
  int fd = mkstemp(path.data());
  if (fd < 0) {
    *why =
        "cannot write the module's image to a temporary file: " + std::string(std::strerror(errno));
    return {};
  }
  size_t done = 0;
  while (done < image.size()) {
    ssize_t n = ::write(fd, image.data() + done, image.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  const bool ok = done == image.size() && ::close(fd) == 0;
  if (!ok) {
    if (done != image.size()) ::close(fd);
    std::remove(path.c_str());
    *why = "cannot write the module's image to a temporary file";
    return {};
  }
  r.files.emplace(key, path);
  return path;
}

}  // namespace inprof::symbolicate
