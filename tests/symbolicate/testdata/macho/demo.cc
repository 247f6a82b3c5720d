// The source of the Mach-O test binaries (generate.sh): freestanding, so that no Apple SDK is
// needed to link it. Functions of C++ (mangled), C (extern "C") and file-local (static) linkage.
namespace demo {
__attribute__((noinline)) int leaf(int x) { return x * 3 + 1; }
__attribute__((noinline)) int middle(int x) { return leaf(x) + 2; }
}  // namespace demo

static __attribute__((noinline, used)) int hidden(int x) { return demo::middle(x) - 1; }

extern "C" int start(void) { return hidden(5); }
