// Issue 22, item 10: the vDSO has no file, so the library copies its image into the dump (record
// 23, right after its load record) and symbolicate names its frames from that image's symbol
// table; a dump without the copy leaves them module+0x... and the module report says why.
#include <gelf.h>
#include <gtest/gtest.h>
#include <libelf.h>

#include <cstring>

#include "dump/byte_io.h"
#include "sampling/module_lister.h"
#include "session/metadata_queue.h"
#include "test_support.h"

namespace {

using namespace inprof::internal;

// This process's vDSO, as the module lister reports it; start == 0 if it has none.
ModuleInfo own_vdso() {
  std::vector<ModuleInfo> modules;
  ModuleLister::create()->list(modules);
  for (ModuleInfo& m : modules) {
    if (m.flags & kModuleVdso) return m;
  }
  return {};
}

// The ELF address of the dynamic symbol `name` in `image`; 0 if none.
uint64_t symbol_vaddr(std::span<const uint8_t> image, const char* name) {
  elf_version(EV_CURRENT);
  std::vector<char> copy(image.begin(), image.end());
  Elf* elf = elf_memory(copy.data(), copy.size());
  uint64_t found = 0;
  for (Elf_Scn* scn = nullptr; elf && (scn = elf_nextscn(elf, scn)) != nullptr;) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_DYNSYM || shdr.sh_entsize == 0) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    for (size_t i = 0; data && i < shdr.sh_size / shdr.sh_entsize; ++i) {
      GElf_Sym sym;
      if (!gelf_getsym(data, static_cast<int>(i), &sym)) continue;
      const char* s = elf_strptr(elf, shdr.sh_link, sym.st_name);
      if (s && std::strcmp(s, name) == 0 && sym.st_value) found = sym.st_value;
    }
  }
  if (elf) elf_end(elf);
  return found;
}

const char* clock_gettime_symbol() {
#if defined(__aarch64__)
  return "__kernel_clock_gettime";
#else
  return "__vdso_clock_gettime";
#endif
}

TEST(Vdso, TheMetadataQueueFollowsTheVdsosLoadRecordWithItsImage) {
  ModuleInfo vdso = own_vdso();
  if (vdso.start == 0) GTEST_SKIP() << "no vDSO in this process";
  std::span<const uint8_t> image = vdso_image(vdso.start, vdso.end);
  ASSERT_FALSE(image.empty());
  EXPECT_LE(image.size(), kMaxModuleImageSize);
  EXPECT_EQ(std::memcmp(image.data(), "\177ELF", 4), 0);
  // Any other module gets no image.
  EXPECT_TRUE(vdso_image(vdso.start + 4096, vdso.end + 4096).empty());

  MetadataQueue queue;
  ModuleRecord rec;
  rec.id = 7;
  rec.start = vdso.start;
  rec.end = vdso.end;
  rec.flags = kModuleVdso;
  rec.path = vdso.path;
  queue.push(RecordType::kModuleLoad, rec);
  rec.id = 8;
  rec.flags = 0;
  queue.push(RecordType::kModuleLoad, rec);  // not the vDSO: no image
  std::vector<MetadataQueue::Entry> entries = queue.take();
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].first, RecordType::kModuleLoad);
  ASSERT_EQ(entries[1].first, RecordType::kModuleImage);
  EXPECT_EQ(entries[2].first, RecordType::kModuleLoad);
  ByteReader r(entries[1].second);
  ModuleImageRecord decoded;
  ASSERT_TRUE(decode(r, decoded));
  EXPECT_EQ(decoded.id, 7u);
  EXPECT_TRUE(std::equal(decoded.bytes.begin(), decoded.bytes.end(), image.begin(), image.end()));
}

// A dump with a sample in the vDSO's clock_gettime, with or without the image.
std::string symbolicate_vdso_sample(bool with_image, std::string* err) {
  ModuleInfo vdso = own_vdso();
  std::span<const uint8_t> image = vdso_image(vdso.start, vdso.end);
  const uint64_t vaddr = symbol_vaddr(image, clock_gettime_symbol());
  if (vaddr == 0) return "<no symbol>";
  symtest::TempDir dir;
  {
    symtest::DumpFile d(dir.path("d.inprof"));
    d.process(symtest::test_process());
    ModuleRecord rec;
    rec.id = 2;
    rec.start = vdso.start;
    rec.end = vdso.end;
    rec.load_bias = vdso.load_bias;
    rec.flags = kModuleVdso;
    rec.path = vdso.path;
    rec.build_id = vdso.build_id;
    d.module(rec);
    if (with_image) d.module_image(2, {image.begin(), image.end()});
    d.thread_start(1, 0, "main", kThreadMain);
    d.sample(1, 1'000'000, {vdso.load_bias + vaddr + 4});
    d.end(2'000'000);
    d.close();
  }
  if (symtest::symbolicate_in_process(dir.path("d.inprof"), dir.path("p.json"), err) != 0) {
    return "<failed>";
  }
  rapidjson::Document doc;
  if (!symtest::load_json(dir.path("p.json"), &doc)) return "<no json>";
  std::vector<symtest::FrameView> stack = symtest::sample_stack(doc, 0, 0);
  return stack.empty() ? "<empty>" : stack.back().func;
}

TEST(Vdso, FramesAreNamedFromTheDumpsImage) {
  if (own_vdso().start == 0) GTEST_SKIP() << "no vDSO in this process";
  std::string err;
  std::string name = symbolicate_vdso_sample(true, &err);
  // __vdso_clock_gettime and its alias clock_gettime share the address.
  EXPECT_NE(name.find("clock_gettime"), std::string::npos) << name << "\n" << err;
  EXPECT_EQ(name.find("+0x"), std::string::npos) << name;
  EXPECT_NE(err.find("ELF symbols of the vDSO's image in the dump"), std::string::npos) << err;
}

TEST(Vdso, WithoutTheImageFramesStayAddressesAndTheReportSaysWhy) {
  if (own_vdso().start == 0) GTEST_SKIP() << "no vDSO in this process";
  std::string err;
  std::string name = symbolicate_vdso_sample(false, &err);
  EXPECT_NE(name.find("+0x"), std::string::npos) << name;
  EXPECT_NE(err.find("the vDSO has no file"), std::string::npos) << err;
  EXPECT_NE(err.find("1 frame left as module+0x..."), std::string::npos) << err;
}

// Item 10's report also counts the frames that no module holds.
TEST(ModuleReport, CountsFrameAddressesInNoModule) {
  symtest::TempDir dir;
  {
    symtest::DumpFile d(dir.path("d.inprof"));
    d.process(symtest::test_process());
    d.thread_start(1, 0, "main", kThreadMain);
    d.sample(1, 1'000'000, {0x1234, 0x5678});
    d.end(2'000'000);
    d.close();
  }
  std::string err;
  ASSERT_EQ(symtest::symbolicate_in_process(dir.path("d.inprof"), dir.path("p.json"), &err), 0);
  EXPECT_NE(err.find("2 frame addresses in no module left as 0x..."), std::string::npos) << err;
}

}  // namespace
