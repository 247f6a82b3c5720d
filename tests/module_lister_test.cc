// The module list names a library by the file that was mapped, not by the link the loader
// opened (liblzma.so.5 for liblzma.so.5.4.1): the profile's library names come from it.
#include "sampling/module_lister.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <link.h>

#include <climits>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using inprof::internal::ModuleInfo;
using inprof::internal::ModuleLister;

std::string real_path(const char* path) {
  char real[PATH_MAX];
  return ::realpath(path, real) ? std::string(real) : std::string();
}

// The loader's own name for the module mapped at `load_bias`.
std::string loader_name(uint64_t load_bias) {
  struct Search {
    uint64_t bias;
    std::string name;
  } search{load_bias, {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* s = static_cast<Search*>(data);
        if (info->dlpi_addr != s->bias || !info->dlpi_name) return 0;
        s->name = info->dlpi_name;
        return 1;
      },
      &search);
  return search.name;
}

TEST(ModuleListerTest, NamesALibraryByTheFileThatWasMapped) {
  const std::string link = LISTER_TARGET_LINK;
  const std::string file = real_path(LISTER_TARGET_FILE);
  ASSERT_FALSE(file.empty());
  ASSERT_NE(real_path(link.c_str()), link) << "the library's link should be a symbolic link";
  void* handle = dlopen(link.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  void* function = dlsym(handle, "inprof_lister_target");
  ASSERT_NE(function, nullptr);

  std::vector<ModuleInfo> modules;
  std::unique_ptr<ModuleLister> lister = ModuleLister::create();
  lister->list(modules);
  const auto address = reinterpret_cast<uintptr_t>(function);
  const ModuleInfo* found = nullptr;
  for (const ModuleInfo& m : modules) {
    if (address >= m.start && address < m.end) found = &m;
  }
  ASSERT_NE(found, nullptr);
  // The premise: the loader knows it by the link.
  EXPECT_EQ(loader_name(found->load_bias), link);
  EXPECT_EQ(found->path, file);
  EXPECT_FALSE(found->build_id.empty());

  // Listed again (the resolution is remembered): the same.
  lister->list(modules);
  bool same = false;
  for (const ModuleInfo& m : modules) same |= m.start == found->start && m.path == file;
  EXPECT_TRUE(same);
  dlclose(handle);
}

}  // namespace
