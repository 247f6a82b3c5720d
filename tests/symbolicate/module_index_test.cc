// The module index (module_index.h) answers a new address exactly as the DWARF reader does, or
// not at all: a handle reads the units of half of 3,000 addresses of libc (and of this test, C++
// with templates and inlining), exports them, and the index, written and read back, must then
// name the addresses of those units, the other half included, as a fresh handle does, or leave
// them to the reader. A damaged unit or module part never answers.
#include "symbolize/cache/module_index.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include "code_layout.h"
#include "symbolize/cache/symbol_cache.h"
#include "symbolize/cache/unit_pack.h"
#include "symbolize/elf/elf_file.h"
#include "symbolize/module_symbolizer.h"
#include "test_support.h"

namespace {

namespace fs = std::filesystem;
using inprof::symbolicate::AddressSymbol;
using inprof::symbolicate::KnownSymbols;
using inprof::symbolicate::KnownUnits;
using inprof::symbolicate::ModuleIndex;
using inprof::symbolicate::ModuleSymbolizer;

std::string describe_answer(const AddressSymbol& s) {
  std::string out = s.symbol ? s.symbol->name + " at " + std::to_string(s.symbol->vaddr) + "+" +
                                   std::to_string(s.symbol->size.value_or(~0ull))
                             : "-";
  for (const auto& f : s.frames) {
    out += " > " + f.function + " @" + f.file + ":" + std::to_string(f.line) + " decl " +
           std::to_string(f.decl_line) + " key " + std::to_string(f.function_key);
  }
  return out;
}

struct Module {
  inprof::internal::ModuleRecord record;
  std::vector<uint64_t> addresses;
};

Module module_at(const std::string& path) {
  std::string why;
  Module m;
  auto elf = inprof::symbolicate::inspect_elf_file(path, &why);
  EXPECT_TRUE(elf) << why;
  if (!elf) return m;
  m.record.path = path;
  for (size_t i = 0; i + 1 < elf->build_id.size(); i += 2) {
    m.record.build_id.push_back(
        static_cast<uint8_t>(std::stoul(elf->build_id.substr(i, 2), nullptr, 16)));
  }
  auto [text, text_size] = symtest::text_section(path);
  constexpr size_t kAddresses = 3000;
  for (size_t i = 0; i < kAddresses && text_size > 2; ++i) {
    m.addresses.push_back(text + 1 + (text_size - 2) * i / kAddresses);
  }
  return m;
}

// The files of `index`, as the symbol cache writes them: the module part and each unit's.
struct Files {
  std::string module;
  std::map<uint64_t, std::string> units;
};

Files files_of(const ModuleIndex& index) {
  Files f;
  f.module = index.encode_module("key");
  for (uint64_t unit : index.added_units()) f.units[unit] = index.encode_unit("key", unit);
  return f;
}

// Read back from `files`, as the symbol cache reads them.
std::optional<ModuleIndex> read_back(const Files& files) {
  std::optional<ModuleIndex> index = ModuleIndex::decode_module("key", files.module);
  if (!index) return std::nullopt;
  auto units = std::make_shared<std::map<uint64_t, std::string>>(files.units);
  index->set_unit_source([units](uint64_t unit) -> std::optional<ModuleIndex::Unit> {
    auto it = units->find(unit);
    if (it == units->end()) return std::nullopt;
    return ModuleIndex::decode_unit("key", unit, it->second);
  });
  return index;
}

std::vector<std::string> modules_to_test() {
  std::vector<std::string> paths;
  if (void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD)) {
    Dl_info info;
    if (dladdr(dlsym(libc, "qsort"), &info) != 0) paths.push_back(fs::canonical(info.dli_fname));
  }
  paths.push_back(fs::canonical("/proc/self/exe"));
  return paths;
}

TEST(ModuleIndex, AnswersNewAddressesOfReadUnitsAsTheReaderDoes) {
  for (const std::string& path : modules_to_test()) {
    Module m = module_at(path);
    ASSERT_FALSE(m.addresses.empty()) << path;
    std::string why;
    auto first = ModuleSymbolizer::open(m.record, &why);
    auto fresh = ModuleSymbolizer::open(m.record, &why);
    ASSERT_TRUE(first && fresh) << why;
    ASSERT_TRUE(first->has_dwarf()) << path;
    for (size_t i = 0; i < m.addresses.size(); i += 2) first->symbolize(m.addresses[i]);
    ModuleIndex exported;
    first->export_index(exported);
    ASSERT_TRUE(exported.has_module());
    ASSERT_TRUE(exported.module()->aranges_usable) << path;
    ASSERT_GT(exported.added_units().size(), 0u);
    const Files files = files_of(exported);
    std::optional<ModuleIndex> index = read_back(files);
    ASSERT_TRUE(index);
    EXPECT_FALSE(ModuleIndex::decode_module("other key", files.module));
    const auto& [unit, bytes] = *files.units.begin();
    EXPECT_TRUE(ModuleIndex::decode_unit("key", unit, bytes));
    EXPECT_FALSE(ModuleIndex::decode_unit("other key", unit, bytes));
    EXPECT_FALSE(ModuleIndex::decode_unit("key", unit + 1, bytes));
    size_t answered[2] = {0, 0};  // [0] the addresses read, [1] the others
    for (size_t i = 0; i < m.addresses.size(); ++i) {
      const uint64_t vaddr = m.addresses[i];
      std::optional<AddressSymbol> answer = index->symbolize(vaddr);
      if (!answer) continue;
      ++answered[i % 2];
      EXPECT_EQ(describe_answer(*answer), describe_answer(fresh->symbolize(vaddr)))
          << path << " " << std::hex << vaddr;
    }
    // Not all: what the index cannot vouch for (a unit whose lines libdw reads, ranges libdwfl
    // places elsewhere) is left to the reader.
    EXPECT_GT(answered[0], m.addresses.size() / 2 * 9 / 10) << path;
    EXPECT_GT(answered[1], m.addresses.size() / 4) << path << ": few new addresses answered";
  }
}

// A reader handed the index's units (ModuleSymbolizer::use_known_units) takes an address's unit
// from them instead of libdwfl's search: every address, read or not, answered as without them.
TEST(ModuleIndex, AReaderGivenTheKnownUnitsAnswersAsWithout) {
  for (const std::string& path : modules_to_test()) {
    Module m = module_at(path);
    ASSERT_FALSE(m.addresses.empty()) << path;
    std::string why;
    auto first = ModuleSymbolizer::open(m.record, &why);
    auto fresh = ModuleSymbolizer::open(m.record, &why);
    auto hinted = ModuleSymbolizer::open(m.record, &why);
    ASSERT_TRUE(first && fresh && hinted) << why;
    for (size_t i = 0; i < m.addresses.size(); i += 3) first->symbolize(m.addresses[i]);
    ModuleIndex exported;
    first->export_index(exported);
    std::shared_ptr<const KnownUnits> known = exported.known_units();
    ASSERT_TRUE(known) << path;
    size_t with_unit = 0;
    for (const KnownUnits::Range& r : known->ranges) with_unit += r.unit != 0;
    EXPECT_GT(with_unit, 0u) << path;
    hinted->use_known_units(known);
    for (uint64_t vaddr : m.addresses) {
      ASSERT_EQ(describe_answer(hinted->symbolize(vaddr)), describe_answer(fresh->symbolize(vaddr)))
          << path << " " << std::hex << vaddr;
      ASSERT_EQ(hinted->unit_of(vaddr), fresh->unit_of(vaddr)) << path << " " << std::hex << vaddr;
    }
  }
}

// A reader handed the index's ELF symbols (ModuleSymbolizer::use_known_symbols), as written and
// read back, does not read the symbol table: every address, and the index it exports, as
// without them.
TEST(ModuleIndex, AReaderGivenTheKnownSymbolsAnswersAsWithout) {
  for (const std::string& path : modules_to_test()) {
    Module m = module_at(path);
    ASSERT_FALSE(m.addresses.empty()) << path;
    std::string why;
    auto first = ModuleSymbolizer::open(m.record, &why);
    auto fresh = ModuleSymbolizer::open(m.record, &why);
    auto hinted = ModuleSymbolizer::open(m.record, &why);
    ASSERT_TRUE(first && fresh && hinted) << why;
    for (size_t i = 0; i < m.addresses.size(); i += 7) first->symbolize(m.addresses[i]);
    ModuleIndex exported;
    first->export_index(exported);
    std::optional<ModuleIndex> read = read_back(files_of(exported));
    ASSERT_TRUE(read) << path;
    std::shared_ptr<const KnownSymbols> known = read->known_symbols();
    ASSERT_TRUE(known) << path;
    EXPECT_GT(known->size(), 100u) << path;
    hinted->use_known_symbols(known);
    read.reset();  // the reader keeps what it was handed
    for (uint64_t vaddr : m.addresses) {
      ASSERT_EQ(describe_answer(hinted->symbolize(vaddr)), describe_answer(fresh->symbolize(vaddr)))
          << path << " " << std::hex << vaddr;
    }
    ModuleIndex from_hinted, from_fresh;
    hinted->export_index(from_hinted);
    fresh->export_index(from_fresh);
    EXPECT_EQ(from_hinted.encode_module("key"), from_fresh.encode_module("key")) << path;
  }
  // Handed once the reader has read its own: kept as read.
  Module m = module_at(fs::canonical("/proc/self/exe"));
  std::string why;
  auto reader = ModuleSymbolizer::open(m.record, &why);
  auto fresh = ModuleSymbolizer::open(m.record, &why);
  ASSERT_TRUE(reader && fresh) << why;
  const uint64_t vaddr = m.addresses[m.addresses.size() / 2];
  const std::string before = describe_answer(reader->symbolize(vaddr));
  reader->use_known_symbols(std::make_shared<KnownSymbols>());
  EXPECT_EQ(describe_answer(reader->symbolize(m.addresses[1])),
            describe_answer(fresh->symbolize(m.addresses[1])));
  EXPECT_EQ(describe_answer(reader->symbolize(vaddr)), before);
}

// A symbol without a size runs to the next one, but not past the end of its section (_init:
// .init, then the PLT, which no symbol holds). The reader marks that end with a nameless entry,
// which the index keeps with the symbols: there, too, no symbol holds the address, and no
// function is named "".
TEST(ModuleIndex, NoSymbolPastTheSectionOfASizeLessSymbol) {
  Module m = module_at(fs::canonical("/proc/self/exe"));
  const std::vector<symtest::FunctionSymbol> symbols = symtest::function_symbols(m.record.path);
  auto init = std::find_if(symbols.begin(), symbols.end(), [](const symtest::FunctionSymbol& s) {
    return s.name == "_init" && s.size == 0;
  });
  if (init == symbols.end()) GTEST_SKIP() << "this build's executable has no size-less _init";
  std::string why;
  auto first = ModuleSymbolizer::open(m.record, &why);
  auto fresh = ModuleSymbolizer::open(m.record, &why);
  ASSERT_TRUE(first && fresh) << why;
  first->symbolize(init->start);
  ModuleIndex exported;
  first->export_index(exported);
  std::optional<ModuleIndex> index = read_back(files_of(exported));
  ASSERT_TRUE(index);
  size_t past = 0;  // answers without a symbol, past .init's end
  for (uint64_t vaddr = init->start; vaddr < init->start + 0x100; ++vaddr) {
    std::optional<AddressSymbol> answer = index->symbolize(vaddr);
    if (!answer) continue;
    EXPECT_EQ(describe_answer(*answer), describe_answer(fresh->symbolize(vaddr)))
        << std::hex << vaddr;
    past += !answer->symbol;
  }
  EXPECT_GT(past, 0u);
}

TEST(ModuleIndex, DamageNeverAnswers) {
  Module m = module_at(fs::canonical("/proc/self/exe"));
  std::string why;
  auto first = ModuleSymbolizer::open(m.record, &why);
  auto fresh = ModuleSymbolizer::open(m.record, &why);
  ASSERT_TRUE(first && fresh) << why;
  for (uint64_t vaddr : m.addresses) first->symbolize(vaddr);
  ModuleIndex exported;
  first->export_index(exported);
  const Files good = files_of(exported);
  // The module part (symbols, ranges): nothing decodes.
  const std::string& head = good.module;
  std::string head_flipped = head;
  head_flipped[head.size() / 2] = static_cast<char>(head_flipped[head.size() / 2] ^ 1);
  for (const std::string& bad : {head.substr(0, head.size() / 3), head.substr(0, 20), std::string(),
                                 head + "x", head_flipped}) {
    EXPECT_FALSE(ModuleIndex::decode_module("key", bad)) << bad.size();
  }
  // A unit's file: that unit no longer answers, the others still answer right.
  size_t damaged = 0;
  for (const auto& [unit, bytes] : good.units) {
    if (++damaged > 4) break;
    for (size_t at : {bytes.size() - 1, bytes.size() / 2, size_t(30)}) {
      Files files = good;
      std::string& b = files.units[unit];
      b[at] = static_cast<char>(b[at] ^ 0x10);
      files.units[unit + 1] = b.substr(0, b.size() / 2);  // truncated, under another unit's name
      std::optional<ModuleIndex> index = read_back(files);
      ASSERT_TRUE(index);
      EXPECT_FALSE(index->has_unit(unit));
      size_t answered = 0;
      for (uint64_t vaddr : m.addresses) {
        if (std::optional<AddressSymbol> answer = index->symbolize(vaddr)) {
          ++answered;
          EXPECT_EQ(describe_answer(*answer), describe_answer(fresh->symbolize(vaddr)))
              << std::hex << vaddr;
        }
      }
      EXPECT_LT(answered, m.addresses.size()) << "damage at " << at << " went unnoticed";
    }
  }
}

// The units a run adds are one file with a name per unit (unit_pack.h): read back through the
// cache, each answers as a fresh reader does; a name replaced by damage loses that unit only;
// eviction counts the file once and frees it with its last name.
TEST(ModuleIndex, UnitsAddedTogetherAreOneFileNamedPerUnit) {
  Module m = module_at(fs::canonical("/proc/self/exe"));
  std::string why;
  auto first = ModuleSymbolizer::open(m.record, &why);
  auto fresh = ModuleSymbolizer::open(m.record, &why);
  ASSERT_TRUE(first && fresh) << why;
  for (uint64_t vaddr : m.addresses) first->symbolize(vaddr);
  ModuleIndex exported;
  first->export_index(exported);
  const std::vector<uint64_t> units = exported.added_units();
  ASSERT_GE(units.size(), 3u);
  symtest::TempDir dir;
  inprof::symbolicate::SymbolCache cache(dir.path("c"), uint64_t{1} << 30);
  ASSERT_TRUE(cache.store_index("key", exported, &why)) << why;
  // Every unit's name is a link to one file.
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(cache.directory())) {
    if (entry.path().extension() == ".unit") names.push_back(entry.path().string());
  }
  ASSERT_EQ(names.size(), units.size());
  struct stat first_st {};
  ASSERT_EQ(stat(names[0].c_str(), &first_st), 0);
  EXPECT_EQ(first_st.st_nlink, units.size());
  for (const std::string& name : names) {
    struct stat st {};
    ASSERT_EQ(stat(name.c_str(), &st), 0);
    EXPECT_EQ(st.st_ino, first_st.st_ino) << name;
  }
  auto answers = [&](ModuleIndex& index) {
    size_t answered = 0;
    for (uint64_t vaddr : m.addresses) {
      if (std::optional<AddressSymbol> answer = index.symbolize(vaddr)) {
        ++answered;
        EXPECT_EQ(describe_answer(*answer), describe_answer(fresh->symbolize(vaddr)))
            << std::hex << vaddr;
      }
    }
    return answered;
  };
  ModuleIndex read = cache.load_index("key");
  for (uint64_t unit : units) EXPECT_TRUE(read.has_unit(unit)) << unit;
  const size_t all = answers(read);
  EXPECT_GT(all, m.addresses.size() / 2);
  // One name replaced by the pack with a byte of its unit flipped: that unit misses, not others.
  const std::string damaged_name = names[1];
  const uint64_t damaged_unit =
      std::stoull(fs::path(damaged_name).stem().extension().string().substr(1), nullptr, 16);
  std::string bytes;
  {
    std::ifstream in(damaged_name, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  auto blob = inprof::symbolicate::find_in_unit_pack("key", damaged_unit, bytes);
  ASSERT_TRUE(blob);
  const size_t at = static_cast<size_t>(blob->data() - bytes.data()) + blob->size() / 2;
  bytes[at] = static_cast<char>(bytes[at] ^ 0x20);
  {
    std::ofstream out(damaged_name + ".new", std::ios::binary);
    out << bytes;
  }
  fs::rename(damaged_name + ".new", damaged_name);
  ModuleIndex after = cache.load_index("key");
  EXPECT_FALSE(after.has_unit(damaged_unit));
  for (uint64_t unit : units) {
    if (unit != damaged_unit) {
      EXPECT_TRUE(after.has_unit(unit)) << unit;
    }
  }
  EXPECT_LT(answers(after), all);
  // Eviction: the pack's names count once (a bound of the three files' sizes keeps all), and
  // the pack, the oldest, goes with all its names, then counts as freed.
  const std::string idx = cache.directory() + "/key.idx";
  const auto now = fs::file_time_type::clock::now();
  fs::last_write_time(names[0], now - std::chrono::hours(3));  // every name: one file
  fs::last_write_time(idx, now - std::chrono::hours(2));
  fs::last_write_time(damaged_name, now - std::chrono::hours(1));
  const uint64_t three = fs::file_size(names[0]) + fs::file_size(idx) + fs::file_size(damaged_name);
  inprof::symbolicate::SymbolCache(dir.path("c"), three).evict();
  for (const std::string& name : names) EXPECT_TRUE(fs::exists(name)) << name;
  inprof::symbolicate::SymbolCache(dir.path("c"), three - 1).evict();
  for (const std::string& name : names) {
    EXPECT_EQ(fs::exists(name), name == damaged_name) << name;
  }
  EXPECT_TRUE(fs::exists(idx));
}

// A unit decoded with the bytes' keeper (a mapped cache file) leaves its line rows in them,
// uncopied, and keeps them for as long as it lives: it answers as a unit that copied them.
TEST(ModuleIndex, AUnitDecodedWithItsFileKeepsItsRowsThere) {
  Module m = module_at(fs::canonical("/proc/self/exe"));
  std::string why;
  auto reader = ModuleSymbolizer::open(m.record, &why);
  ASSERT_TRUE(reader) << why;
  for (uint64_t vaddr : m.addresses) reader->symbolize(vaddr);
  ModuleIndex exported;
  reader->export_index(exported);
  size_t checked = 0;
  for (const auto& [unit, bytes] : files_of(exported).units) {
    std::optional<ModuleIndex::Unit> copied = ModuleIndex::decode_unit("key", unit, bytes);
    ASSERT_TRUE(copied);
    if (copied->lines.rows() == 0) continue;
    std::shared_ptr<char[]> file(new char[bytes.size()]);
    std::memcpy(file.get(), bytes.data(), bytes.size());
    std::shared_ptr<const void> owner(file, file.get());
    std::optional<ModuleIndex::Unit> kept =
        ModuleIndex::decode_unit("key", unit, std::string_view(file.get(), bytes.size()), owner);
    ASSERT_TRUE(kept);
    const char* rows = kept->lines.packed().data();
    EXPECT_TRUE(rows >= file.get() && rows < file.get() + bytes.size()) << "rows copied";
    EXPECT_FALSE(copied->lines.packed().data() >= bytes.data() &&
                 copied->lines.packed().data() < bytes.data() + bytes.size());
    EXPECT_GT(owner.use_count(), 2);  // the unit holds the bytes too
    file.reset();
    owner.reset();
    for (const auto& block : copied->lines.blocks()) {
      for (uint64_t address : {block.address, block.address + 1, block.address + 7}) {
        std::optional<inprof::symbolicate::LineTable::Location> a, b;
        ASSERT_TRUE(kept->lines.find(address, &a));
        ASSERT_TRUE(copied->lines.find(address, &b));
        ASSERT_EQ(a.has_value(), b.has_value()) << std::hex << address;
        if (a) {
          EXPECT_EQ(a->file, b->file);
          EXPECT_EQ(a->line, b->line);
        }
      }
    }
    if (++checked == 5) break;
  }
  EXPECT_GT(checked, 0u);
}

}  // namespace
