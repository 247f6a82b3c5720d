#include "write/pprof_writer.h"

#include <array>
#include <map>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "convert/sample_weight.h"
#include "pprof/profile_fields.h"
#include "pprof/proto_encoder.h"
#include "pprof/string_table.h"
#include "write/stack_walk.h"

namespace inprof::symbolicate {
namespace {

// profile.proto's field numbers (lib/pprof/profile_fields.h).
namespace profile_field = internal::pprof_field::profile;
namespace value_type_field = internal::pprof_field::value_type;
namespace sample_field = internal::pprof_field::sample;
namespace label_field = internal::pprof_field::label;
namespace mapping_field = internal::pprof_field::mapping;
namespace location_field = internal::pprof_field::location;
namespace line_field = internal::pprof_field::line;
namespace function_field = internal::pprof_field::function;
using internal::ProtoEncoder;
using StringTable = internal::PprofStringTable;

// What the symbolication found for a library, from the frames it named.
struct LibFindings {
  bool functions = false, filenames = false, line_numbers = false;
};

class PprofEncoder {
 public:
  PprofEncoder(const ProfileBuilder& p, const std::vector<PprofMapping>& mappings)
      : p_(p), mappings_(mappings), findings_(p.libs().size()) {}

  std::string encode() {
    ProtoEncoder profile;
    // off_cpu: the time a stack spent blocked or not running (its idle samples' weights), what
    // `wall` holds beyond `cpu`, by stack: `-sample_index=off_cpu` is the off-CPU profile.
    const std::array<std::pair<const char*, const char*>, 4> types = {{{"samples", "count"},
                                                                       {"cpu", "nanoseconds"},
                                                                       {"wall", "nanoseconds"},
                                                                       {"off_cpu", "nanoseconds"}}};
    for (const auto& [type, unit] : types)
      profile.add_message(profile_field::kSampleType, value_type(type, unit));
    uint64_t last_ns = 0;
    for (const Thread& t : p_.threads()) add_thread_samples(t, profile, last_ns);
    for (const ProtoEncoder& l : location_messages_)
      profile.add_message(profile_field::kLocation, l);
    for (const ProtoEncoder& f : function_messages_)
      profile.add_message(profile_field::kFunction, f);
    add_mappings(profile);
    const Meta& meta = p_.meta();
    profile.add_varint(profile_field::kTimeNanos, meta.start_unix_ns + meta.profiling_start_ns);
    const uint64_t end_ns = meta.profiling_end_ns.value_or(last_ns);
    profile.add_varint(profile_field::kDurationNanos,
                       end_ns > meta.profiling_start_ns ? end_ns - meta.profiling_start_ns : 0);
    profile.add_message(profile_field::kPeriodType, value_type("cpu", "nanoseconds"));
    profile.add_varint(profile_field::kPeriod, meta.interval_ns);
    if (!meta.product.empty()) {
      profile.add_packed(profile_field::kComment, {strings_.index(meta.product)});
    }
    profile.add_varint(profile_field::kDefaultSampleType, strings_.index("cpu"));
    // Last: every other part has added its strings.
    for (const std::string& s : strings_.strings())
      profile.add_bytes(profile_field::kStringTable, s);
    return profile.bytes();
  }

 private:
  ProtoEncoder value_type(const char* type, const char* unit) {
    ProtoEncoder v;
    v.add_varint(value_type_field::kType, strings_.index(type));
    v.add_varint(value_type_field::kUnit, strings_.index(unit));
    return v;
  }

  std::optional<LibIndex> lib_of(FrameIndex frame) const {
    const std::optional<ResourceIndex> r = p_.funcs().resource[raw(p_.frames().func[raw(frame)])];
    if (!r) return std::nullopt;
    return p_.resources().lib[raw(*r)];
  }

  uint64_t function_id(FuncIndex func) {
    auto [it, inserted] = functions_.try_emplace(raw(func), function_messages_.size() + 1);
    if (!inserted) return it->second;
    const FuncTable& funcs = p_.funcs();
    const uint64_t name = strings_.index(p_.strings()[raw(funcs.name[raw(func)])]);
    ProtoEncoder f;
    f.add_varint(function_field::kId, it->second);
    f.add_varint(function_field::kName, name);
    f.add_varint(function_field::kSystemName, name);
    if (const std::optional<SourceIndex> source = funcs.source[raw(func)]) {
      f.add_varint(function_field::kFilename,
                   strings_.index(p_.strings()[raw(p_.sources().filename[raw(*source)])]));
    }
    f.add_varint(function_field::kStartLine, funcs.line_number[raw(func)].value_or(0));
    function_messages_.push_back(std::move(f));
    return it->second;
  }

  // One Location: a frame and the frames inlined into it, outermost first.
  uint64_t location_id(const std::vector<FrameIndex>& run) {
    std::vector<uint32_t> key;
    for (FrameIndex f : run) key.push_back(raw(f));
    auto [it, inserted] = locations_.try_emplace(std::move(key), location_messages_.size() + 1);
    if (!inserted) return it->second;
    const FrameTable& frames = p_.frames();
    ProtoEncoder l;
    l.add_varint(location_field::kId, it->second);
    const FrameIndex outer = run.front();
    if (const std::optional<LibIndex> lib = lib_of(outer)) {
      l.add_varint(location_field::kMappingId, raw(*lib) + 1);
      const uint64_t start = raw(*lib) < mappings_.size() ? mappings_[raw(*lib)].start : 0;
      if (const std::optional<uint64_t> a = frames.address[raw(outer)]) {
        l.add_varint(location_field::kAddress, start + *a);
      }
      LibFindings& found = findings_[raw(*lib)];
      for (FrameIndex f : run) {
        const FuncIndex func = frames.func[raw(f)];
        found.functions =
            found.functions || frames.native_symbol[raw(f)] || p_.funcs().source[raw(func)];
        found.filenames = found.filenames || p_.funcs().source[raw(func)];
        found.line_numbers = found.line_numbers || frames.line[raw(f)];
      }
    }
    // Innermost first, as profile.proto orders a location's lines.
    for (auto f = run.rbegin(); f != run.rend(); ++f) {
      ProtoEncoder line;
      line.add_varint(line_field::kFunctionId, function_id(frames.func[raw(*f)]));
      line.add_varint(line_field::kLine, frames.line[raw(*f)].value_or(0));
      l.add_message(location_field::kLine, line);
    }
    location_messages_.push_back(std::move(l));
    return it->second;
  }

  // The stack's locations, leaf first.
  const std::vector<uint64_t>& stack_locations(StackIndex stack) {
    auto [it, inserted] = stack_locations_.try_emplace(raw(stack));
    if (!inserted) return it->second;
    const std::vector<FrameIndex> frames = frames_root_first(p_, stack);
    const FrameTable& ft = p_.frames();
    std::vector<uint64_t> ids;
    for (size_t i = 0; i < frames.size();) {
      size_t j = i + 1;
      // The frames inlined at the same address follow their caller, one level deeper each.
      while (j < frames.size() && ft.inline_depth[raw(frames[j])] > 0 &&
             ft.inline_depth[raw(frames[j])] == ft.inline_depth[raw(frames[j - 1])] + 1 &&
             ft.address[raw(frames[j])] == ft.address[raw(frames[i])] &&
             lib_of(frames[j]) == lib_of(frames[i])) {
        ++j;
      }
      ids.push_back(location_id(std::vector<FrameIndex>(frames.begin() + i, frames.begin() + j)));
      i = j;
    }
    it->second.assign(ids.rbegin(), ids.rend());
    return it->second;
  }

  void add_thread_samples(const Thread& t, ProtoEncoder& profile, uint64_t& last_ns) {
    std::map<uint32_t, std::array<uint64_t, 4>> by_stack;  // samples, cpu, wall, off-CPU ns
    SampleWeigher weigher(p_.meta(), t);
    t.samples.for_each([&](const SampleTable::Sample& s) {
      const bool idle = s.stack && is_idle_leaf(p_, *s.stack);
      const uint64_t weight = weigher.weight_ns(s, idle);
      const uint64_t wall = weigher.since_ns();
      if (s.time_ns > last_ns) last_ns = s.time_ns;
      if (!s.stack) return;  // no location to put it at (the summary counts them)
      std::array<uint64_t, 4>& v = by_stack[raw(*s.stack)];
      v[0] += 1;
      v[1] += idle ? 0 : weight;
      v[2] += wall;
      v[3] += idle ? weight : 0;
    });
    ProtoEncoder labels[3];
    labels[0].add_varint(label_field::kKey, strings_.index("thread_name"));
    labels[0].add_varint(label_field::kStr, strings_.index(t.name));
    labels[1].add_varint(label_field::kKey, strings_.index("tid"));
    labels[1].add_varint(label_field::kNum, t.tid);
    labels[2].add_varint(label_field::kKey, strings_.index("pid"));
    labels[2].add_varint(label_field::kNum, t.pid);
    for (const auto& [stack, values] : by_stack) {
      ProtoEncoder sample;
      sample.add_packed(sample_field::kLocationId, stack_locations(static_cast<StackIndex>(stack)));
      sample.add_packed(sample_field::kValue, {values[0], values[1], values[2], values[3]});
      for (const ProtoEncoder& label : labels) sample.add_message(sample_field::kLabel, label);
      profile.add_message(profile_field::kSample, sample);
    }
  }

  void add_mappings(ProtoEncoder& profile) {
    const std::vector<Lib>& libs = p_.libs();
    for (size_t i = 0; i < libs.size(); ++i) {
      const PprofMapping known = i < mappings_.size() ? mappings_[i] : PprofMapping{};
      const LibFindings& found = findings_[i];
      ProtoEncoder m;
      m.add_varint(mapping_field::kId, i + 1);
      m.add_varint(mapping_field::kMemoryStart, known.start);
      m.add_varint(mapping_field::kMemoryLimit, known.end);
      m.add_varint(mapping_field::kFileOffset, known.file_offset);
      m.add_varint(mapping_field::kFilename, strings_.index(libs[i].path));
      if (!known.build_id.empty()) {
        m.add_varint(mapping_field::kBuildId, strings_.index(known.build_id));
      }
      m.add_bool(mapping_field::kHasFunctions, found.functions);
      m.add_bool(mapping_field::kHasFilenames, found.filenames);
      m.add_bool(mapping_field::kHasLineNumbers, found.line_numbers);
      // Line numbers come from DWARF, whose inline chains the symbolizer always reads.
      m.add_bool(mapping_field::kHasInlineFrames, found.line_numbers);
      profile.add_message(profile_field::kMapping, m);
    }
  }

  const ProfileBuilder& p_;
  const std::vector<PprofMapping>& mappings_;
  std::vector<LibFindings> findings_;
  StringTable strings_;
  std::unordered_map<uint32_t, uint64_t> functions_;
  std::vector<ProtoEncoder> function_messages_;
  std::map<std::vector<uint32_t>, uint64_t> locations_;
  std::vector<ProtoEncoder> location_messages_;
  std::unordered_map<uint32_t, std::vector<uint64_t>> stack_locations_;
};

}  // namespace

bool write_pprof(const ProfileBuilder& profile, const std::vector<PprofMapping>& mappings,
                 std::FILE* out) {
  const std::string bytes = PprofEncoder(profile, mappings).encode();
  return std::fwrite(bytes.data(), 1, bytes.size(), out) == bytes.size() && !std::ferror(out);
}

}  // namespace inprof::symbolicate
