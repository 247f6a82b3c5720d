// A library for module_lister_test, built with a version so that the loader reaches the file
// (libinprof_lister_target.so.1.2.3) through its link (libinprof_lister_target.so.1).
extern "C" int inprof_lister_target(int x) { return x * 7 + 1; }
