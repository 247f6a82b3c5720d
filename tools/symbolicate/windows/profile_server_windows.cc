// The Windows build has no --open server (profile_server.cc is POSIX: sockets, poll, fork for the
// browser); main.cc refuses --open there before this could run.
#include <cstdio>

#include "serve/profile_server.h"

namespace inprof::symbolicate {

int serve_profile(const ServeOptions& options) {
  std::fprintf(options.log,
               "symbolicate: error: --open is not available in the Windows build; load %s at "
               "%s\n",
               options.file.c_str(), options.profiler_url.c_str());
  return 1;
}

}  // namespace inprof::symbolicate
