// The file forms of a module index (module_index.h), in the symbol cache's directory:
//
//   <key>.idx           magic, version, key, the module part (symbols, aranges), checksum
//   <key>.<unit>.unit   magic, version, key, the unit's offset, its strings, tree (fixed-size
//                       records) and line table (packed_line_table.h: its files, row count,
//                       highest address, blocks, packed rows), checksum
//
// A unit's file is read, checked and decoded the first time an address falls in the unit, so a
// warm run pays only for the units it uses, and writes only those it adds.
#include <climits>
#include <unordered_map>

#include "symbolize/byte_io.h"
#include "symbolize/cache/module_index.h"

namespace inprof::symbolicate {
namespace {

constexpr char kModuleIndexMagic[8] = {'I', 'N', 'P', 'R', 'I', 'D', 'X', '1'};
constexpr char kUnitMagic[8] = {'I', 'N', 'P', 'R', 'U', 'N', 'I', 'T'};

// A unit's arrays are fixed-size records, read back with one copy each (a warm run decodes
// whole units of hundreds of thousands of line rows).
struct NodeRecord {
  uint64_t die;
  uint32_t parent, first_child, end_child, name, file, decl_line, call_line, call_file;
};
struct RangeRecord {
  uint64_t low, high;
  uint32_t parent, node;
};
static_assert(sizeof(NodeRecord) == 40 && sizeof(RangeRecord) == 24 &&
              sizeof(PackedLineTable::Block) == 16);

template <typename Record>
void put_records(ByteWriter& out, const std::vector<Record>& records) {
  out.u64(records.size());
  out.out().append(reinterpret_cast<const char*>(records.data()), records.size() * sizeof(Record));
}

// The bytes of `count` records of `Record`, left where they are (a unit's tree is converted from
// them straight into its nodes: no copy in between).
template <typename Record>
bool get_record_bytes(ByteReader& in, uint64_t* count, std::string_view* bytes) {
  return in.u64(count) && *count <= in.left() / sizeof(Record) &&
         in.take(*count * sizeof(Record), bytes);
}

template <typename Record>
Record record_at(std::string_view bytes, size_t i) {
  Record r;
  std::memcpy(&r, bytes.data() + i * sizeof r, sizeof r);
  return r;
}

template <typename Record>
bool get_records(ByteReader& in, std::vector<Record>* records) {
  uint64_t count;
  if (!in.u64(&count) || count > in.left() / sizeof(Record)) return false;
  records->resize(count);
  std::string_view bytes;
  if (!in.take(count * sizeof(Record), &bytes)) return false;
  std::memcpy(static_cast<void*>(records->data()), bytes.data(), bytes.size());
  return true;
}

}  // namespace

std::string ModuleIndex::encode_unit(std::string_view key, uint64_t offset) const {
  auto it = units_.find(offset);
  if (it == units_.end() || !it->second) return {};
  const Unit& unit = *it->second;
  const UnitTree& tree = unit.tree;
  ByteWriter out;
  out.out().append(kUnitMagic, sizeof kUnitMagic);
  out.u32(kModuleIndexVersion);
  out.bytes(key);
  out.u64(offset);
  out.u32(static_cast<uint32_t>(tree.strings.size()));
  for (const std::string& s : tree.strings) out.bytes(s);
  std::vector<NodeRecord> nodes(tree.nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const UnitTree::Node& n = tree.nodes[i];
    nodes[i] = {n.die,  n.parent,    n.first_child, n.end_child, n.name,
                n.file, n.decl_line, n.call_line,   n.call_file};
  }
  put_records(out, nodes);
  std::vector<RangeRecord> ranges(tree.ranges.size());
  for (size_t i = 0; i < ranges.size(); ++i) {
    const UnitTree::Range& r = tree.ranges[i];
    ranges[i] = {r.low, r.high, r.parent, r.node};
  }
  put_records(out, ranges);
  const PackedLineTable& lines = unit.lines;
  out.u32(static_cast<uint32_t>(lines.files().size()));
  for (const std::string& f : lines.files()) out.bytes(f);
  out.u64(lines.rows());
  out.u64(lines.last_address());
  put_records(out, lines.blocks());
  out.u64(lines.packed().size());
  out.out().append(lines.packed());
  out.u64(fast_checksum(out.out().data(), out.out().size()));
  return std::move(out.out());
}

std::optional<ModuleIndex::Unit> ModuleIndex::decode_unit(std::string_view key, uint64_t offset,
                                                          std::string_view blob,
                                                          std::shared_ptr<const void> owner) {
  if (blob.size() < sizeof kUnitMagic + 8 ||
      std::memcmp(blob.data(), kUnitMagic, sizeof kUnitMagic) != 0) {
    return std::nullopt;
  }
  uint64_t checksum;
  std::memcpy(&checksum, blob.data() + blob.size() - 8, 8);
  blob.remove_suffix(8);
  if (fast_checksum(blob.data(), blob.size()) != checksum) return std::nullopt;
  if (!owner) {  // the tree and the line rows stay in the bytes: a copy of its own, kept
    auto copy = std::make_shared<std::string>(blob);
    blob = *copy;
    owner = std::move(copy);
  }
  ByteReader in(blob.substr(sizeof kUnitMagic));
  uint32_t version;
  std::string_view stored_key;
  uint64_t stored_offset;
  if (!in.u32(&version) || version != kModuleIndexVersion || !in.bytes(&stored_key) ||
      stored_key != key || !in.u64(&stored_offset) || stored_offset != offset) {
    return std::nullopt;
  }
  Unit unit;
  StoredUnitTree& tree = unit.stored.emplace();
  uint32_t count;
  if (!in.u32(&count) || count == 0 || count > in.left() / 4) return std::nullopt;
  tree.strings.resize(count);
  for (std::string_view& s : tree.strings) {
    if (!in.bytes(&s)) return std::nullopt;
  }
  if (!tree.strings[0].empty()) return std::nullopt;
  uint64_t node_count, range_count;
  std::string_view nodes, ranges;
  if (!get_record_bytes<NodeRecord>(in, &node_count, &nodes) || node_count == 0 ||
      !get_record_bytes<RangeRecord>(in, &range_count, &ranges) || node_count > UINT32_MAX ||
      range_count > UINT32_MAX) {
    return std::nullopt;
  }
  // Checked whole, as a tree converted from them would be; then read in place (StoredUnitTree).
  const size_t strings = tree.strings.size();
  for (size_t i = 0; i < node_count; ++i) {
    const auto r = record_at<NodeRecord>(nodes, i);
    if (r.parent >= node_count || r.first_child > r.end_child || r.end_child > range_count ||
        r.name >= strings || r.file >= strings || r.call_file >= strings) {
      return std::nullopt;
    }
  }
  for (size_t i = 0; i < range_count; ++i) {
    const auto r = record_at<RangeRecord>(ranges, i);
    if (r.parent >= node_count || r.node == 0 || r.node >= node_count) return std::nullopt;
  }
  for (size_t i = 0; i < node_count; ++i) {  // each node's children are its own, in order
    const auto n = record_at<NodeRecord>(nodes, i);
    for (uint32_t r = n.first_child; r < n.end_child; ++r) {
      const auto range = record_at<RangeRecord>(ranges, r);
      if (range.parent != i ||
          (r > n.first_child && record_at<RangeRecord>(ranges, r - 1).low > range.low)) {
        return std::nullopt;
      }
    }
  }
  tree.node_records = nodes;
  tree.range_records = ranges;
  tree.node_count = static_cast<uint32_t>(node_count);
  tree.range_count = static_cast<uint32_t>(range_count);
  tree.keeper = owner;
  if (!in.u32(&count) || count > in.left() / 4) return std::nullopt;
  std::vector<std::string> files(count);
  for (std::string& f : files) {
    std::string_view v;
    if (!in.bytes(&v)) return std::nullopt;
    f.assign(v);
  }
  uint64_t rows, last_address, size;
  std::vector<PackedLineTable::Block> blocks;
  std::string_view packed;
  if (!in.u64(&rows) || !in.u64(&last_address) || !get_records(in, &blocks) || !in.u64(&size) ||
      !in.take(size, &packed) || in.left() != 0) {
    return std::nullopt;
  }
  std::optional<PackedLineTable> lines = PackedLineTable::from_parts(
      std::move(files), rows, last_address, std::move(blocks), packed, std::move(owner));
  if (!lines) return std::nullopt;
  unit.lines = std::move(*lines);
  return unit;
}

UnitTree::Node StoredUnitTree::node(uint32_t i) const {
  const auto r = record_at<NodeRecord>(node_records, i);
  UnitTree::Node n;
  n.die = r.die;
  n.parent = r.parent;
  n.first_child = r.first_child;
  n.end_child = r.end_child;
  n.name = r.name;
  n.file = r.file;
  n.decl_line = r.decl_line;
  n.call_line = r.call_line;
  n.call_file = r.call_file;
  n.expanded = n.described = true;
  return n;
}

UnitTree::Range StoredUnitTree::range(uint32_t i) const {
  const auto r = record_at<RangeRecord>(range_records, i);
  return UnitTree::Range{r.parent, r.low, r.high, r.node};
}

std::string ModuleIndex::encode_module(std::string_view key) const {
  ByteWriter head;
  head.out().append(kModuleIndexMagic, sizeof kModuleIndexMagic);
  head.u32(kModuleIndexVersion);
  head.bytes(key);
  const Module empty;
  const Module& m = module_ ? *module_ : empty;
  head.u8(m.has_dwarf);
  head.u8(m.aranges_usable);
  head.u64(m.bias);
  head.u64(m.symbols.size());
  for (const Symbol& s : m.symbols) {
    head.u64(s.start);
    head.u64(s.size);
    head.bytes(s.name);
  }
  head.u64(m.aranges.size());
  for (const Arange& a : m.aranges) {
    head.u64(a.addr);
    head.u64(a.length);
    head.u64(a.unit);
  }
  head.u64(fast_checksum(head.out().data(), head.out().size()));
  return std::move(head.out());
}

std::optional<ModuleIndex> ModuleIndex::decode_module(std::string_view key, std::string_view all) {
  if (all.size() < sizeof kModuleIndexMagic + 8 ||
      std::memcmp(all.data(), kModuleIndexMagic, sizeof kModuleIndexMagic) != 0) {
    return std::nullopt;
  }
  uint64_t checksum;
  std::memcpy(&checksum, all.data() + all.size() - 8, 8);
  all.remove_suffix(8);
  if (fast_checksum(all.data(), all.size()) != checksum) return std::nullopt;
  ByteReader in(all.substr(sizeof kModuleIndexMagic));
  uint32_t version;
  std::string_view stored_key;
  if (!in.u32(&version) || version != kModuleIndexVersion || !in.bytes(&stored_key) ||
      stored_key != key) {
    return std::nullopt;
  }
  Module m;
  uint8_t has_dwarf, usable;
  uint64_t count;
  if (!in.u8(&has_dwarf) || has_dwarf > 1 || !in.u8(&usable) || usable > 1 || !in.u64(&m.bias) ||
      !in.u64(&count) || count > in.left() / 20) {
    return std::nullopt;
  }
  m.has_dwarf = has_dwarf;
  m.aranges_usable = usable;
  m.symbols.resize(count);
  for (size_t i = 0; i < m.symbols.size(); ++i) {
    Symbol& s = m.symbols[i];
    if (!in.u64(&s.start) || !in.u64(&s.size) || !in.bytes(&s.name) ||
        (i > 0 && m.symbols[i - 1].start >= s.start)) {
      return std::nullopt;
    }
  }
  if (!in.u64(&count) || count > in.left() / 24) return std::nullopt;
  m.aranges.resize(count);
  for (size_t i = 0; i < m.aranges.size(); ++i) {
    Arange& a = m.aranges[i];
    if (!in.u64(&a.addr) || !in.u64(&a.length) || !in.u64(&a.unit) || a.length == 0 ||
        a.addr + a.length < a.addr ||
        (i > 0 && m.aranges[i - 1].addr + m.aranges[i - 1].length > a.addr)) {
      return std::nullopt;
    }
  }
  if (in.left() != 0) return std::nullopt;
  keep_symbol_names(m);  // out of the file's bytes
  ModuleIndex index;
  index.module_ = std::make_shared<const Module>(std::move(m));
  return index;
}

}  // namespace inprof::symbolicate
