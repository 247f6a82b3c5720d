// Writes synthetic inprof dumps made of real code addresses of a real binary, for the symbolicate
// benchmarks (tools/scripts/run-symbolicate-bench.sh):
//
//   make_bench_dump addresses BINARY COUNT OUT.inprof ADDRESSES.txt
//     COUNT distinct addresses inside the binary's functions, one single-frame sample each, and
//     the same addresses (ELF virtual addresses, hex) one per line for llvm-symbolizer/addr2line.
//   make_bench_dump long BINARY OUT.inprof THREADS SECONDS RATE_HZ
//     a long recording: THREADS threads sampled RATE_HZ times a second for SECONDS, drawing
//     from 20,000 distinct stacks 8-40 frames deep (a few hot, many rare), 10 % idle repeats.
//
// Functions come from the symbol table of the binary's debug file (found as symbolicate finds
// it) or of the binary itself. Same arguments, same dump: the generator is seeded.
#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "dump/dump_records.h"
#include "dump/dump_writer.h"
#include "session/output_file.h"
#include "symbolize/debug_file_locator.h"
#include "symbolize/elf/elf_file.h"

namespace {

using namespace inprof::internal;

struct Function {
  uint64_t start, size;
};

struct Layout {
  uint64_t low = UINT64_MAX, high = 0;  // ELF virtual address span of PT_LOAD segments
};

std::vector<Function> functions_of(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot open " + path);
  elf_version(EV_CURRENT);
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  std::vector<Function> out;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_SYMTAB) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    size_t n = shdr.sh_entsize ? shdr.sh_size / shdr.sh_entsize : 0;
    for (size_t i = 0; i < n; ++i) {
      GElf_Sym sym;
      if (!gelf_getsym(data, static_cast<int>(i), &sym)) continue;
      if (GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_size < 4 || sym.st_shndx == SHN_UNDEF) {
        continue;
      }
      out.push_back({sym.st_value, sym.st_size});
    }
  }
  elf_end(elf);
  ::close(fd);
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.start < b.start; });
  out.erase(
      std::unique(out.begin(), out.end(), [](auto& a, auto& b) { return a.start == b.start; }),
      out.end());
  return out;
}

Layout layout_of(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot open " + path);
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  size_t n = 0;
  elf_getphdrnum(elf, &n);
  Layout l;
  for (size_t i = 0; i < n; ++i) {
    GElf_Phdr ph;
    if (!gelf_getphdr(elf, static_cast<int>(i), &ph) || ph.p_type != PT_LOAD) continue;
    l.low = std::min<uint64_t>(l.low, ph.p_vaddr & ~uint64_t{4095});
    l.high = std::max<uint64_t>(l.high, ph.p_vaddr + ph.p_memsz);
  }
  elf_end(elf);
  ::close(fd);
  return l;
}

std::vector<uint8_t> unhex(const std::string& s) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < s.size(); i += 2) {
    out.push_back(static_cast<uint8_t>(std::stoul(s.substr(i, 2), nullptr, 16)));
  }
  return out;
}

constexpr uint64_t kBias = 0x555555554000;

class Dump {
 public:
  Dump(const std::string& out, const std::string& binary) {
    inprof::Status status;
    auto file = OutputFile::create(out, &status);
    if (!file) throw std::runtime_error(status.message());
    writer_ = DumpWriter::create(std::move(file), &status);
    if (!writer_) throw std::runtime_error(status.message());
    ProcessRecord p;
    p.pid = 4242;
    p.interval_ns = 1'000'000;
    p.arch = "x86_64";
    p.os = "linux";
    p.executable = binary;
    p.command_line = {binary};
    p.library_version = "bench";
    writer_->add(RecordType::kProcess, p);
    std::string why;
    auto info = inprof::symbolicate::inspect_elf_file(binary, &why);
    if (!info) throw std::runtime_error(binary + ": " + why);
    Layout l = layout_of(binary);
    ModuleRecord m;
    m.id = 1;
    m.start = kBias + l.low;
    m.end = kBias + l.high;
    m.load_bias = kBias;
    m.flags = kModuleMainExecutable;
    m.path = binary;
    m.build_id = unhex(info->build_id);
    writer_->add(RecordType::kModuleLoad, m);
  }
  void thread(uint64_t tid, const std::string& name) {
    writer_->add(RecordType::kThreadStart, ThreadRecord{tid, 0, tid == 1 ? kThreadMain : 0u, name});
  }
  void sample(uint64_t tid, uint64_t time, std::optional<uint64_t> cpu,
              const std::vector<uint64_t>& frames) {
    std::vector<uint8_t> payload;
    ByteWriter w(&payload);
    encode_sample(w, tid, time, cpu, 0, frames, {}, {});
    writer_->add_payload(RecordType::kSample, w.view());
    maybe_flush();
  }
  void repeat(uint64_t tid, uint64_t time) {
    writer_->add(RecordType::kSampleRepeat, SampleRepeatRecord{tid, time, 0});
    maybe_flush();
  }
  void end(uint64_t time) {
    writer_->add(RecordType::kEnd, EndRecord{time});
    inprof::Status s = writer_->close();
    if (!s.ok()) throw std::runtime_error(s.message());
  }

 private:
  void maybe_flush() {
    if (writer_->pending_bytes() > (1u << 20)) (void)writer_->flush();  // as the library does
  }
  std::unique_ptr<DumpWriter> writer_;
};

std::string symbol_source(const std::string& binary) {
  inprof::symbolicate::LocateOptions options;
  ModuleRecord m;
  m.path = binary;
  std::string why;
  auto info = inprof::symbolicate::inspect_elf_file(binary, &why);
  if (info) m.build_id = unhex(info->build_id);
  auto files = inprof::symbolicate::locate_module_files(m, options, &why);
  if (files && !files->debug.empty()) return files->debug;
  return binary;
}

int addresses_mode(const std::string& binary, size_t count, const std::string& out,
                   const std::string& list) {
  std::vector<Function> fns = functions_of(symbol_source(binary));
  if (fns.empty()) throw std::runtime_error("no function symbols for " + binary);
  std::mt19937_64 rng(12345);
  std::set<uint64_t> chosen;
  uint64_t code_bytes = 0;
  for (auto& f : fns) code_bytes += f.size;
  if (count > code_bytes / 2) count = code_bytes / 2;
  while (chosen.size() < count) {
    const Function& f = fns[rng() % fns.size()];
    chosen.insert(f.start + rng() % f.size);
  }
  std::vector<uint64_t> addresses(chosen.begin(), chosen.end());
  std::shuffle(addresses.begin(), addresses.end(), rng);
  Dump d(out, binary);
  d.thread(1, "main");
  std::FILE* f = std::fopen(list.c_str(), "w");
  if (!f) throw std::runtime_error("cannot write " + list);
  uint64_t t = 0;
  for (uint64_t a : addresses) {
    d.sample(1, t += 1'000'000, std::nullopt, {kBias + a});
    std::fprintf(f, "0x%llx\n", static_cast<unsigned long long>(a));
  }
  std::fclose(f);
  d.end(t + 1);
  std::printf("%zu addresses in %zu functions\n", addresses.size(), fns.size());
  return 0;
}

int long_mode(const std::string& binary, const std::string& out, int threads, int seconds,
              int rate) {
  std::vector<Function> fns = functions_of(symbol_source(binary));
  if (fns.empty()) throw std::runtime_error("no function symbols for " + binary);
  std::mt19937_64 rng(777);
  // Stacks share their outer frames, like real programs: a few roots, deeper variety.
  constexpr size_t kStacks = 20000;
  std::vector<std::vector<uint64_t>> stacks;
  std::vector<uint64_t> roots;
  for (int i = 0; i < 50; ++i) {
    const Function& f = fns[rng() % fns.size()];
    roots.push_back(kBias + f.start + 1 + rng() % (f.size - 1));
  }
  for (size_t s = 0; s < kStacks; ++s) {
    size_t depth = 8 + rng() % 33;
    std::vector<uint64_t> frames(depth);
    for (size_t i = 0; i < depth; ++i) {
      const Function& f =
          fns[rng() % (i + 1 < depth / 2 ? std::min<size_t>(fns.size(), 3000) : fns.size())];
      frames[i] = kBias + f.start + 1 + rng() % (f.size - 1);
    }
    frames.back() = roots[rng() % roots.size()];
    stacks.push_back(std::move(frames));
  }
  Dump d(out, binary);
  for (int t = 1; t <= threads; ++t) d.thread(t, "worker " + std::to_string(t));
  const uint64_t interval = 1'000'000'000ull / rate;
  const uint64_t ticks = uint64_t(seconds) * rate;
  std::geometric_distribution<size_t> hot(0.002);  // a few stacks take most samples
  uint64_t samples = 0;
  for (uint64_t tick = 0; tick < ticks; ++tick) {
    uint64_t time = tick * interval;
    for (int t = 1; t <= threads; ++t) {
      if (tick > 0 && rng() % 10 == 0) {
        d.repeat(t, time);
      } else {
        d.sample(t, time, interval - rng() % 1000, stacks[hot(rng) % kStacks]);
      }
      ++samples;
    }
  }
  d.end(ticks * interval);
  std::printf("%llu samples, %d threads, %zu distinct stacks to draw from\n",
              static_cast<unsigned long long>(samples), threads, kStacks);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "addresses" && argc == 6) {
      return addresses_mode(argv[2], std::stoul(argv[3]), argv[4], argv[5]);
    }
    if (mode == "long" && argc == 7) {
      return long_mode(argv[2], argv[3], std::stoi(argv[4]), std::stoi(argv[5]),
                       std::stoi(argv[6]));
    }
    std::fprintf(stderr,
                 "usage: make_bench_dump addresses BINARY COUNT OUT.inprof ADDRESSES.txt\n"
                 "       make_bench_dump long BINARY OUT.inprof THREADS SECONDS RATE_HZ\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_bench_dump: %s\n", e.what());
    return 1;
  }
}
