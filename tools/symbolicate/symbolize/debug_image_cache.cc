#include "symbolize/debug_image_cache.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "symbolize/byte_io.h"

namespace inprof::symbolicate {
namespace {

constexpr char kMagic[8] = {'I', 'N', 'P', 'R', 'I', 'M', 'G', '1'};
struct Trailer {
  char magic[8];
  uint64_t size;  // of the image before the trailer
  uint64_t checksum;
};

bool write_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

std::unique_ptr<DebugImage> load_cached_debug_image(const std::string& cache_path,
                                                    const std::string& debug_path) {
  const int fd = ::open(cache_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < off_t(sizeof(Trailer))) {
    ::close(fd);
    return nullptr;
  }
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  // Read whole at once (the checksum touches every page): one fault-in, not thousands.
  void* map = ::mmap(nullptr, file_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
  if (map == MAP_FAILED) {
    ::close(fd);
    return nullptr;
  }
  const auto* bytes = static_cast<const uint8_t*>(map);
  Trailer t;
  std::memcpy(&t, bytes + file_size - sizeof t, sizeof t);
  const bool intact = std::memcmp(t.magic, kMagic, sizeof kMagic) == 0 &&
                      t.size == file_size - sizeof t && fast_checksum(bytes, t.size) == t.checksum;
  ::munmap(map, file_size);
  if (!intact) {
    ::close(fd);
    return nullptr;
  }
  ::futimens(fd, nullptr);  // recently used: the last to be evicted
  return DebugImage::adopt(debug_path, fd, t.size);
}

void save_debug_image(const DebugImage& image, const std::string& cache_path) {
  static std::atomic<uint64_t> counter{0};
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(cache_path).parent_path(), ec);
  const uint64_t size = image.size();
  if (size == 0) return;
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, image.fd(), 0);
  if (map == MAP_FAILED) return;
  const auto* bytes = static_cast<const uint8_t*>(map);
  const std::string temp =
      cache_path + ".tmp." + std::to_string(::getpid()) + "." +
      std::to_string(counter.fetch_add(1)) + "." +
      std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  bool ok = fd >= 0;
  if (ok) {
    Trailer t;
    std::memcpy(t.magic, kMagic, sizeof kMagic);
    t.size = size;
    t.checksum = fast_checksum(bytes, size);
    ok = write_all(fd, bytes, size) && write_all(fd, &t, sizeof t);
    ok = ::close(fd) == 0 && ok;
  }
  ::munmap(map, size);
  if (ok) ok = ::rename(temp.c_str(), cache_path.c_str()) == 0;
  if (!ok && fd >= 0) ::unlink(temp.c_str());
}

}  // namespace inprof::symbolicate
