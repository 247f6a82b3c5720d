#include "symbolize/demangle.h"

#include <cxxabi.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace inprof::symbolicate {
namespace {

// Rust's legacy mangling is Itanium's with a hash as the last path element and $..$ escapes.
std::string tidy_rust_legacy(std::string name) {
  size_t h = name.rfind("::h");
  if (h == std::string::npos || name.size() - h != 19) return name;
  for (size_t i = h + 3; i < name.size(); ++i) {
    if (!std::isxdigit(static_cast<unsigned char>(name[i]))) return name;
  }
  name.resize(h);
  static const std::pair<const char*, const char*> kEscapes[] = {
      {"$LT$", "<"},  {"$GT$", ">"},  {"$RF$", "&"},  {"$BP$", "*"},  {"$C$", ","},
      {"$SP$", "@"},  {"$u20$", " "}, {"$u27$", "'"}, {"$u5b$", "["}, {"$u5d$", "]"},
      {"$u7b$", "{"}, {"$u7d$", "}"}, {"$u7e$", "~"}, {"..", "::"}};
  std::string out;
  for (size_t i = 0; i < name.size();) {
    // A path element starting with '$' is written "_$".
    if (name.compare(i, 2, "_$") == 0 && (i == 0 || name.compare(i - 2, 2, "::") == 0)) ++i;
    bool replaced = false;
    for (const auto& [from, to] : kEscapes) {
      size_t n = std::strlen(from);
      if (name.compare(i, n, from) == 0) {
        out += to;
        i += n;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += name[i++];
  }
  return out;
}

}  // namespace

std::string demangle(const char* name) {
  if (!name) return {};
  if (name[0] != '_' || name[1] != 'Z') return name;
  int status = 0;
  char* out = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || !out) return name;
  std::string result(out);
  std::free(out);
  return tidy_rust_legacy(std::move(result));
}

}  // namespace inprof::symbolicate
