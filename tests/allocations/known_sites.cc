// The accuracy program for sampled allocations (docs/design/allocations.md, section 6; issue 24).
//
// Three allocation sites allocate 60 %, 30 % and 10 % of a total (default 500 MB) in blocks of
// mixed sizes, each by its own means (malloc, new[], calloc), interleaved in rounds so that they
// share time; a fourth site leaks a fixed amount and never frees it. Everything else is freed
// before exit, so what is retained at the end is exactly the leak.
//
// The program prints its true totals per site and, for a sampling mean R (--sample-bytes), the
// standard deviation that byte sampling with weight s / (1 - exp(-s/R)) gives each site's share,
// so a check can tell a real error from the statistics of sampling.
//
// Its own bookkeeping allocates nothing (static arrays), so the only allocations it makes while
// running are the sites' (plus the C library's stdout buffer at the first print, after them).
//
// Usage: known_sites [--total-mb N] [--leak-mb N] [--sample-bytes R] [--seed N]
// Output, one line per site then a total line, `key=value` fields separated by spaces:
//   site=site_sixty kind=malloc bytes=... blocks=... share=0.600000 sigma_pp=1.234 retained=0
#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

namespace {

// A fixed sequence, so that every run allocates the same blocks in the same order.
struct Random {
  uint64_t state;
  uint64_t next() {
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 0x2545F4914F6CDD1DULL;
  }
};

// Block sizes: mostly small, some medium, a few large — the mix a real program has, and one
// that exercises all three regimes of the estimator (s << R, s ~ R, s >> R at R = 512 KiB).
size_t block_size(Random& random) {
  const uint64_t r = random.next();
  const unsigned pick = static_cast<unsigned>(r % 1000);
  const uint64_t v = r >> 16;
  if (pick < 900) return 16 + v % 4081;           // 16 B .. 4 KiB: 90 % of the blocks
  if (pick < 990) return 4096 + v % (61 * 1024);  // 4 KiB .. 65 KiB
  return 256 * 1024 + v % (768 * 1024 + 1);       // 256 KiB .. 1 MiB: 1 %
}

enum Site { kSixty, kThirty, kTen, kLeak, kSiteCount };
const char* const kSiteName[kSiteCount] = {"site_sixty", "site_thirty", "site_ten", "site_leak"};
const char* const kSiteKind[kSiteCount] = {"malloc", "new[]", "calloc", "malloc"};

struct Truth {
  uint64_t bytes = 0;
  uint64_t blocks = 0;
  double variance_at_r = 0;     // of the site's estimated bytes, for the R given
  double expected_samples = 0;  // sum over its blocks of the probability to be sampled
  uint64_t retained = 0;
};
Truth g_truth[kSiteCount];
double g_sample_bytes = 512 * 1024;

// Variance of one block's contribution to the estimate: sampled with p = 1 - e^(-s/R) and then
// weighted s / p, so Var = s^2 (1 - p) / p.
void account(Site site, size_t size) {
  Truth& t = g_truth[site];
  t.bytes += size;
  ++t.blocks;
  if (size == 0) return;
  const double s = static_cast<double>(size);
  const double p = -std::expm1(-s / g_sample_bytes);
  t.variance_at_r += s * s * (1 - p) / p;
  t.expected_samples += p;
}

// Each site keeps its last few blocks alive (so frees happen some time after their allocation,
// as in a real program) in a fixed ring; older ones are freed.
constexpr size_t kLive = 64;
void* g_live[3][kLive];
size_t g_live_size[3][kLive];
size_t g_live_next[3];

// The leak: blocks kept forever, reachable from here (a retained, not a lost, block).
constexpr size_t kMaxLeakBlocks = 1 << 16;
void* g_leaked[kMaxLeakBlocks];
size_t g_leaked_count;

void fail(const char* what) {
  std::fprintf(stderr, "known_sites: %s\n", what);
  std::exit(2);
}

void touch(void* p, size_t size) {
  // Write the first and last byte: the block is used, and the allocation cannot be elided.
  if (size == 0) return;
  static_cast<volatile char*>(p)[0] = 1;
  static_cast<volatile char*>(p)[size - 1] = 1;
}

void release(Site site, size_t slot) {
  void* old = g_live[site][slot];
  if (old == nullptr) return;
  if (site == kThirty) {
    delete[] static_cast<char*>(old);
  } else {
    std::free(old);
  }
  g_live[site][slot] = nullptr;
}

void keep(Site site, void* p, size_t size) {
  const size_t slot = g_live_next[site]++ % kLive;
  release(site, slot);
  g_live[site][slot] = p;
  g_live_size[site][slot] = size;
}

// The sites: not inlined, so each is a frame of its own in every allocation's stack.
__attribute__((noinline)) void site_sixty(Random& random, uint64_t target) {
  while (g_truth[kSixty].bytes < target) {
    const size_t size = block_size(random);
    void* p = std::malloc(size);
    if (p == nullptr) fail("malloc failed");
    touch(p, size);
    account(kSixty, size);
    keep(kSixty, p, size);
  }
}

__attribute__((noinline)) void site_thirty(Random& random, uint64_t target) {
  while (g_truth[kThirty].bytes < target) {
    const size_t size = block_size(random);
    char* p = new char[size];
    touch(p, size);
    account(kThirty, size);
    keep(kThirty, p, size);
  }
}

__attribute__((noinline)) void site_ten(Random& random, uint64_t target) {
  while (g_truth[kTen].bytes < target) {
    const size_t size = block_size(random);
    // calloc of (count, element): the bytes are count x element; the hooks see them as one block.
    void* p = std::calloc(1, size);
    if (p == nullptr) fail("calloc failed");
    touch(p, size);
    account(kTen, size);
    keep(kTen, p, size);
  }
}

__attribute__((noinline)) void site_leak(uint64_t bytes) {
  constexpr size_t kBlock = 64 * 1024;
  for (uint64_t done = 0; done < bytes && g_leaked_count < kMaxLeakBlocks; done += kBlock) {
    void* p = std::malloc(kBlock);
    if (p == nullptr) fail("malloc failed");
    touch(p, kBlock);
    account(kLeak, kBlock);
    g_truth[kLeak].retained += kBlock;
    g_leaked[g_leaked_count++] = p;
  }
}

uint64_t parse_number(const char* flag, const char* text) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0') {
    std::fprintf(stderr, "known_sites: %s needs a number, not '%s'\n", flag, text);
    std::exit(2);
  }
  return v;
}

}  // namespace

// The signals this process has a handler for, as /proc/self/status's SigCgt mask: a memory-only
// session (--no-cpu) must leave it as an unprofiled run has it.
std::string caught_signals() {
  FILE* status = std::fopen("/proc/self/status", "r");
  if (status == nullptr) return "unknown";
  char line[256];
  std::string mask = "unknown";
  while (std::fgets(line, sizeof(line), status) != nullptr) {
    if (std::strncmp(line, "SigCgt:", 7) == 0) {
      mask = line + 7;
      mask.erase(0, mask.find_first_not_of(" \t"));
      mask.erase(mask.find_last_not_of(" \t\n") + 1);
    }
  }
  std::fclose(status);
  return mask;
}

int main(int argc, char** argv) {
  uint64_t total_mb = 500;
  bool show_caught = false;
  uint64_t leak_mb = 8;
  uint64_t seed = 24;
  for (int i = 1; i < argc; ++i) {
    const char* flag = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr,
                   "usage: known_sites [--total-mb N] [--leak-mb N] [--sample-bytes R] "
                   "[--seed N] [--show-caught-signals 1]\n");
      return 2;
    }
    const uint64_t value = parse_number(flag, argv[++i]);
    if (std::strcmp(flag, "--total-mb") == 0) {
      total_mb = value;
    } else if (std::strcmp(flag, "--leak-mb") == 0) {
      leak_mb = value;
    } else if (std::strcmp(flag, "--sample-bytes") == 0) {
      if (value == 0) fail("--sample-bytes must be at least 1");
      g_sample_bytes = static_cast<double>(value);
    } else if (std::strcmp(flag, "--seed") == 0) {
      seed = value;
    } else if (std::strcmp(flag, "--show-caught-signals") == 0) {
      show_caught = value != 0;
    } else {
      std::fprintf(stderr, "known_sites: unknown option %s\n", flag);
      return 2;
    }
  }

  Random random{seed * 0x9E3779B97F4A7C15ULL + 1};
  const uint64_t total = total_mb * 1000 * 1000;
  // Rounds of 1 MB: each site allocates until its running total reaches its share of the rounds
  // so far (a block that overshoots is paid back in the next round), so all three run all along
  // and each ends within one block (at most 1 MiB) of its exact share.
  constexpr uint64_t kRound = 1000 * 1000;
  const uint64_t rounds = total / kRound;
  for (uint64_t r = 0; r < rounds; ++r) {
    const uint64_t so_far = (r + 1) * kRound;
    site_sixty(random, so_far / 10 * 6);
    site_thirty(random, so_far / 10 * 3);
    site_ten(random, so_far / 10);
    // The leak grows along the run (its blocks are spread over time, like a real leak).
    if (leak_mb != 0 && r % (rounds / 64 + 1) == 0) site_leak(leak_mb * 1000 * 1000 / 64);
  }
  // Everything but the leak is freed: retained memory at exit is exactly the leak.
  for (int site = kSixty; site <= kTen; ++site) {
    for (size_t slot = 0; slot < kLive; ++slot) release(static_cast<Site>(site), slot);
  }

  uint64_t all_bytes = 0;
  double all_variance = 0;
  double all_expected = 0;
  for (const Truth& t : g_truth) {
    all_bytes += t.bytes;
    all_variance += t.variance_at_r;
    all_expected += t.expected_samples;
  }
  // A share a = X / S of estimated totals: by the delta method,
  // Var(a) ~ ((1 - a)^2 Var(X) + a^2 (Var(S) - Var(X))) / S^2.
  for (int site = 0; site < kSiteCount; ++site) {
    const Truth& t = g_truth[site];
    const double s = static_cast<double>(all_bytes);
    const double a = all_bytes ? static_cast<double>(t.bytes) / s : 0;
    const double var =
        all_bytes
            ? ((1 - a) * (1 - a) * t.variance_at_r + a * a * (all_variance - t.variance_at_r)) /
                  (s * s)
            : 0;
    std::printf("site=%s kind=%s bytes=%llu blocks=%llu share=%.6f sigma_pp=%.3f retained=%llu\n",
                kSiteName[site], kSiteKind[site], static_cast<unsigned long long>(t.bytes),
                static_cast<unsigned long long>(t.blocks), a, 100 * std::sqrt(var),
                static_cast<unsigned long long>(t.retained));
  }
  std::printf("total bytes=%llu retained=%llu sample_bytes=%.0f expected_samples=%.0f\n",
              static_cast<unsigned long long>(all_bytes),
              static_cast<unsigned long long>(g_truth[kLeak].retained), g_sample_bytes,
              all_expected);
  if (show_caught) std::printf("caught_signals=%s\n", caught_signals().c_str());
  return 0;
}
