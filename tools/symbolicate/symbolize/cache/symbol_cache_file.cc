#include "symbolize/cache/symbol_cache_file.h"

#include <algorithm>
#include <cstring>
#include <string_view>
#include <utility>

#include "symbolize/byte_io.h"

namespace inprof::symbolicate {
namespace {

constexpr char kSymbolCacheMagic[8] = {'I', 'N', 'P', 'R', 'S', 'Y', 'M', 'C'};

// Function and file names repeat across addresses: each is stored once, referred to by index.
// Keyed by views of the strings it is given, which outlive it (the module being encoded).
class StringTable {
 public:
  uint32_t index(const std::string& s) {
    auto [it, inserted] = index_.try_emplace(s, static_cast<uint32_t>(strings_.size()));
    if (inserted) strings_.push_back(it->first);
    return it->second;
  }
  const std::vector<std::string_view>& strings() const { return strings_; }

 private:
  std::unordered_map<std::string_view, uint32_t> index_;
  std::vector<std::string_view> strings_;
};

}  // namespace

// A map's entries in address order, so that the same contents always make the same bytes.
// Sorted with their addresses beside them (keys are unique): no entry is read while sorting.
template <typename Map>
std::vector<const typename Map::value_type*> by_address(const Map& map) {
  std::vector<std::pair<uint64_t, const typename Map::value_type*>> keyed;
  keyed.reserve(map.size());
  for (const auto& entry : map) keyed.emplace_back(entry.first, &entry);
  std::sort(keyed.begin(), keyed.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<const typename Map::value_type*> sorted;
  sorted.reserve(keyed.size());
  for (const auto& k : keyed) sorted.push_back(k.second);
  return sorted;
}

std::string encode_symbol_cache(std::string_view key, const CachedModule& module) {
  const auto sorted = by_address(module.symbols);
  StringTable table;
  ByteWriter body;
  body.u64(sorted.size());
  for (const auto* entry : sorted) {
    const AddressSymbol& s = entry->second;
    body.u64(entry->first);
    body.u8(s.symbol.has_value());
    if (s.symbol) {
      body.u32(table.index(s.symbol->name));
      body.u64(s.symbol->vaddr);
      body.u8(s.symbol->size.has_value());
      body.u64(s.symbol->size.value_or(0));
    }
    body.u32(static_cast<uint32_t>(s.frames.size()));
    for (const SourceFrame& f : s.frames) {
      body.u32(table.index(f.function));
      body.u32(table.index(f.file));
      body.u32(f.decl_line);
      body.u32(f.line);
      body.u64(f.function_key);
    }
  }
  const auto slots = by_address(module.return_slots);
  body.u64(slots.size());
  for (const auto* entry : slots) {
    body.u64(entry->first);
    body.u32(entry->second ? *entry->second : UINT32_MAX);
  }
  const auto sites = by_address(module.syscall_sites);
  body.u64(sites.size());
  for (const auto* entry : sites) {
    body.u64(entry->first);
    body.u8(entry->second ? uint8_t(*entry->second) : 2);
  }
  ByteWriter file;
  file.out().append(kSymbolCacheMagic, sizeof kSymbolCacheMagic);
  file.u32(kSymbolCacheVersion);
  file.bytes(key);
  file.u32(static_cast<uint32_t>(table.strings().size()));
  for (std::string_view s : table.strings()) file.bytes(s);
  file.out().append(body.out());
  file.u64(fast_checksum(file.out().data(), file.out().size()));
  return std::move(file.out());
}

namespace {

// Reads the symbol of an entry, after its address, into `out`; with `out` null only past it,
// checked alike (every name within the record's string table).
bool read_symbol(ByteReader& in, const std::vector<std::string_view>& strings, AddressSymbol* out) {
  auto string_at = [&](std::string* s) {
    uint32_t i;
    if (!in.u32(&i) || i >= strings.size()) return false;
    if (s) s->assign(strings[i]);
    return true;
  };
  uint8_t has_symbol;
  if (!in.u8(&has_symbol) || has_symbol > 1) return false;
  if (has_symbol) {
    NativeSymbolInfo info;
    uint8_t has_size;
    uint64_t size;
    if (!string_at(out ? &info.name : nullptr) || !in.u64(&info.vaddr) || !in.u8(&has_size) ||
        has_size > 1 || !in.u64(&size)) {
      return false;
    }
    if (has_size) info.size = size;
    if (out) out->symbol = std::move(info);
  }
  uint32_t frames;
  if (!in.u32(&frames) || frames > in.left() / 24) return false;
  if (!out) {
    for (uint32_t k = 0; k < frames; ++k) {
      uint32_t decl_line, line;
      uint64_t function_key;
      if (!string_at(nullptr) || !string_at(nullptr) || !in.u32(&decl_line) || !in.u32(&line) ||
          !in.u64(&function_key)) {
        return false;
      }
    }
    return true;
  }
  out->frames.resize(frames);
  for (SourceFrame& f : out->frames) {
    if (!string_at(&f.function) || !string_at(&f.file) || !in.u32(&f.decl_line) ||
        !in.u32(&f.line) || !in.u64(&f.function_key)) {
      return false;
    }
  }
  return true;
}

// Where a record lies in the file, and which of its symbols to decode.
struct RecordPlace {
  size_t start;                         // its offset in the file
  uint32_t number;                      // 0 for the first
  const std::vector<uint64_t>* wanted;  // sorted; null: all
};

// Decodes the record at the start of `bytes` into `module`: its length, or 0 if it is not a
// complete, intact record of this version for `key` (`module` is then to be dropped). Symbols
// not wanted go to `undecoded`, their record's strings to `module.record_strings`.
size_t decode_record(std::string_view key, std::string_view bytes, const RecordPlace& place,
                     CachedModule& module, std::vector<CachedModule::Undecoded>& undecoded) {
  if (bytes.size() < sizeof kSymbolCacheMagic + 8 ||
      std::memcmp(bytes.data(), kSymbolCacheMagic, sizeof kSymbolCacheMagic) != 0) {
    return 0;
  }
  // Parsed first (every read is bounded), then checked: the record's end is where parsing ends.
  ByteReader in(bytes.substr(sizeof kSymbolCacheMagic));
  uint32_t version, string_count;
  std::string_view stored_key;
  if (!in.u32(&version) || version != kSymbolCacheVersion || !in.bytes(&stored_key) ||
      stored_key != key || !in.u32(&string_count) || string_count > in.left() / 4) {
    return 0;
  }
  std::vector<std::string_view> strings(string_count);
  for (std::string_view& s : strings) {
    if (!in.bytes(&s)) return 0;
  }
  uint64_t count;
  if (!in.u64(&count) || count > in.left() / 13) return 0;
  auto& symbols = module.symbols;
  symbols.reserve(symbols.size() + count);
  const size_t undecoded_before = undecoded.size();
  auto wanted = place.wanted ? place.wanted->begin() : std::vector<uint64_t>::const_iterator();
  for (uint64_t k = 0, last = 0; k < count; ++k) {
    uint64_t vaddr;
    // Written in address order, each once (encode_symbol_cache): anything else is damage.
    if (!in.u64(&vaddr) || (k > 0 && vaddr <= last)) return 0;
    last = vaddr;
    if (place.wanted) {
      wanted = std::lower_bound(wanted, place.wanted->end(), vaddr);
      if (wanted == place.wanted->end() || *wanted != vaddr) {
        undecoded.push_back(
            {vaddr, place.number, place.start + sizeof kSymbolCacheMagic + in.position()});
        if (!read_symbol(in, strings, nullptr)) return 0;
        continue;
      }
    }
    AddressSymbol s;
    if (!read_symbol(in, strings, &s)) return 0;
    symbols.emplace(vaddr, std::move(s));
  }
  if (!in.u64(&count) || count > in.left() / 12) return 0;
  for (uint64_t k = 0; k < count; ++k) {
    uint64_t vaddr;
    uint32_t slot;
    if (!in.u64(&vaddr) || !in.u32(&slot)) return 0;
    std::optional<unsigned> value;
    if (slot != UINT32_MAX) value = slot;
    if (!module.return_slots.emplace(vaddr, value).second) return 0;
  }
  if (!in.u64(&count) || count > in.left() / 9) return 0;
  for (uint64_t k = 0; k < count; ++k) {
    uint64_t vaddr;
    uint8_t site;
    if (!in.u64(&vaddr) || !in.u8(&site) || site > 2) return 0;
    std::optional<bool> value;
    if (site < 2) value = site == 1;
    if (!module.syscall_sites.emplace(vaddr, value).second) return 0;
  }
  const size_t checked = sizeof kSymbolCacheMagic + in.position();
  uint64_t checksum;
  if (!in.u64(&checksum) || fast_checksum(bytes.data(), checked) != checksum) return 0;
  if (undecoded.size() > undecoded_before) {  // its strings are needed to decode those later
    module.record_strings.resize(place.number + 1);
    module.record_strings[place.number] = std::move(strings);
  }
  return checked + 8;
}

}  // namespace

std::optional<CachedModule> decode_symbol_cache(std::string_view key, std::string_view bytes,
                                                const std::vector<uint64_t>* wanted,
                                                std::shared_ptr<const char> owner) {
  CachedModule module;
  std::vector<CachedModule::Undecoded> undecoded;
  size_t at = decode_record(key, bytes, {0, 0, wanted}, module, undecoded);
  if (at == 0) return std::nullopt;
  module.origin.records = 1;
  while (at < bytes.size()) {
    CachedModule added;  // an address in two records (two runs learnt it) keeps the first's
    const size_t undecoded_before = undecoded.size();
    const size_t n =
        decode_record(key, bytes.substr(at), {at, module.origin.records, wanted}, added, undecoded);
    if (n == 0) {
      undecoded.resize(undecoded_before);  // none of a damaged record
      break;
    }
    at += n;
    ++module.origin.records;
    module.symbols.merge(added.symbols);
    module.return_slots.merge(added.return_slots);
    module.syscall_sites.merge(added.syscall_sites);
    if (added.record_strings.size() > module.record_strings.size()) {
      module.record_strings.resize(added.record_strings.size());
    }
    for (size_t r = 0; r < added.record_strings.size(); ++r) {
      if (!added.record_strings[r].empty()) {
        module.record_strings[r] = std::move(added.record_strings[r]);
      }
    }
  }
  module.origin.intact_bytes = at;
  if (!undecoded.empty()) {
    // By address; of one address in several records, the first record's first (stable).
    std::stable_sort(undecoded.begin(), undecoded.end(),
                     [](const auto& a, const auto& b) { return a.vaddr < b.vaddr; });
    module.undecoded = std::move(undecoded);
    module.file = bytes;
    module.file_owner = std::move(owner);
  }
  return module;
}

const AddressSymbol* CachedModule::find_symbol(uint64_t vaddr) {
  if (auto it = symbols.find(vaddr); it != symbols.end()) return &it->second;
  auto u = std::lower_bound(undecoded.begin(), undecoded.end(), vaddr,
                            [](const Undecoded& e, uint64_t v) { return e.vaddr < v; });
  if (u == undecoded.end() || u->vaddr != vaddr) return nullptr;
  ByteReader in(file.substr(u->at));
  AddressSymbol s;
  if (!read_symbol(in, record_strings[u->record], &s)) return nullptr;  // read once already
  return &symbols.emplace(vaddr, std::move(s)).first->second;
}

void CachedModule::decode_all() {
  for (const Undecoded& u : undecoded) {
    if (symbols.count(u.vaddr)) continue;  // decoded already, or an earlier record's
    ByteReader in(file.substr(u.at));
    AddressSymbol s;
    if (read_symbol(in, record_strings[u.record], &s)) symbols.emplace(u.vaddr, std::move(s));
  }
  undecoded.clear();
  record_strings.clear();
  file = {};
  file_owner.reset();
}

const AddressSymbol& CachedModule::learn_symbol(uint64_t vaddr, AddressSymbol symbol) {
  auto [it, inserted] = symbols.emplace(vaddr, std::move(symbol));
  if (inserted) learnt_symbols.push_back(vaddr);
  return it->second;
}

void CachedModule::learn_return_slot(uint64_t vaddr, std::optional<unsigned> slot) {
  if (return_slots.emplace(vaddr, slot).second) learnt_return_slots.push_back(vaddr);
}

void CachedModule::learn_syscall_site(uint64_t vaddr, std::optional<bool> site) {
  if (syscall_sites.emplace(vaddr, site).second) learnt_syscall_sites.push_back(vaddr);
}

CachedModule CachedModule::learnt_part() const {
  CachedModule part;
  for (uint64_t vaddr : learnt_symbols) part.symbols.emplace(vaddr, symbols.at(vaddr));
  for (uint64_t vaddr : learnt_return_slots) {
    part.return_slots.emplace(vaddr, return_slots.at(vaddr));
  }
  for (uint64_t vaddr : learnt_syscall_sites) {
    part.syscall_sites.emplace(vaddr, syscall_sites.at(vaddr));
  }
  return part;
}

}  // namespace inprof::symbolicate
