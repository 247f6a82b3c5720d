// `symbolicate --open`: serves one profile file to the Firefox Profiler in the browser. A tiny
// HTTP/1.1 server on 127.0.0.1 (never another interface), on a free port, under one unguessable
// path prefix (/<random token>/; anything else is 404), with the CORS header the profiler's
// origin needs: GET and HEAD of <prefix>profile.json, and, with a symbol server, POST of
// samply's local symbol-server API under the same prefix (symbol_server.h), which the opened
// address names with ?symbolServer=. Stops on SIGINT or SIGTERM.
#ifndef INPROF_TOOLS_SYMBOLICATE_PROFILE_SERVER_H_
#define INPROF_TOOLS_SYMBOLICATE_PROFILE_SERVER_H_

#include <cstdio>
#include <string>

namespace inprof::symbolicate {

inline constexpr char kProfilerOrigin[] = "https://profiler.firefox.com";

class SymbolServer;

struct ServeOptions {
  std::string file;                            // the profile (JSON, or gzipped JSON) to serve
  std::string profiler_url = kProfilerOrigin;  // the Firefox Profiler to open it in (no '/')
  SymbolServer* symbols = nullptr;  // answers /symbolicate/v5, /source/v1, /asm/v1 if set
  bool open_browser = true;         // run xdg-open on the profiler's address, if it exists
  int port = 0;                     // on 127.0.0.1; 0: any free port
  std::FILE* log = stderr;          // where the addresses and requests are reported
};

// Serves until SIGINT or SIGTERM. Returns 0 then, or 1 after reporting why it could not start.
int serve_profile(const ServeOptions& options);

// "https://profiler.firefox.com/from-url/<url, percent-encoded>/", and with a symbol server
// "?symbolServer=<its url, percent-encoded>".
std::string profiler_url_for(const std::string& profile_url,
                             const std::string& profiler = kProfilerOrigin,
                             const std::string& symbol_server_url = "");

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_PROFILE_SERVER_H_
