#!/usr/bin/env bash
# What libinprof.so brings into a process: the C runtime (libc, the loader, libm) and the C++
# runtime its C++ API needs (libstdc++ and libgcc_s: std::string crosses the API), nothing else
# (zstd is linked in, hidden; libdw/libelf and their compression libraries are gone). And every
# symbol bound at load time (BIND_NOW): a lazy PLT fix-up inside a signal handler is not
# async-signal-safe. Prints what is wrong.
set -uo pipefail
library="$1"
dynamic=$(readelf -d "$library") || { echo "cannot read $library"; exit 1; }
status=0
needed=$(sed -nE 's/.*\(NEEDED\).*\[(.*)\]/\1/p' <<<"$dynamic")
allowed='^(libc\.so\.6|ld-linux[-a-z0-9_.]*\.so\.[0-9]+|libm\.so\.6|libstdc\+\+\.so\.6|libgcc_s\.so\.1)$'
while read -r lib; do
  [ -z "$lib" ] && continue
  grep -qE "$allowed" <<<"$lib" || { echo "needs $lib"; status=1; }
done <<<"$needed"
if ! grep -qE '\(FLAGS\).*BIND_NOW|\(FLAGS_1\).*NOW' <<<"$dynamic"; then
  echo "lazy binding: neither DT_FLAGS BIND_NOW nor DT_FLAGS_1 NOW"
  status=1
fi
readelf -lW "$library" | grep -q GNU_RELRO || { echo "no PT_GNU_RELRO"; status=1; }
if grep -q TEXTREL <<<"$dynamic"; then echo "text relocations"; status=1; fi
zstd=$(nm -D --defined-only "$library" | grep -c ' ZSTD_') || true
[ "$zstd" -eq 0 ] || { echo "exports $zstd ZSTD_ symbols"; status=1; }
[ "$status" -eq 0 ] && echo "needs only: $(tr '\n' ' ' <<<"$needed")(BIND_NOW, RELRO)"
exit "$status"
