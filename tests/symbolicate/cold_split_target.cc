// A program for the llvm-symbolizer agreement test (llvm_agreement_test.cc), built -O2 -g: GCC
// moves the unlikely paths below (throws, aborts, [[unlikely]] branches) out of their functions
// into "name.cold" parts in .text.unlikely, before the hot parts in the link. One DWARF function
// then has two ranges, and a function with internal linkage has no DW_AT_linkage_name: the ELF
// symbol names it, and the symbol at its lowest address is the .cold part's. Functions of every
// kind get split: internal and external linkage, members, templates, inlined callees and clones.
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

__attribute__((noipa)) int checked_divide(int a, int b) {
  if (__builtin_expect(b == 0, 0))
    throw std::invalid_argument("divide by zero: " + std::to_string(a));
  return a / b;
}

__attribute__((noipa)) std::string load(const std::string& path, size_t size) {
  std::vector<char> data(size);
  for (size_t i = 0; i < size; ++i) data[i] = static_cast<char>(path[i % path.size()] ^ i);
  if (data.empty()) [[unlikely]] {
    std::fprintf(stderr, "empty file %s\n", path.c_str());
    std::abort();
  }
  return std::string(data.begin(), data.begin() + std::min<size_t>(size, 8));
}

struct Account {
  long balance = 0;
  __attribute__((noinline)) void withdraw(long amount) {
    if (__builtin_expect(amount > balance, 0)) {
      throw std::runtime_error("overdrawn by " + std::to_string(amount - balance));
    }
    balance -= amount;
  }
};

template <typename T>
__attribute__((noinline)) T sum_checked(const std::vector<T>& values) {
  T total{};
  for (const T& v : values) {
    if (__builtin_expect(v < T{}, 0)) throw std::out_of_range("negative value");
    total += v;
  }
  return total;
}

// Inlined into its callers, cold path and all.
inline int parse_digit(char c) {
  if (__builtin_expect(c < '0' || c > '9', 0)) {
    throw std::invalid_argument(std::string("not a digit: ") + c);
  }
  return c - '0';
}

__attribute__((noinline)) int parse_number(const std::string& text) {
  int n = 0;
  for (char c : text) n = n * 10 + parse_digit(c);
  return n;
}

}  // namespace

// External linkage: DWARF carries its linkage name.
__attribute__((noinline)) int lookup(const std::vector<int>& table, size_t i) {
  if (__builtin_expect(i >= table.size(), 0)) {
    throw std::out_of_range("index " + std::to_string(i) + " of " + std::to_string(table.size()));
  }
  return table[i];
}

int main(int argc, char** argv) {
  int total = 0;
  try {
    total += checked_divide(100, argc);
    total += static_cast<int>(load(argv[0], 64).size());
    Account account{1000};
    account.withdraw(argc);
    total += static_cast<int>(account.balance);
    total += static_cast<int>(sum_checked(std::vector<long>{1, 2, 3}));
    total += static_cast<int>(sum_checked(std::vector<double>{1.5, 2.5}));
    total += parse_number(argc > 1 ? argv[1] : "42");
    total += lookup(std::vector<int>{1, 2, 3}, static_cast<size_t>(argc));
  } catch (const std::exception& e) {
    std::printf("error: %s\n", e.what());
  }
  std::printf("%d\n", total);
  return 0;
}
