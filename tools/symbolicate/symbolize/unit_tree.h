// One compilation unit's functions as a tree, independent of the reader that built it: each
// concrete subprogram and inlined subroutine is a node, its address ranges sorted under its
// parent, so the chain at an address is found by descending with binary searches. The DWARF
// reader (elf/dwarf_unit_index.h) builds it from libdw, lazily; the module index
// (module_index.h) keeps it whole between runs. Both turn a chain into frames with
// frames_from_chain(), so an address is named the same way whichever of them answers.
#ifndef INPROF_TOOLS_SYMBOLICATE_UNIT_TREE_H_
#define INPROF_TOOLS_SYMBOLICATE_UNIT_TREE_H_

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "symbolize/module_symbolizer.h"

namespace inprof::symbolicate {

inline constexpr int kMaxScopeDepth = 64;  // corrupt DWARF must not recurse forever

struct UnitTree {
  struct Node {
    uint64_t die = 0;  // the DIE's offset (DWARF)
    uint32_t parent = 0;
    uint32_t first_child = 0, end_child = 0;  // its children's ranges in `ranges`
    uint64_t entry = 0;                       // where it is entered (DWARF), for its ELF name
    uint16_t depth = 0;                       // of its DIE under the unit's, for the limit
    bool expanded = true;                     // its children are in the tree
    bool described = false;
    uint32_t name = 0, file = 0;  // in `strings`
    uint32_t decl_line = 0;
    uint32_t call_line = 0;  // inlined nodes: the line in the parent that calls this one
    uint32_t call_file = 0;
  };
  struct Range {
    uint32_t parent;
    uint64_t low, high;
    uint32_t node;
  };
  std::vector<Node> nodes = std::vector<Node>(1);  // [0] is the unit itself
  std::vector<Range> ranges;
  // The nodes' names and files, each once; [0] is "".
  std::vector<std::string> strings = std::vector<std::string>(1);

  const std::string& str(uint32_t id) const { return strings[id]; }
  uint32_t intern(std::string s) {
    if (s.empty()) return 0;
    auto [it, inserted] = string_ids_.try_emplace(std::move(s), uint32_t(strings.size()));
    if (inserted) strings.push_back(it->first);
    return it->second;
  }
  void forget_string_ids() { string_ids_.clear(); }

  // Orders the ranges added from `from` on by parent, each parent's by address, and points their
  // parents at them. Those parents had no children before: the unit or a function just expanded,
  // and the nodes added with it.
  void group(size_t from) {
    std::stable_sort(ranges.begin() + static_cast<std::ptrdiff_t>(from), ranges.end(),
                     [](const Range& a, const Range& b) {
                       return a.parent != b.parent ? a.parent < b.parent : a.low < b.low;
                     });
    for (size_t i = from; i < ranges.size(); ++i) {
      Node& p = nodes[ranges[i].parent];
      if (p.end_child == 0) p.first_child = static_cast<uint32_t>(i);
      p.end_child = static_cast<uint32_t>(i + 1);
    }
  }

  const Node& node(uint32_t i) const { return nodes[i]; }
  const Range& range(uint32_t i) const { return ranges[i]; }

  // Node indices from the physical function to the deepest inlinee containing `pc`.
  // `expand(node)` reads the inside of a node not yet expanded (false: it cannot, stop there);
  // it may add to this tree.
  template <typename Expand>
  void chain(uint64_t pc, std::vector<uint32_t>& out, Expand&& expand) const;

 private:
  std::unordered_map<std::string, uint32_t> string_ids_;  // while building
};

// A whole unit's tree as the module index's file holds it (module_index_file.cc), read where it
// lies: its nodes and ranges are fixed-size records, each read when the chain descends through
// it, not converted into a UnitTree first (a warm run of the symbol cache decodes some forty
// units of python3.11, a megabyte of records, for a few hundred addresses). Checked whole when
// decoded (ModuleIndex::decode_unit); `keeper` holds the bytes.
struct StoredUnitTree {
  std::string_view node_records, range_records;
  uint32_t node_count = 0, range_count = 0;
  std::vector<std::string_view> strings;  // [0] is ""
  std::shared_ptr<const void> keeper;

  UnitTree::Node node(uint32_t i) const;  // expanded and described
  UnitTree::Range range(uint32_t i) const;
  std::string_view str(uint32_t id) const { return strings[id]; }
};

// UnitTree::chain, for either form of a tree: `tree.node(i)` and `tree.range(i)`.
template <typename Tree, typename Expand>
void chain_of(const Tree& tree, uint64_t pc, std::vector<uint32_t>& out, Expand&& expand) {
  uint32_t node = 0;
  for (int depth = 0; depth < kMaxScopeDepth; ++depth) {
    uint32_t first, last;
    {
      const UnitTree::Node& n = tree.node(node);  // a temporary's lifetime for StoredUnitTree
      if (n.end_child == 0) return;
      first = n.first_child;
      last = n.end_child;
    }
    // The first child starting above `pc` (std::upper_bound by `low`).
    uint32_t it = first, count = last - first;
    while (count > 0) {
      const uint32_t half = count / 2;
      if (pc < tree.range(it + half).low) {
        count = half;
      } else {
        it += half + 1;
        count -= half + 1;
      }
    }
    // Siblings do not overlap in sane DWARF; look back a little in case they do.
    uint32_t found = 0;
    for (int k = 0; it != first && k < 16; ++k) {
      --it;
      const UnitTree::Range& r = tree.range(it);
      if (pc < r.high) {
        found = r.node;
        break;
      }
    }
    if (!found) return;
    if (!tree.node(found).expanded && !expand(found)) return;
    out.push_back(found);
    node = found;
  }
}

template <typename Expand>
void UnitTree::chain(uint64_t pc, std::vector<uint32_t>& out, Expand&& expand) const {
  chain_of(*this, pc, out, std::forward<Expand>(expand));
}

// The frames of `out` for the described `chain` at `pc` (the unit's address: the module's
// minus `bias`), given the line table's file and line at `pc`; and, without an ELF symbol, the
// physical function's part holding `pc` as the symbol.
void frames_from_chain(const UnitTree& unit, const std::vector<uint32_t>& chain,
                       const std::string& leaf_file, uint32_t leaf_line, uint64_t pc, uint64_t bias,
                       AddressSymbol& out);
void frames_from_chain(const StoredUnitTree& unit, const std::vector<uint32_t>& chain,
                       const std::string& leaf_file, uint32_t leaf_line, uint64_t pc, uint64_t bias,
                       AddressSymbol& out);

// The frame of an address in no unit: its ELF symbol's name, if any.
inline void frames_without_unit(AddressSymbol& out) {
  if (out.symbol) out.frames.push_back(SourceFrame{out.symbol->name, "", 0, 0, 0});
}

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_UNIT_TREE_H_
