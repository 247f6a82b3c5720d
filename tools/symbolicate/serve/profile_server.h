// `symbolicate --open`: serves one profile file to the Firefox Profiler in the browser. A tiny
// HTTP/1.1 server on 127.0.0.1 (never another interface), on a free port, answering only GET,
// HEAD and CORS preflight for one unguessable path (/<random token>/profile.json; anything else
// is 404), with the CORS header profiler.firefox.com needs. Stops on SIGINT or SIGTERM.
#ifndef INPROF_TOOLS_SYMBOLICATE_PROFILE_SERVER_H_
#define INPROF_TOOLS_SYMBOLICATE_PROFILE_SERVER_H_

#include <cstdio>
#include <string>

namespace inprof::symbolicate {

inline constexpr char kProfilerOrigin[] = "https://profiler.firefox.com";

struct ServeOptions {
  std::string file;          // the profile (JSON, or gzipped JSON) to serve
  bool open_browser = true;  // run xdg-open on the profiler's address, if it exists
  std::FILE* log = stderr;   // where the addresses and requests are reported
};

// Serves until SIGINT or SIGTERM. Returns 0 then, or 1 after reporting why it could not start.
int serve_profile(const ServeOptions& options);

// "https://profiler.firefox.com/from-url/<url, percent-encoded>/"
std::string profiler_url_for(const std::string& profile_url);

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_PROFILE_SERVER_H_
