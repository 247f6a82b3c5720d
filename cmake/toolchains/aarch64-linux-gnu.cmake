# Cross-compiles for 64-bit Arm Linux with Debian's cross g++ (g++-aarch64-linux-gnu) against the
# arm64 libraries of Debian multiarch (dpkg --add-architecture arm64; libzstd-dev:arm64 ...), and
# runs the tests under qemu-user. tools/scripts/run-aarch64.sh does all of it.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# The cross toolchain's own root, and / for the multiarch libraries in /usr/lib/aarch64-linux-gnu.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# pkg-config must see the arm64 .pc files only.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_SYSROOT_DIR} /)

# No -L: with libc6:arm64 installed, `qemu-aarch64 -L /usr/aarch64-linux-gnu` makes ld.so load the
# multiarch libc through the host's ld.so.cache next to the cross ld.so, and every threaded
# program hangs in pthread_create. LD_LIBRARY_PATH puts the cross toolchain's runtime first.
find_program(INPROF_QEMU_AARCH64 NAMES qemu-aarch64 qemu-aarch64-static REQUIRED)
set(CMAKE_CROSSCOMPILING_EMULATOR
    ${INPROF_QEMU_AARCH64} -L /usr/aarch64-linux-gnu -E LD_LIBRARY_PATH=/usr/aarch64-linux-gnu/lib)
