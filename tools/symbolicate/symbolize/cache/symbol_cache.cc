#include "symbolize/cache/symbol_cache.h"

#if defined(__linux__)
#include <fcntl.h>  // AT_FDCWD

#include <cstdio>  // renameat2, RENAME_EXCHANGE
#endif
#if !defined(_WIN32)
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <system_error>
#include <unordered_map>

#include "symbolize/cache/cache_dir_listing.h"
#include "symbolize/cache/cache_file_read.h"
#include "symbolize/cache/unit_pack.h"
#include "text_util.h"

namespace inprof::symbolicate {
namespace fs = std::filesystem;
namespace {

constexpr const char* kSuffix = ".sym";
constexpr const char* kTempMarker = ".tmp.";
// A .sym with this many records (symbol_cache_file.h) is written whole at the next store: each
// record repeats its names, so a file never folded would decode slower and slower.
constexpr uint32_t kMaxSymbolRecords = 8;

// A name no other process or thread picks at the same time. The random part is drawn once per
// process (a random_device per file cost a system call or more for each of a run's files).
std::string unique_suffix() {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t random = std::random_device()();
  const uint64_t now =
      static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  char text[64];  // hexadecimal, as an ostringstream made it (without its locale set-up)
  std::snprintf(text, sizeof text, "%" PRIx64 ".%" PRIx64 ".%" PRIx64, random, now,
                static_cast<uint64_t>(counter.fetch_add(1)));
  return text;
}

// Puts the file at `temp` in the place of `path`, atomically: a reader opens the old file or the
// new one. Where the kernel can, the two are exchanged (renameat2 RENAME_EXCHANGE) and the old
// one, now at `temp`, removed: ext4 (auto_da_alloc) starts writing back at once a file renamed
// over another, ~0.3 ms of CPU in a warm run that rewrites four .sym files, a flush the cache does
// not need (a file lost to a crash is a miss: every file is checked when read). With no file at
// `path` yet, or where there is no exchange (another file system, another OS), a rename.
void replace_file(const std::string& temp, const std::string& path, std::error_code& ec) {
#if defined(__linux__)
  if (::renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, path.c_str(), RENAME_EXCHANGE) == 0) {
    std::error_code removed;
    fs::remove(temp, removed);  // the old file
    ec.clear();
    return;
  }
#endif
  fs::rename(temp, path, ec);
}

}  // namespace

std::string default_symbol_cache_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    return std::string(xdg) + "/inprof";
  }
  if (const char* home = std::getenv("HOME"); home && *home) {
    return std::string(home) + "/.cache/inprof";
  }
  return {};
}

SymbolCache::SymbolCache(std::string dir, uint64_t max_bytes)
    : dir_(std::move(dir) + "/v" + std::to_string(kSymbolCacheVersion)), max_bytes_(max_bytes) {}

std::string SymbolCache::key(const std::vector<uint8_t>& build_id, const ModuleFiles& files) {
  if (build_id.empty()) return {};
  std::string k = hex_string(build_id);
  std::string identity;
  for (const std::string& path : {files.binary, files.debug}) {
    std::error_code ec;
    identity += path;
    identity += '\0';
    if (!path.empty()) {
      identity += std::to_string(fs::file_size(path, ec)) + ':' +
                  std::to_string(fs::last_write_time(path, ec).time_since_epoch().count());
    }
    identity += '\0';
  }
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (unsigned char c : identity) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  k += files.debug.empty() ? "-symbols-" : "-dwarf-";
  static const char kHex[] = "0123456789abcdef";
  for (int shift = 60; shift >= 0; shift -= 4) k += kHex[(h >> shift) & 15];
  return k;
}

std::string SymbolCache::path_of(const std::string& key) const {
  return dir_ + "/" + key + kSuffix;
}

CachedModule SymbolCache::load(const std::string& key, const std::vector<uint64_t>* wanted) const {
  if (key.empty()) return {};
  const std::string path = path_of(key);
  std::optional<CacheFileBytes> bytes = read_cache_file(path);
  if (!bytes) return {};
  std::optional<CachedModule> module =
      decode_symbol_cache(key, bytes->view(), wanted, bytes->owner());
  if (!module) return {};
  module->origin.device = bytes->device();
  module->origin.inode = bytes->inode();
  // Damage after the intact records: appending there would be lost; written whole instead.
  if (module->origin.intact_bytes != bytes->view().size()) {
    module->origin.records = kMaxSymbolRecords;
  }
  refresh_cache_file(path, bytes->time());  // a hit: the last to be evicted
  return std::move(*module);
}

bool SymbolCache::store(const std::string& key, const CachedModule& module,
                        std::string* why) const {
  if (key.empty()) return false;
  if (append(key, module)) return true;
  if (!module.undecoded.empty()) {  // written whole: with what this run did not ask for
    CachedModule whole = module;
    whole.decode_all();
    return write_atomically(path_of(key), encode_symbol_cache(key, whole), why);
  }
  return write_atomically(path_of(key), encode_symbol_cache(key, module), why);
}

bool SymbolCache::append(const std::string& key, const CachedModule& module) const {
#if !defined(_WIN32)
  const SymbolFileOrigin& origin = module.origin;
  if (origin.intact_bytes == 0 || origin.inode == 0 || origin.records >= kMaxSymbolRecords) {
    return false;
  }
  if (!module.learnt_any()) return true;  // the file holds it all already
  const std::string record = encode_symbol_cache(key, module.learnt_part());
  const int fd = ::open(path_of(key).c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) return false;
  // The file read, not one renamed over it since (which this record would not belong after).
  // Another process may have appended meanwhile: O_APPEND puts each record whole after the
  // other (one write each; a reader finding one half written stops before it).
  struct stat st;
  bool ok = ::fstat(fd, &st) == 0 && uint64_t(st.st_dev) == origin.device &&
            uint64_t(st.st_ino) == origin.inode && uint64_t(st.st_size) >= origin.intact_bytes;
  if (ok) ok = ::write(fd, record.data(), record.size()) == ssize_t(record.size());
  // A write cut short (a full disk) leaves a damaged tail, which the whole rewrite replaces.
  ::close(fd);
  return ok;
#else
  (void)key;
  (void)module;
  return false;
#endif
}

std::string SymbolCache::unit_path(const std::string& key, uint64_t unit) const {
  std::ostringstream name;
  name << dir_ << '/' << key << '.' << std::hex << unit << ".unit";
  return name.str();
}

ModuleIndex SymbolCache::load_index(const std::string& key) const {
  if (key.empty()) return {};
  ModuleIndex index;
  const std::string path = index_path(key);
  if (std::optional<CacheFileBytes> bytes = read_cache_file(path)) {
    if (std::optional<ModuleIndex> read = ModuleIndex::decode_module(key, bytes->view())) {
      index = std::move(*read);
      refresh_cache_file(path, bytes->time());
    }
  }
  auto memo = std::make_shared<CacheFileMemo>();  // a pack's units share one mapping
  index.set_unit_source([this, key, memo](uint64_t unit) -> std::optional<ModuleIndex::Unit> {
    const std::string path = unit_path(key, unit);
    std::optional<CacheFileBytes> bytes = read_cache_file(path, memo.get());
    if (!bytes) return std::nullopt;
    std::string_view blob = bytes->view();
    if (is_unit_pack(blob)) {  // one of several units a run added, named by a link each
      std::optional<std::string_view> found = find_in_unit_pack(key, unit, blob);
      if (!found) return std::nullopt;
      blob = *found;
    }
    // The unit's line rows stay in the mapped file (kept as long as the unit is).
    std::optional<ModuleIndex::Unit> decoded =
        ModuleIndex::decode_unit(key, unit, blob, bytes->owner());
    if (decoded) refresh_cache_file(path, bytes->time());
    return decoded;
  });
  return index;
}

bool SymbolCache::store_index(const std::string& key, const ModuleIndex& index,
                              std::string* why) const {
  if (key.empty()) return false;
  bool ok = true;
  if (index.module_added()) ok = write_atomically(index_path(key), index.encode_module(key), why);
  const std::vector<uint64_t>& added = index.added_units();
  if (!ok || added.empty()) return ok;
  if (added.size() == 1) {
    return write_atomically(unit_path(key, added[0]), index.encode_unit(key, added[0]), why);
  }
  std::vector<std::pair<uint64_t, std::string>> units;
  std::vector<std::string> paths;
  for (uint64_t unit : added) {
    units.emplace_back(unit, index.encode_unit(key, unit));
    paths.push_back(unit_path(key, unit));
  }
  const std::string pack = encode_unit_pack(key, units);
  const std::vector<bool> linked = write_linked(dir_ + "/" + key + ".pack", pack, paths);
  for (size_t i = 0; i < units.size() && ok; ++i) {
    if (!linked[i]) ok = write_atomically(paths[i], units[i].second, why);  // no links here
  }
  return ok;
}

std::vector<bool> SymbolCache::write_linked(const std::string& stem, const std::string& bytes,
                                            const std::vector<std::string>& paths) const {
  std::vector<bool> linked(paths.size(), false);
  std::string why;
  const std::string temp = stem + kTempMarker + unique_suffix();
  if (!write_atomically(temp, bytes, &why)) return linked;
  for (size_t i = 0; i < paths.size(); ++i) {
    std::error_code ec;
    fs::create_hard_link(temp, paths[i], ec);
    if (ec == std::errc::file_exists) {
      // Replaced, as a file written whole is: a name left damaged would never be mended.
      const std::string name = paths[i] + kTempMarker + unique_suffix();
      ec.clear();
      fs::create_hard_link(temp, name, ec);
      if (!ec) replace_file(name, paths[i], ec);
      std::error_code removed;
      if (ec) fs::remove(name, removed);
    }
    linked[i] = !ec;
  }
  std::error_code ec;
  fs::remove(temp, ec);
  return linked;
}

bool SymbolCache::write_atomically(const std::string& path, const std::string& bytes,
                                   std::string* why) const {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) {
    *why = "cannot create " + dir_ + ": " + ec.message();
    return false;
  }
  const std::string temp = path + kTempMarker + unique_suffix();
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      fs::remove(temp, ec);
      *why = "cannot write " + temp;
      return false;
    }
  }
  replace_file(temp, path, ec);  // atomic: readers see the old file or the new one
  if (ec) {
    *why = "cannot rename " + temp + ": " + ec.message();
    fs::remove(temp, ec);
    return false;
  }
  return true;
}

void SymbolCache::evict() const {
  struct Entry {
    std::string name;
    fs::file_time_type time;
    uint64_t size;
    uint64_t inode;  // 0: counted by itself
  };
  std::vector<Entry> entries;
  // A unit pack has a name per unit (unit_pack.h): its bytes count once, and are freed with the
  // last of its names.
  std::unordered_map<uint64_t, size_t> names_of;
  uint64_t total = 0;
  const auto now = fs::file_time_type::clock::now();
  for (CacheDirEntry& e : list_cache_dir(dir_)) {
    if (e.name.find(kTempMarker) != std::string::npos) {
      // Left by a process that died while writing: gone after an hour.
      std::error_code removed;
      if (now - e.time > std::chrono::hours(1)) fs::remove(dir_ + "/" + e.name, removed);
      continue;
    }
    const std::string ext = fs::path(e.name).extension().string();
    if (ext != kSuffix && ext != ".img" && ext != ".stamp" && ext != ".idx" && ext != ".unit") {
      continue;
    }
    const uint64_t inode = e.links > 1 ? e.inode : 0;
    if (!inode || names_of[inode]++ == 0) total += e.size;
    entries.push_back({std::move(e.name), e.time, e.size, inode});
  }
  if (total <= max_bytes_) return;
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.time < b.time; });
  for (const Entry& e : entries) {
    if (total <= max_bytes_) break;
    std::error_code removed;
    fs::remove(dir_ + "/" + e.name, removed);
    // Removed by us or by another process: gone either way.
    if (!e.inode || --names_of[e.inode] == 0) total -= e.size;
  }
}

bool parse_byte_size(const std::string& text, uint64_t* bytes) {
  if (text.empty() || text.size() > 20) return false;
  uint64_t value = 0;
  size_t i = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    if (value > (UINT64_MAX - 9) / 10) return false;
    value = value * 10 + uint64_t(text[i] - '0');
  }
  if (i == 0) return false;
  unsigned shift = 0;
  if (i < text.size()) {
    switch (text[i]) {
      case 'k':
      case 'K':
        shift = 10;
        break;
      case 'm':
      case 'M':
        shift = 20;
        break;
      case 'g':
      case 'G':
        shift = 30;
        break;
      default:
        return false;
    }
    ++i;
    const std::string unit = text.substr(i);
    if (unit == "B" || unit == "iB") i = text.size();  // "512MB", "512MiB"
  }
  if (i != text.size() || (shift && value > (UINT64_MAX >> shift))) return false;
  *bytes = value << shift;
  return true;
}

}  // namespace inprof::symbolicate
