// The persistent symbol cache (symbolicate --cache-dir): per module build-id, what its
// addresses were symbolized to, so that the next dump of the same release symbolizes only the
// addresses not seen before. One file per module, DIR/v<version>/<key>.sym
// (symbol_cache_file.h); a module without a build-id is never cached.
//
// Safe for several processes at once: a file is written whole to a temporary name and renamed
// over the old one, so a reader sees either file, or has a record appended to it with one write
// (a .sym, symbol_cache_file.h), which a reader that finds it half written leaves out; a file
// that is missing, partial or damaged is a miss. The directory is kept under a size bound: after
// a write, the least recently used files go first (a hit refreshes a file's time).
#ifndef INPROF_TOOLS_SYMBOLICATE_SYMBOL_CACHE_H_
#define INPROF_TOOLS_SYMBOLICATE_SYMBOL_CACHE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "symbolize/cache/module_index.h"
#include "symbolize/cache/symbol_cache_file.h"
#include "symbolize/debug_file_locator.h"

namespace inprof::symbolicate {

inline constexpr uint64_t kDefaultSymbolCacheBytes = uint64_t{512} << 20;

// $XDG_CACHE_HOME/inprof, else $HOME/.cache/inprof; empty when neither is set.
std::string default_symbol_cache_dir();

class SymbolCache {
 public:
  SymbolCache(std::string dir, uint64_t max_bytes);

  // The key of a module: its build-id, whether its DWARF or only its symbols are read, and the
  // identity (path, size, modification time) of the files read: a binary stripped since, or
  // another debug file of the same build, symbolizes differently. Empty (not cacheable)
  // without a build-id.
  static std::string key(const std::vector<uint8_t>& build_id, const ModuleFiles& files);

  // What is cached for `key`; empty on a miss of any kind. With `wanted` (sorted addresses):
  // only their symbols decoded, the others when asked for (CachedModule::find_symbol).
  CachedModule load(const std::string& key, const std::vector<uint64_t>* wanted = nullptr) const;
  // Writes `module` as `key`'s file: what it learnt since load() appended to the file read, if
  // that file is still there (symbol_cache_file.h), else the whole module, replacing any file.
  // Failures (a read-only directory, a full disk) only leave the cache as it was: false, with
  // the reason in `why`. The caller evicts (evict()) once it has written what it had: one pass
  // over the directory, not one per file written.
  bool store(const std::string& key, const CachedModule& module, std::string* why) const;
  // `key`'s module index (module_index.h): its module part from DIR/v<version>/<key>.idx
  // (none on a miss of any kind), its units read from <key>.<unit>.unit when first needed.
  ModuleIndex load_index(const std::string& key) const;
  // Writes what was set or added to `index` since it was read (each file whole, renamed into
  // place: two processes adding the same unit write the same bytes). Several units added are
  // one file, unit_pack.h, with a name per unit (hard links). As store().
  bool store_index(const std::string& key, const ModuleIndex& index, std::string* why) const;
  // Removes the least recently used files until the directory holds at most max_bytes.
  void evict() const;

  // Where `key`'s inflated debug image is kept (debug_image_cache.h).
  std::string image_path(const std::string& key) const { return dir_ + "/" + key + ".img"; }
  const std::string& directory() const { return dir_; }

 private:
  std::string path_of(const std::string& key) const;
  // Appends what `module` learnt to the file it was read from. False (nothing written) where
  // that file is gone or replaced, holds kMaxSymbolRecords already, or cannot be appended to:
  // the module is then written whole, which also folds the records into one.
  bool append(const std::string& key, const CachedModule& module) const;
  std::string index_path(const std::string& key) const { return dir_ + "/" + key + ".idx"; }
  std::string unit_path(const std::string& key, uint64_t unit) const;
  // Writes `bytes` to a temporary file and renames it to `path`.
  bool write_atomically(const std::string& path, const std::string& bytes, std::string* why) const;
  // Writes `bytes` once, to a temporary file named after `stem`, and gives it each of `paths` as
  // a name (a hard link, renamed over any file there). Which paths were so named: a file system
  // without hard links names none.
  std::vector<bool> write_linked(const std::string& stem, const std::string& bytes,
                                 const std::vector<std::string>& paths) const;
  std::string dir_;  // with the version: DIR/v<version>
  uint64_t max_bytes_;
};

// Parses a size such as "512M", "2G", "100K" or "4096" (bytes). False if it is not one.
bool parse_byte_size(const std::string& text, uint64_t* bytes);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_SYMBOL_CACHE_H_
