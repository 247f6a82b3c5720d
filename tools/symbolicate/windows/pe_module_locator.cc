// The Windows build's locate_module_files (debug_file_locator.h): a module of a Windows dump is
// its PE file, at the path the dump recorded or under a --binary-dir, and only if its identity
// (PDB debug id or PE code id) is the one the dump recorded. MinGW builds carry their DWARF in
// the PE; for an MSVC build DbgHelp finds the PDB and itself refuses one whose GUID and age
// differ (SYMOPT_EXACT_SYMBOLS).
#include <string>

#include "pe_file.h"
#include "symbolize/debug_file_locator.h"
#include "text_util.h"

namespace inprof::symbolicate {
namespace {

std::string join(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  return dir.back() == '\\' || dir.back() == '/' ? dir + name : dir + "\\" + name;
}

}  // namespace

std::optional<ModuleFiles> locate_module_files(const internal::ModuleRecord& module,
                                               const LocateOptions& options, std::string* why,
                                               std::span<const uint8_t> /*image: no vDSO*/) {
  if (module.build_id.empty()) {
    *why = "the dump recorded no identity for it, so no file can be proven to match";
    return std::nullopt;
  }
  struct Candidate {
    std::string path, origin;
  };
  std::vector<Candidate> candidates = {{module.path, "recorded path"}};
  for (const std::string& dir : options.binary_dirs) {
    candidates.push_back({join(dir, basename_of(module.path, "\\/")), "--binary-dir " + dir});
  }
  ModuleFiles files;
  std::string reasons;
  for (const Candidate& c : candidates) {
    std::string problem;
    std::optional<PeFileInfo> info = inspect_pe_file(c.path, &problem);
    if (info && info->identity != module.build_id) {
      problem = c.path + ": identity " + hex_string(info->identity) + ", the dump recorded " +
                hex_string(module.build_id);
      files.rejected.push_back(problem);
      info.reset();
    }
    if (!info) {
      reasons += (reasons.empty() ? "" : "; ") + problem;
      continue;
    }
    files.binary = c.path;
    if (info->has_dwarf) files.debug = c.path;
    files.origin = c.origin + (info->has_dwarf ? ", DWARF in the PE" : ", DbgHelp");
    return files;
  }
  *why = "no file with its identity " + hex_string(module.build_id) + " (" + reasons + ")";
  return std::nullopt;
}

}  // namespace inprof::symbolicate
