#!/usr/bin/env bash
# libinprof.so exports the inprof API only (issue 23, item 10): every defined dynamic symbol is
# in namespace inprof or named inprof_*, and the API is there. Prints what else is exported.
set -uo pipefail
library="$1"
symbols=$(nm -D --defined-only -C "$library" | sed -E 's/^[0-9a-f]+ [A-Za-z] //') || {
  echo "cannot read $library"; exit 1; }
others=$(grep -vE '^(inprof::|inprof_|typeinfo for inprof::|typeinfo name for inprof::|vtable for inprof::)' <<<"$symbols")
# The version node the script gives (a symbol, not code).
others=$(grep -vxE '(LIBINPROF|VERS)[A-Za-z0-9_.]*' <<<"$others" || true)
status=0
if [ -n "$others" ]; then
  echo "exported besides the API ($(wc -l <<<"$others")):"
  echo "$others" | head -20
  status=1
fi
for api in 'inprof::Profiler::start(inprof::Options const&)' 'inprof::Profiler::stop()' \
           'inprof_start' 'inprof_marker' 'inprof::internal::g_recording' 'inprof_copy_interface_v1'; do
  grep -qxF "$api" <<<"$symbols" || { echo "not exported: $api"; status=1; }
done
[ "$status" -eq 0 ] && echo "exports: $(wc -l <<<"$symbols") symbols, all inprof's"
exit "$status"
