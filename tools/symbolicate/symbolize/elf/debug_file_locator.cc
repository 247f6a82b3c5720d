#include "symbolize/debug_file_locator.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "symbolize/elf/elf_file.h"
#include "symbolize/image_file.h"
#include "symbolize/macho/macho_file.h"
#include "text_util.h"

namespace inprof::symbolicate {
namespace {

std::string dirname_of(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string join(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

// "xx/rest" of a build-id directory tree.
std::string build_id_path(const std::string& build_id) {
  return ".build-id/" + build_id.substr(0, 2) + "/" + build_id.substr(2);
}

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 || errno != ENOENT;
}

// libdebuginfod, elfutils' client (the one libdw itself loads on demand). Loaded at run time so
// that symbolicate neither needs its headers nor pays for it when DEBUGINFOD_URLS is not set.
class Debuginfod {
 public:
  // A path in the client's cache, or "" (with the reason in `why`).
  std::string find_debuginfo(const std::vector<uint8_t>& build_id, std::string* why) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!load(why)) return {};
    void* client = begin_();
    if (!client) {
      *why = "debuginfod: cannot start the client";
      return {};
    }
    char* path = nullptr;
    int fd = find_(client, build_id.data(), static_cast<int>(build_id.size()), &path);
    end_(client);
    std::string result;
    if (fd >= 0) {
      ::close(fd);
      if (path) result = path;
    } else {
      *why = std::string("debuginfod: ") + std::strerror(-fd);
    }
    std::free(path);
    return result;
  }

 private:
  bool load(std::string* why) {
    if (begin_) return true;
    if (tried_) {
      *why = "debuginfod: libdebuginfod.so.1 not available";
      return false;
    }
    tried_ = true;
    void* lib = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      *why = "debuginfod: libdebuginfod.so.1 not available";
      return false;
    }
    begin_ = reinterpret_cast<Begin>(dlsym(lib, "debuginfod_begin"));
    find_ = reinterpret_cast<Find>(dlsym(lib, "debuginfod_find_debuginfo"));
    end_ = reinterpret_cast<End>(dlsym(lib, "debuginfod_end"));
    if (!begin_ || !find_ || !end_) {
      begin_ = nullptr;
      *why = "debuginfod: libdebuginfod.so.1 lacks the client functions";
      return false;
    }
    return true;
  }

  using Begin = void* (*)();
  using Find = int (*)(void*, const unsigned char*, int, char**);
  using End = void (*)(void*);
  std::mutex mutex_;
  bool tried_ = false;
  Begin begin_ = nullptr;
  Find find_ = nullptr;
  End end_ = nullptr;
};

Debuginfod& debuginfod() {
  static Debuginfod client;
  return client;
}

class Search {
 public:
  Search(const internal::ModuleRecord& module, const LocateOptions& options)
      : module_(module), options_(options), build_id_(hex_string(module.build_id)) {}

  std::optional<ModuleFiles> run(std::string* why);

 private:
  // The ELF file at `path` if it is the module's build (and has the right CRC when one is
  // given). Rejections of files that exist are remembered for the report.
  std::optional<ElfFileInfo> check(const std::string& path, std::optional<uint32_t> crc);
  bool try_debug(const std::string& path, const std::string& origin,
                 std::optional<uint32_t> crc = std::nullopt);
  void find_binary();
  void find_debug();

  const internal::ModuleRecord& module_;
  const LocateOptions& options_;
  std::string build_id_;
  std::optional<ElfFileInfo> binary_info_;
  ModuleFiles files_;
};

std::optional<ElfFileInfo> Search::check(const std::string& path, std::optional<uint32_t> crc) {
  if (!exists(path)) return std::nullopt;
  std::string why;
  const bool macho = is_macho_file(path);
  std::optional<ElfFileInfo> info;
  std::string macho_arch;
  if (macho) {
    // A Mach-O file (macOS): its UUID stands for the build-id; it has no debuglink.
    std::optional<MachOFile> file = read_macho_file(path, options_.arch, &why);
    if (file && options_.arch.empty() && file->uuid != build_id_) {
      // No architecture given (the symbol server): a fat file's slice with the dump's UUID.
      for (const char* arch : {"x86_64", "aarch64"}) {
        std::string ignored;
        std::optional<MachOFile> slice = read_macho_file(path, arch, &ignored);
        if (slice && slice->uuid == build_id_) {
          file = std::move(slice);
          break;
        }
      }
    }
    if (file) {
      info = ElfFileInfo{file->uuid, file->has_dwarf(), std::nullopt};
      macho_arch = file->arch;
    }
  } else {
    info = inspect_elf_file(path, &why);
  }
  if (!info) {
    files_.rejected.push_back(path + ": " + why);
    return std::nullopt;
  }
  if (!build_id_.empty() && info->build_id != build_id_) {
    files_.rejected.push_back(std::string(macho ? "UUID" : "build-id") + " mismatch: " + path +
                              " has " +
                              (info->build_id.empty() ? std::string("none") : info->build_id) +
                              ", the dump " + build_id_);
    return std::nullopt;
  }
  if (crc) {
    std::optional<uint32_t> actual = file_crc32(path);
    if (actual != crc) {
      files_.rejected.push_back(path + ": CRC differs from the binary's .gnu_debuglink");
      return std::nullopt;
    }
  }
  if (macho) {
    files_.macho = true;
    files_.arch = macho_arch;
  }
  return info;
}

bool Search::try_debug(const std::string& path, const std::string& origin,
                       std::optional<uint32_t> crc) {
  // Without a build-id, only a debuglink CRC can tie a debug file to the binary.
  if (build_id_.empty() && !crc) return false;
  std::optional<ElfFileInfo> info = check(path, crc);
  if (!info) return false;
  if (!info->has_dwarf) {
    files_.rejected.push_back(path + ": has no DWARF");
    return false;
  }
  files_.debug = path;
  files_.origin = origin;
  return true;
}

void Search::find_binary() {
  const std::string& path = module_.path;
  std::vector<std::string> candidates;
  if (!path.empty() && path[0] != '[') candidates.push_back(path);
  // Elsewhere only with a build-id to prove it is the same build.
  if (!build_id_.empty()) {
    std::string base = basename_of(path, "/");
    for (const std::string& dir : options_.binary_dirs) {
      if (!base.empty() && base[0] != '[') candidates.push_back(join(dir, base));
      if (!path.empty() && path[0] == '/') candidates.push_back(join(dir, path.substr(1)));
      candidates.push_back(join(dir, build_id_path(build_id_)));
    }
  }
  for (const std::string& candidate : candidates) {
    if (!exists(candidate) && candidate == path) {
      // A binary that moved (or a dump read on another machine) is found with --binary-dir.
      files_.rejected.push_back(path + (options_.binary_dirs.empty()
                                            ? ": not found (moved, or another machine? give "
                                              "--binary-dir DIR)"
                                            : ": not found"));
      continue;
    }
    if (auto info = check(candidate, std::nullopt)) {
      files_.binary = candidate;
      binary_info_ = info;
      return;
    }
  }
}

void Search::find_debug() {
  if (binary_info_ && binary_info_->has_dwarf) {
    files_.debug = files_.binary;
    files_.origin = "its own DWARF";
    return;
  }
  const std::string base = basename_of(module_.path, "/");
  if (files_.macho || (binary_info_ == std::nullopt && build_id_.size() == 32)) {
    // A .dSYM bundle: next to the binary (or the recorded path), then in each --debug-dir.
    const std::string dsym = base + ".dSYM/Contents/Resources/DWARF/" + base;
    std::vector<std::pair<std::string, std::string>> bundles;
    if (!files_.binary.empty()) {
      bundles.emplace_back(join(dirname_of(files_.binary), dsym), "dSYM next to the binary");
    }
    if (!module_.path.empty() && module_.path[0] == '/' &&
        dirname_of(module_.path) != dirname_of(files_.binary)) {
      bundles.emplace_back(join(dirname_of(module_.path), dsym), "dSYM next to the recorded path");
    }
    for (const std::string& dir : options_.debug_dirs) {
      bundles.emplace_back(join(dir, dsym), "dSYM in " + dir);
    }
    for (const auto& [path, origin] : bundles) {
      if (exists(path) && is_macho_file(path) && try_debug(path, origin)) return;
    }
    if (files_.macho) return;
  }
  std::optional<DebugLink> link = binary_info_ ? binary_info_->debug_link : std::nullopt;
  if (!build_id_.empty()) {
    for (const std::string& dir : options_.debug_dirs) {
      if (try_debug(join(dir, build_id_path(build_id_) + ".debug"), "build-id in " + dir)) return;
    }
  }
  for (const std::string& dir : options_.debug_dirs) {
    if (link && try_debug(join(dir, link->file), "debuglink name in " + dir, link->crc)) return;
    if (base.empty() || base[0] == '[') continue;
    if (try_debug(join(dir, base + ".debug"), "file name in " + dir)) return;
    if (try_debug(join(dir, base), "file name in " + dir)) return;
  }
  const std::string& system = options_.system_debug_dir;
  if (!system.empty() && !build_id_.empty() &&
      try_debug(join(system, build_id_path(build_id_) + ".debug"), "build-id in " + system)) {
    return;
  }
  if (link) {
    std::string dir = dirname_of(files_.binary);
    if (try_debug(join(dir, link->file), "debuglink next to the binary", link->crc)) return;
    if (try_debug(join(join(dir, ".debug"), link->file), "debuglink in .debug/", link->crc)) {
      return;
    }
    if (!system.empty() && dir[0] == '/' &&
        try_debug(join(join(system, dir.substr(1)), link->file), "debuglink in " + system,
                  link->crc)) {
      return;
    }
  }
  if (options_.debuginfod && !build_id_.empty()) {
    std::string why;
    std::string path = debuginfod().find_debuginfo(module_.build_id, &why);
    if (path.empty()) {
      files_.rejected.push_back(why);
    } else if (try_debug(path, "debuginfod")) {
      return;
    }
  }
}

std::optional<ModuleFiles> Search::run(std::string* why) {
  if (module_.flags & internal::kModuleVdso) {
    *why =
        "the vDSO has no file, and the dump holds no copy of it (a dump from an inprof "
        "that did not record it)";
    return std::nullopt;
  }
  find_binary();
  find_debug();
  if (files_.binary.empty() && files_.debug.empty()) {
    if (files_.rejected.empty()) {
      *why = module_.path.empty() || module_.path[0] == '[' ? "no file for this module"
                                                            : "no file found";
    } else {
      why->clear();
      for (size_t i = 0; i < files_.rejected.size(); ++i) {
        if (i) *why += "; ";
        *why += files_.rejected[i];
      }
    }
    return std::nullopt;
  }
  if (files_.debug.empty()) {
    files_.origin = files_.macho ? "Mach-O symbols only (no .dSYM found)"
                                 : "ELF symbols only (no debug file found)";
  }
  return files_;
}

}  // namespace

std::optional<ModuleFiles> locate_module_files(const internal::ModuleRecord& module,
                                               const LocateOptions& options, std::string* why,
                                               std::span<const uint8_t> image) {
  if ((module.flags & internal::kModuleVdso) && !image.empty()) {
    // The dump's copy of the vDSO: its symbol table names its functions.
    ModuleFiles files;
    files.binary = temporary_image_file(image, why);
    if (files.binary.empty()) return std::nullopt;
    files.origin = "ELF symbols of the vDSO's image in the dump";
    return files;
  }
  return Search(module, options).run(why);
}

}  // namespace inprof::symbolicate
