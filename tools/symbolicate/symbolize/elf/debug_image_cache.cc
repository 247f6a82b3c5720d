#include "symbolize/elf/debug_image_cache.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <filesystem>

#include "symbolize/byte_io.h"
#include "symbolize/cache/cache_file_read.h"

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

// What a run that checked an image whole saw of its file: a later run that finds the same file
// (device, inode, size, status change time: any write or rename changes one) takes it as checked
// without reading all of it again (python3.11's 28 MB: the populated mapping and the checksum
// were the largest cost of a warm run that opens the module). Written only once the image is on
// disk (fsync), so a crash cannot leave a stamp vouching for data that never got there. Our own
// touch (futimens, for the eviction order) changes the time: the stamp is written after it, and
// both happen only when the image is due for a refresh (cache_file_read.h), so that runs soon
// after one another find the stamp as it is and write nothing.
constexpr char kStampMagic[8] = {'I', 'N', 'P', 'R', 'S', 'T', 'P', '1'};
struct Stamp {
  char magic[8];
  uint64_t dev, ino, size, ctime_sec, ctime_nsec, checksum;  // checksum: the trailer's
  uint64_t own;                                              // of the fields before
};

Stamp stamp_of(const struct stat& st, uint64_t checksum) {
  Stamp s{};
  std::memcpy(s.magic, kStampMagic, sizeof kStampMagic);
  s.dev = static_cast<uint64_t>(st.st_dev);
  s.ino = static_cast<uint64_t>(st.st_ino);
  s.size = static_cast<uint64_t>(st.st_size);
  s.ctime_sec = static_cast<uint64_t>(st.st_ctim.tv_sec);
  s.ctime_nsec = static_cast<uint64_t>(st.st_ctim.tv_nsec);
  s.checksum = checksum;
  s.own = fast_checksum(&s, offsetof(Stamp, own));
  return s;
}

bool stamp_matches(const std::string& stamp_path, const Stamp& expected) {
  const int fd = ::open(stamp_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  Stamp s;
  const bool read = ::read(fd, &s, sizeof s) == ssize_t(sizeof s);
  ::close(fd);
  return read && std::memcmp(&s, &expected, sizeof s) == 0;
}

// Replaces the stamp of the image open on `fd`, renamed into place like every cache file.
void write_stamp(int fd, const std::string& stamp_path, uint64_t checksum) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return;
  const Stamp s = stamp_of(st, checksum);
  const std::string temp =
      stamp_path + ".tmp." + std::to_string(::getpid()) + "." +
      std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  const int out = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (out < 0) return;
  const bool ok = write_all(out, &s, sizeof s);
  if (::close(out) == 0 && ok && ::rename(temp.c_str(), stamp_path.c_str()) == 0) return;
  ::unlink(temp.c_str());
}

}  // namespace

std::string debug_image_stamp_path(const std::string& cache_path) { return cache_path + ".stamp"; }

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
  Trailer t;
  if (::pread(fd, &t, sizeof t, off_t(file_size - sizeof t)) != ssize_t(sizeof t) ||
      std::memcmp(t.magic, kMagic, sizeof kMagic) != 0 || t.size != file_size - sizeof t) {
    ::close(fd);
    return nullptr;
  }
  const std::string stamp_path = debug_image_stamp_path(cache_path);
  const bool checked_before = stamp_matches(stamp_path, stamp_of(st, t.checksum));
  if (!checked_before) {
    // Read whole at once (the checksum touches every page): one fault-in, not thousands.
    void* map = ::mmap(nullptr, file_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (map == MAP_FAILED) {
      ::close(fd);
      return nullptr;
    }
    const bool intact = fast_checksum(map, t.size) == t.checksum;
    ::munmap(map, file_size);
    if (!intact) {
      ::close(fd);
      return nullptr;
    }
    ::fsync(fd);  // on disk before a stamp says it was checked (see Stamp)
  }
  const bool refresh = due_for_refresh(file_time_of(st));
  if (refresh) ::futimens(fd, nullptr);  // recently used: the last to be evicted
  if (refresh || !checked_before) write_stamp(fd, stamp_path, t.checksum);
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
    ok = write_all(fd, bytes, size) && write_all(fd, &t, sizeof t) && ::fsync(fd) == 0;
    if (ok) ok = ::rename(temp.c_str(), cache_path.c_str()) == 0;
    // Checked as it was written, and on disk: stamped (the rename changed its time; if another
    // process's image has replaced it meanwhile, the stamp describes ours and is ignored).
    if (ok) write_stamp(fd, debug_image_stamp_path(cache_path), t.checksum);
    ok = ::close(fd) == 0 && ok;
  }
  ::munmap(map, size);
  if (!ok && fd >= 0) ::unlink(temp.c_str());
}

}  // namespace inprof::symbolicate
