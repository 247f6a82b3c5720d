#include "code_layout.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "symbolize/elf/elf_file.h"

namespace symtest {

std::string run_command(const std::string& command) {
  std::FILE* p = popen(command.c_str(), "r");
  if (!p) return {};
  std::string out;
  char buffer[65536];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, p)) > 0) out.append(buffer, n);
  pclose(p);
  return out;
}

std::pair<uint64_t, uint64_t> text_section(const std::string& path) {
  std::istringstream sections(run_command("readelf -SW '" + path + "' 2>/dev/null"));
  std::string line;
  std::pair<uint64_t, uint64_t> text{0, 0};
  while (std::getline(sections, line)) {
    size_t at = line.find(" .text ");
    if (at == std::string::npos) continue;
    std::istringstream fields(line.substr(at + 7));
    std::string type, address, offset, size;
    fields >> type >> address >> offset >> size;
    text = {std::stoull(address, nullptr, 16), std::stoull(size, nullptr, 16)};
  }
  return text;
}

std::vector<FunctionSymbol> function_symbols(const std::string& path) {
  // "  Num:    Value          Size Type    Bind   Vis      Ndx Name"; sizes may be hex (0x...).
  std::istringstream table(run_command("readelf -sW '" + path + "' 2>/dev/null"));
  std::string line;
  std::vector<FunctionSymbol> out;
  while (std::getline(table, line)) {
    std::istringstream fields(line);
    std::string num, value, size, type, bind, vis, ndx, name;
    if (!(fields >> num >> value >> size >> type >> bind >> vis >> ndx >> name)) continue;
    if (type != "FUNC" || ndx == "UND") continue;
    FunctionSymbol s;
    s.start = std::stoull(value, nullptr, 16);
    s.size = std::stoull(size, nullptr, 0);
    s.name = name.substr(0, name.find('@'));  // "memcpy@@GLIBC_2.14"
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(), [](const FunctionSymbol& a, const FunctionSymbol& b) {
    return a.start != b.start ? a.start < b.start : a.name < b.name;
  });
  return out;
}

std::string debug_file_by_build_id(const std::string& binary) {
  std::string why;
  auto info = inprof::symbolicate::inspect_elf_file(binary, &why);
  if (!info || info->build_id.empty()) return {};
  const std::string& id = info->build_id;
  std::string path = "/usr/lib/debug/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug";
  return std::filesystem::exists(path) ? path : std::string();
}

}  // namespace symtest
