// What every marker carries besides its own fields, so the Firefox Profiler shows where it came
// from: its category (as a field, and as the colour the marker chart draws it in) and its thread.
//
// The marker chart colours a marker only through its schema's `colorField`: the payload key whose
// value is one of the viewer's graph colours. Without one every marker is drawn in the same
// blue, whatever its category. Markers recorded without a type get a schema of their own, so
// that they too have fields, a colour and a place in the timeline.
#ifndef INPROF_TOOLS_SYMBOLICATE_MARKER_CONTEXT_H_
#define INPROF_TOOLS_SYMBOLICATE_MARKER_CONTEXT_H_

#include <cstdint>
#include <string>

#include "convert/profile_builder.h"

namespace inprof::symbolicate {

// The payload keys of the context fields in one schema.
struct MarkerContextKeys {
  std::string category, thread, color;
};

// Adds the context fields (category, thread, and the hidden colour named by colorField) to
// `schema`, under keys none of its own fields use, and returns those keys.
MarkerContextKeys add_context_fields(MarkerSchema& schema);

// The schema of markers that have no type (or a type the dump does not describe), named `name`.
MarkerSchema untyped_marker_schema(std::string name);

// Appends the context values to a payload of a schema that add_context_fields extended.
void add_context(MarkerData& data, const MarkerContextKeys& keys, const Category& category,
                 uint64_t tid);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_MARKER_CONTEXT_H_
