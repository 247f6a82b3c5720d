#!/usr/bin/env bash
# The demo's run, once its tools are built (demo.sh builds them; tests/readme runs this too):
#   demo-run.sh BUILD_DIR OUT_DIR
set -euo pipefail
build="$(cd "$1" && pwd)"; out="$2"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
"$build/examples/multithreaded" "$out/multithreaded.inprof"
"$build/tools/symbolicate/symbolicate" "$out/multithreaded.inprof" -o "$out/multithreaded.json" \
  --quiet-modules
# A program built by nobody here, profiled without a change: gzip (compressing the library).
"$build/tools/inprof/inprof" record -o "$out/gzip.json.gz" \
  gzip -9 -c "$build/libinprof.so" >/dev/null
cat <<MSG

Profiles ready: $out/multithreaded.json (the example, which profiles itself) and
$out/gzip.json.gz (gzip, under inprof record). Open https://profiler.firefox.com, choose
"Load a profile from file", and pick one; or serve one to it from here (until Ctrl-C):

  $build/tools/inprof/inprof load $out/gzip.json.gz

The tools are in $build: to run the README's next commands as they are written,
  export PATH="$build/tools/inprof:$build/tools/symbolicate:\$PATH"
MSG
