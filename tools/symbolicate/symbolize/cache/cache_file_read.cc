#include "symbolize/cache/cache_file_read.h"

#include <cstdio>
#include <system_error>

#if !defined(_WIN32)
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace inprof::symbolicate {
namespace fs = std::filesystem;

#if !defined(_WIN32)
std::optional<CacheFileBytes> read_cache_file(const std::string& path, CacheFileMemo* memo) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::optional<CacheFileBytes> out;
  struct stat st;
  const CacheFileBytes* known = nullptr;
  if (::fstat(fd, &st) == 0 && memo) known = memo->find(st.st_dev, st.st_ino);
  if (known) {
    out.emplace(*known);
  } else if (S_ISREG(st.st_mode)) {
    const size_t n = static_cast<size_t>(st.st_size);
    if (n >= kMapCacheFilesFrom) {
      // Files are replaced by rename, never rewritten in place: the mapping stays as read.
      void* map = ::mmap(nullptr, n, PROT_READ, MAP_PRIVATE, fd, 0);
      if (map != MAP_FAILED) {
        std::shared_ptr<const char> data(static_cast<const char*>(map),
                                         [n](const char* p) { ::munmap(const_cast<char*>(p), n); });
        out.emplace(std::move(data), n, file_time_of(st), st.st_dev, st.st_ino);
      }
    } else {
      std::shared_ptr<char[]> data(new char[n ? n : 1]);  // uninitialised: read over at once
      size_t done = 0;
      while (done < n) {
        const ssize_t got = ::read(fd, data.get() + done, n - done);
        if (got <= 0) break;
        done += static_cast<size_t>(got);
      }
      if (done == n) {
        out.emplace(std::shared_ptr<const char>(data, data.get()), n, file_time_of(st), st.st_dev,
                    st.st_ino);
      }
    }
  }
  ::close(fd);
  if (out && memo && !known) memo->add(st.st_dev, st.st_ino, *out);
  return out;
}

fs::file_time_type file_time_of(const struct stat& st) {
  const auto since_epoch =
      std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec);
  const auto system = std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(since_epoch));
  return fs::file_time_type::clock::from_sys(system);
}
#else
std::optional<CacheFileBytes> read_cache_file(const std::string& path, CacheFileMemo*) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return std::nullopt;
  std::optional<CacheFileBytes> out;
  long size = -1;
  if (std::fseek(f, 0, SEEK_END) == 0) size = std::ftell(f);
  if (size >= 0 && std::fseek(f, 0, SEEK_SET) == 0) {
    const size_t n = static_cast<size_t>(size);
    std::shared_ptr<char[]> data(new char[n ? n : 1]);  // uninitialised: read over at once
    std::error_code ec;
    const fs::file_time_type time = fs::last_write_time(path, ec);
    if (std::fread(data.get(), 1, n, f) == n && !ec) {
      out.emplace(std::shared_ptr<const char>(data, data.get()), n, time);
    }
  }
  std::fclose(f);
  return out;
}
#endif

const CacheFileBytes* CacheFileMemo::find(uint64_t device, uint64_t inode) const {
  for (const Entry& e : files_) {
    if (e.device == device && e.inode == inode) return &e.bytes;
  }
  return nullptr;
}

void CacheFileMemo::add(uint64_t device, uint64_t inode, const CacheFileBytes& bytes) {
  files_.push_back({device, inode, bytes});
}

bool due_for_refresh(fs::file_time_type time) {
  const auto now = fs::file_time_type::clock::now();
  // A time in the future (another machine's clock, a clock set back) is refreshed too.
  return time > now || now - time >= kRefreshAfter;
}

void refresh_cache_file(const std::string& path, fs::file_time_type time) {
  if (!due_for_refresh(time)) return;
  std::error_code ec;
  fs::last_write_time(path, fs::file_time_type::clock::now(), ec);
}

}  // namespace inprof::symbolicate
