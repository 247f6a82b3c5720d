#include "symbolize/cache_file_read.h"

#include <cstdio>
#include <system_error>

namespace inprof::symbolicate {
namespace fs = std::filesystem;

std::optional<CacheFileBytes> read_cache_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return std::nullopt;
  std::optional<CacheFileBytes> out;
  long size = -1;
  if (std::fseek(f, 0, SEEK_END) == 0) size = std::ftell(f);
  if (size >= 0 && std::fseek(f, 0, SEEK_SET) == 0) {
    const size_t n = static_cast<size_t>(size);
    std::unique_ptr<char[]> data(new char[n ? n : 1]);  // uninitialised: read over at once
    if (std::fread(data.get(), 1, n, f) == n) out.emplace(std::move(data), n);
  }
  std::fclose(f);
  return out;
}

bool due_for_refresh(fs::file_time_type time) {
  const auto now = fs::file_time_type::clock::now();
  // A time in the future (another machine's clock, a clock set back) is refreshed too.
  return time > now || now - time >= kRefreshAfter;
}

void refresh_cache_file(const std::string& path) {
  std::error_code ec;
  const fs::file_time_type time = fs::last_write_time(path, ec);
  if (ec || !due_for_refresh(time)) return;
  fs::last_write_time(path, fs::file_time_type::clock::now(), ec);
}

}  // namespace inprof::symbolicate
