// Must not compile (issue 23, item 13): a label keeps its name's address, so INPROF_LABEL takes
// only constants; a run-time string once recorded whatever that memory held later.
#include <inprof/markers.h>

#include <string>

void parse(const std::string& phase) { INPROF_LABEL(phase.c_str()); }
