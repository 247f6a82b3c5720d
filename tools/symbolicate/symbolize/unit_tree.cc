#include "symbolize/unit_tree.h"

namespace inprof::symbolicate {
namespace {

// Either form of a tree (UnitTree, StoredUnitTree): the same frames.
template <typename Tree>
void frames_of_chain(const Tree& unit, const std::vector<uint32_t>& chain,
                     const std::string& leaf_file, uint32_t leaf_line, uint64_t pc, uint64_t bias,
                     AddressSymbol& out) {
  for (size_t i = 0; i < chain.size(); ++i) {
    const UnitTree::Node& node = unit.node(chain[i]);
    SourceFrame f;
    const std::string_view name = unit.str(node.name);
    const std::string_view file = unit.str(node.file);
    f.function = name;
    // Named and placed by its DIE alone: the same for every address (the DIE offset + 1).
    if (!name.empty() && !file.empty()) f.function_key = node.die + 1;
    if (f.function.empty() && i == 0 && out.symbol) f.function = out.symbol->name;
    if (f.function.empty()) f.function = "<unknown>";
    f.decl_line = node.decl_line;
    if (i + 1 == chain.size()) {
      f.line = leaf_line;
      if (file.empty()) {
        f.file = leaf_file;
      } else {
        f.file = file;
      }
    } else {
      // The line executing in an outer level is where it calls the next level in.
      const UnitTree::Node& inner = unit.node(chain[i + 1]);
      f.line = inner.call_line;
      if (file.empty()) {
        f.file = unit.str(inner.call_file);
      } else {
        f.file = file;
      }
    }
    out.frames.push_back(std::move(f));
  }

  if (out.frames.empty() && out.symbol) {
    out.frames.push_back(SourceFrame{out.symbol->name, leaf_file, 0, leaf_line, 0});
  }
  if (!out.symbol && !chain.empty()) {
    // No ELF symbol (stripped symtab): the part of the physical function holding the address,
    // from DWARF, as a symbol would give it (a split function's hot and .cold parts apart).
    const UnitTree::Node& outer = unit.node(0);
    for (uint32_t r = outer.first_child; r < outer.end_child; ++r) {
      const UnitTree::Range& range = unit.range(r);
      if (range.node == chain[0] && range.low <= pc && pc < range.high) {
        out.symbol =
            NativeSymbolInfo{out.frames[0].function, range.low + bias, range.high - range.low};
        break;
      }
    }
  }
}

}  // namespace

void frames_from_chain(const UnitTree& unit, const std::vector<uint32_t>& chain,
                       const std::string& leaf_file, uint32_t leaf_line, uint64_t pc, uint64_t bias,
                       AddressSymbol& out) {
  frames_of_chain(unit, chain, leaf_file, leaf_line, pc, bias, out);
}

void frames_from_chain(const StoredUnitTree& unit, const std::vector<uint32_t>& chain,
                       const std::string& leaf_file, uint32_t leaf_line, uint64_t pc, uint64_t bias,
                       AddressSymbol& out) {
  frames_of_chain(unit, chain, leaf_file, leaf_line, pc, bias, out);
}

}  // namespace inprof::symbolicate
