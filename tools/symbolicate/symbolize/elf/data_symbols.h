// A module's data objects by address, from its ELF symbol tables (.symtab, else .dynsym, of the
// binary and of its debug file): what names the lock a thread waits on when its futex word lies
// in a global or static variable (issue 43). Code symbols are the symbolizer's; this reads only
// STT_OBJECT entries with a size.
#ifndef INPROF_TOOLS_SYMBOLICATE_SYMBOLIZE_ELF_DATA_SYMBOLS_H_
#define INPROF_TOOLS_SYMBOLICATE_SYMBOLIZE_ELF_DATA_SYMBOLS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace inprof::symbolicate {

class DataSymbols {
 public:
  // The objects of every readable file among `paths` (missing or non-ELF ones are skipped).
  static DataSymbols load(const std::vector<std::string>& paths);

  struct Found {
    std::string name;     // demangled: "g_cache_mutex", "Registry::instance()::mu"
    uint64_t offset = 0;  // of the address inside the object
  };
  // The object holding module virtual address `vaddr`, if one does.
  std::optional<Found> find(uint64_t vaddr) const;
  size_t size() const { return objects_.size(); }

 private:
  struct Object {
    uint64_t start = 0, size = 0;
    std::string name;  // as in the file (mangled)
  };
  void read_file(const std::string& path);
  std::vector<Object> objects_;  // by start
};

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_SYMBOLIZE_ELF_DATA_SYMBOLS_H_
