// profile.proto's string table: every string of a profile once, referred to by index; entry 0
// is "".
#ifndef INPROF_LIB_PPROF_STRING_TABLE_H_
#define INPROF_LIB_PPROF_STRING_TABLE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace inprof::internal {

class PprofStringTable {
 public:
  PprofStringTable() { index(""); }
  uint64_t index(std::string_view s) {
    auto [it, inserted] = ids_.try_emplace(std::string(s), strings_.size());
    if (inserted) strings_.emplace_back(s);
    return it->second;
  }
  const std::vector<std::string>& strings() const { return strings_; }

 private:
  std::unordered_map<std::string, uint64_t> ids_;
  std::vector<std::string> strings_;
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_PPROF_STRING_TABLE_H_
