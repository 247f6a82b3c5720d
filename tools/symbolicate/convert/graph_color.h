// The Firefox Profiler's graph colours: what colours a counter track and, through a schema's
// colorField, a marker in the marker chart. They are fewer than the category colours, and a
// counter track with any other colour fails to draw.
#ifndef INPROF_TOOLS_SYMBOLICATE_GRAPH_COLOR_H_
#define INPROF_TOOLS_SYMBOLICATE_GRAPH_COLOR_H_

#include <string_view>

namespace inprof::symbolicate {

// The graph colour closest to a category colour; some category colours share one.
std::string_view graph_color_for(std::string_view category_color);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_GRAPH_COLOR_H_
