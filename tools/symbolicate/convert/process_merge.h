// Several processes' profiles (one dump each: a program and the processes it started, recorded
// by `inprof record`) merged into one: one process track each, threads kept apart by process,
// every time moved onto the earliest process's clock.
#ifndef INPROF_TOOLS_SYMBOLICATE_PROCESS_MERGE_H_
#define INPROF_TOOLS_SYMBOLICATE_PROCESS_MERGE_H_

#include <string>
#include <vector>

#include "convert/profile_builder.h"

namespace inprof::symbolicate {

// The name a process's track gets in a merged profile: its command line (`meta.arguments`), the
// program without its directory, cut short.
std::string process_track_name(const Meta& meta);

// Fills the empty `out` with every part's tables, threads, markers and counters. Parts may come in
// any order: the one that started first leads (its meta is the profile's, its threads come
// first). Times since each part's start become times since the earliest start.
void merge_processes(const std::vector<const ProfileBuilder*>& parts, ProfileBuilder& out);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_PROCESS_MERGE_H_
