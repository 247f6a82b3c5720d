// The allocation records' round trip through a dump, and symbolicate's allocation tables
// (tools/symbolicate/convert/allocation_converter.h).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "convert/allocation_converter.h"
#include "dump/dump_reader.h"
#include "dump/dump_records.h"
#include "read/profile_model.h"
#include "write/folded_writer.h"

namespace inprof {
namespace {

using internal::AllocationRecord;
using internal::AllocationStatsRecord;
using internal::FreeRecord;
using namespace inprof::symbolicate;

template <class Record>
std::vector<uint8_t> payload(const Record& r) {
  std::vector<uint8_t> bytes;
  internal::ByteWriter w(&bytes);
  internal::encode(w, r);
  bytes.resize(w.view().size());
  return bytes;
}

TEST(AllocationRecordsTest, RoundTrip) {
  const std::vector<uint64_t> frames = {0x401233, 0x401500, 0x7f0000001000};
  std::vector<uint8_t> bytes(256);
  internal::ByteWriter w(std::span<uint8_t>(bytes.data(), bytes.size()));
  internal::encode_allocation(w, 77, 123456789, 0x5555000010, 4096, 524800, 4, 1,
                              std::span<const uint64_t>(frames));
  ASSERT_FALSE(w.overflowed());
  internal::ByteReader r(w.view());
  AllocationRecord a;
  ASSERT_TRUE(internal::decode(r, a));
  EXPECT_EQ(a.tid, 77u);
  EXPECT_EQ(a.time_ns, 123456789u);
  EXPECT_EQ(a.address, 0x5555000010u);
  EXPECT_EQ(a.size, 4096u);
  EXPECT_EQ(a.weight, 524800u);
  EXPECT_EQ(a.kind, 4);
  EXPECT_EQ(a.flags, 1u);
  EXPECT_EQ(a.frames, frames);
  EXPECT_EQ(internal::record_time(internal::RecordType::kAllocation, w.view()), 123456789u);

  const auto free_bytes = payload(FreeRecord{78, 200000000, 0x5555000010});
  internal::ByteReader fr(free_bytes);
  FreeRecord f;
  ASSERT_TRUE(internal::decode(fr, f));
  EXPECT_EQ(f.tid, 78u);
  EXPECT_EQ(f.time_ns, 200000000u);
  EXPECT_EQ(f.address, 0x5555000010u);

  const auto stats_bytes = payload(AllocationStatsRecord{512 << 10, 10, 1, 2, 7});
  internal::ByteReader sr(stats_bytes);
  AllocationStatsRecord s;
  ASSERT_TRUE(internal::decode(sr, s));
  EXPECT_EQ(s.sample_bytes, 512u << 10);
  EXPECT_EQ(s.sampled, 10u);
  EXPECT_EQ(s.dropped, 1u);
  EXPECT_EQ(s.untracked, 2u);
  EXPECT_EQ(s.frees, 7u);
}

AllocationRecord allocation(uint64_t tid, uint64_t time, uint64_t address, uint64_t weight,
                            uint64_t leaf) {
  AllocationRecord a;
  a.tid = tid;
  a.time_ns = time;
  a.address = address;
  a.size = weight;
  a.weight = weight;
  a.frames = {leaf, 0x400100};
  return a;
}

struct Converted {
  ProfileBuilder builder;
  Counter memory;
  AllocationFacts facts;
};

// Two threads (1 and 2) in the profile; thread 3 only frees.
void convert(ProfileModel& model, Converted& out) {
  std::unordered_map<uint64_t, ThreadIndex> thread_of;
  for (uint64_t tid : {1, 2}) {
    Thread t;
    t.tid = tid;
    thread_of[tid] = out.builder.add_thread(std::move(t));
  }
  out.facts = convert_allocations(
      model, thread_of,
      [](RawStackId id, uint64_t) { return std::optional<StackIndex>(StackIndex{id}); },
      out.builder, &out.memory);
}

TEST(AllocationConverterTest, FreeGoesIntoTheAllocatingThreadsTableInTimeOrder) {
  ProfileModel model;
  // File order is not time order: the sampler writes an allocation after frees that follow it.
  model.on_free(FreeRecord{3, 5000000, 0x1000});  // thread 3 frees thread 1's block
  model.on_allocation(allocation(1, 1000000, 0x1000, 100, 0x401000));
  model.on_allocation(allocation(2, 2000000, 0x2000, 50, 0x402000));
  model.on_free(FreeRecord{2, 500, 0x9999});  // matches nothing
  Converted c;
  convert(model, c);
  const NativeAllocationTable& t1 = c.builder.threads()[0].allocations;
  ASSERT_EQ(t1.size(), 2u);
  EXPECT_EQ(t1.time_ns[0], 1000000u);
  EXPECT_EQ(t1.weight[0], 100);
  EXPECT_TRUE(t1.stack[0].has_value());
  EXPECT_EQ(t1.time_ns[1], 5000000u);
  EXPECT_EQ(t1.weight[1], -100);
  EXPECT_FALSE(t1.stack[1].has_value());
  EXPECT_EQ(t1.address[1], 0x1000u);
  EXPECT_EQ(t1.thread_id[1], 3u);  // the thread that freed it
  const NativeAllocationTable& t2 = c.builder.threads()[1].allocations;
  ASSERT_EQ(t2.size(), 1u);
  EXPECT_EQ(t2.weight[0], 50);
  EXPECT_EQ(c.facts.allocations, 2u);
  EXPECT_EQ(c.facts.matched_frees, 1u);
  EXPECT_EQ(c.facts.unmatched_frees, 1u);
  EXPECT_EQ(c.facts.retained_bytes, 50);
  // The memory counter: live bytes, one point per millisecond.
  ASSERT_EQ(c.memory.value.size(), 3u);
  EXPECT_EQ(c.memory.value[0], 100);
  EXPECT_EQ(c.memory.value[1], 150);
  EXPECT_EQ(c.memory.value[2], 50);
  EXPECT_EQ(c.memory.count[0] + c.memory.count[1] + c.memory.count[2], 50);
}

TEST(AllocationConverterTest, AnAddressAllocatedAgainWhileLiveGetsASyntheticFree) {
  ProfileModel model;
  model.on_allocation(allocation(1, 1000, 0x1000, 100, 0x401000));
  model.on_allocation(allocation(2, 2000, 0x1000, 30, 0x402000));  // the free was not tracked
  Converted c;
  convert(model, c);
  const NativeAllocationTable& t1 = c.builder.threads()[0].allocations;
  ASSERT_EQ(t1.size(), 2u);
  EXPECT_EQ(t1.weight[1], -100);
  EXPECT_EQ(t1.time_ns[1], 2000u);
  EXPECT_EQ(c.facts.synthetic_frees, 1u);
  EXPECT_EQ(c.facts.retained_bytes, 30);
}

TEST(AllocationConverterTest, AllocationsOfAThreadLeftOutAreNotWritten) {
  ProfileModel model;
  model.on_allocation(allocation(9, 1000, 0x1000, 100, 0x401000));  // tid 9: not in the profile
  model.on_free(FreeRecord{1, 2000, 0x1000});
  Converted c;
  convert(model, c);
  EXPECT_EQ(c.builder.threads()[0].allocations.size(), 0u);
  EXPECT_EQ(c.facts.allocations, 0u);
  EXPECT_EQ(c.facts.unmatched_frees, 1u);
}

// The folded lines of a profile, written to a temporary file and read back.
std::string folded(const ProfileBuilder& b, FoldedWeight weight) {
  std::FILE* f = std::tmpfile();
  EXPECT_NE(f, nullptr);
  if (!f) return {};
  EXPECT_TRUE(write_folded_stacks(b, f, weight));
  std::rewind(f);
  std::string text;
  char buffer[256];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) text.append(buffer, n);
  std::fclose(f);
  return text;
}

TEST(FoldedAllocationsTest, LinesCountAllocatedOrRetainedBytesPerAllocatingStack) {
  ProfileBuilder b;
  CategoryIndex cat = b.add_category({"Other", "grey", {"Other"}});
  auto frame = [&](const char* name, uint64_t address) {
    FuncIndex f = b.handle_for_func(b.handle_for_string(name), std::nullopt, std::nullopt, 1);
    return b.handle_for_frame(f, address, 0, cat, 0, std::nullopt, 1);
  };
  StackIndex main_stack = b.handle_for_stack(std::nullopt, frame("main", 0x10));
  StackIndex a_stack = b.handle_for_stack(main_stack, frame("site_a", 0x20));
  StackIndex b_stack = b.handle_for_stack(main_stack, frame("site_b", 0x30));
  Thread t;
  t.name = "worker";
  t.samples.push_back({main_stack, 1000, 0});
  NativeAllocationTable& a = t.allocations;
  auto row = [&](uint64_t time, int64_t weight, std::optional<StackIndex> stack, uint64_t address) {
    a.time_ns.push_back(time);
    a.weight.push_back(weight);
    a.stack.push_back(stack);
    a.address.push_back(address);
    a.thread_id.push_back(1);
  };
  row(1, 100, a_stack, 0x1000);
  row(2, 40, b_stack, 0x2000);
  row(3, 7, a_stack, 0x3000);
  row(4, -100, std::nullopt, 0x1000);  // site_a's first block freed
  row(5, -5, std::nullopt, 0x9000);    // a free matching nothing: ignored
  row(6, 1000, std::nullopt, 0x4000);  // no stack: left out
  b.add_thread(std::move(t));

  EXPECT_EQ(folded(b, FoldedWeight::kSamples), "worker;main 1\n");
  EXPECT_EQ(folded(b, FoldedWeight::kAllocatedBytes),
            "worker;main;site_a 107\n"
            "worker;main;site_b 40\n");
  EXPECT_EQ(folded(b, FoldedWeight::kRetainedBytes),
            "worker;main;site_a 7\n"
            "worker;main;site_b 40\n");
}

}  // namespace
}  // namespace inprof
