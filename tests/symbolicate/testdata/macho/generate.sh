#!/bin/sh
# Regenerates the Mach-O test binaries of macho_test.cc from demo.cc with Debian's clang and
# ld64.lld (package lld; tools/scripts/install-deps.sh): a dylib for each architecture, linked
# without an SDK (-e _start, no libraries), a fat (universal) file holding both, and the x86_64
# dylib's .dSYM bundle (dsymutil, package llvm; DWARF 4, which dsymutil 14 copies whole). The
# outputs are committed, so the tests need none of these tools. The dylibs' debug maps name the
# objects by their temporary paths, so each run gives new UUIDs: update macho_test.cc's.
set -eu
cd "$(dirname "$0")"
CLANG=${CLANG:-clang}
LD64=${LD64:-$(command -v ld64.lld || command -v ld64.lld-14)}
DSYMUTIL=${DSYMUTIL:-$(command -v dsymutil || command -v dsymutil-14)}
LIPO=${LIPO:-$(command -v llvm-lipo || command -v llvm-lipo-14)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for arch in x86_64 arm64; do
  "$CLANG" -target "$arch-apple-macos11" -O1 -ffreestanding -fno-exceptions -fno-rtti \
    -g -gdwarf-4 -nostdinc++ -c demo.cc -o "$tmp/demo_$arch.o"
  "$LD64" -arch "$arch" -platform_version macos 11.0 11.0 -dylib -e _start \
    -o "demo_$arch.dylib" "$tmp/demo_$arch.o"
done
"$LIPO" -create demo_x86_64.dylib demo_arm64.dylib -output demo_fat.dylib
rm -rf demo_x86_64.dylib.dSYM
"$DSYMUTIL" demo_x86_64.dylib -o demo_x86_64.dylib.dSYM
rm -f demo_x86_64.dylib.dSYM/Contents/Info.plist
