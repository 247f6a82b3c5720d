#include "convert/graph_color.h"

#include <utility>

namespace inprof::symbolicate {

std::string_view graph_color_for(std::string_view category_color) {
  static constexpr std::pair<std::string_view, std::string_view> kColors[] = {
      {"purple", "purple"},  {"green", "green"},  {"orange", "orange"}, {"yellow", "yellow"},
      {"lightblue", "teal"}, {"blue", "blue"},    {"brown", "orange"},  {"magenta", "magenta"},
      {"red", "red"},        {"lightred", "red"}, {"darkgrey", "ink"},  {"grey", "grey"}};
  for (const auto& [category, graph] : kColors) {
    if (category == category_color) return graph;
  }
  return "grey";  // transparent (Idle), or unknown
}

}  // namespace inprof::symbolicate
