// Batch conversion: many dumps (the windows of a rotating session, a fleet's collection), each to
// a pprof file of its own in an output directory: `symbolicate DIR... --format pprof -o OUT/`.
#ifndef INPROF_TOOLS_SYMBOLICATE_BATCH_H_
#define INPROF_TOOLS_SYMBOLICATE_BATCH_H_

#include <cstdio>
#include <string>

#include "symbolicate.h"

namespace inprof::symbolicate {

// True if `output` names a directory: it ends in '/' or is one.
bool is_output_directory(const std::string& output);

// Converts each dump `options` names (directories expanded) alone, to OUT/<name>.pb.gz where
// <name> is the dump's file name without ".inprof". Creates OUT if missing. Goes on after a dump
// that fails; returns the worst status (kExitError over kExitDamaged over kExitOk).
int run_symbolicate_batch(const RunOptions& options, std::FILE* err);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_BATCH_H_
