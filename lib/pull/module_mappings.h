// The pprof Mappings of the modules a session has recorded: each module's executable segments
// as they are mapped now (code_segments.h), or, for a module unloaded since, its whole range.
#ifndef INPROF_LIB_PULL_MODULE_MAPPINGS_H_
#define INPROF_LIB_PULL_MODULE_MAPPINGS_H_

#include <cstdint>
#include <map>

#include "dump/dump_records.h"
#include "pprof/pprof_builder.h"

namespace inprof::internal {

// `modules` by id (their load records).
void add_module_mappings(const std::map<uint64_t, ModuleRecord>& modules, PprofBuilder& builder);

}  // namespace inprof::internal

#endif  // INPROF_LIB_PULL_MODULE_MAPPINGS_H_
