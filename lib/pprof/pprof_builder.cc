#include "pprof/pprof_builder.h"

#include "pprof/profile_fields.h"
#include "pprof/proto_encoder.h"

namespace inprof::internal {
namespace field = pprof_field;

PprofBuilder::PprofBuilder(std::vector<PprofValueType> types, std::string_view default_type,
                           PprofValueType period_type, int64_t period)
    : types_(std::move(types)),
      default_type_(default_type),
      period_type_(std::move(period_type)),
      period_(period) {}

void PprofBuilder::add_mapping(const PprofMapping& mapping) {
  if (mapping.limit <= mapping.start) return;
  // Overlaps the one below it, or the one above it: dropped.
  auto above = mapping_starts_.lower_bound(mapping.start);
  if (above != mapping_starts_.end() && above->first < mapping.limit) return;
  if (above != mapping_starts_.begin() &&
      mappings_[std::prev(above)->second].limit > mapping.start) {
    return;
  }
  mapping_starts_.emplace(mapping.start, mappings_.size());
  mappings_.push_back(mapping);
}

uint64_t PprofBuilder::mapping_of(uint64_t address) const {
  auto it = mapping_starts_.upper_bound(address);
  if (it == mapping_starts_.begin()) return 0;
  --it;
  return address < mappings_[it->second].limit ? it->second + 1 : 0;
}

uint64_t PprofBuilder::location(uint64_t address, bool call_site) {
  if (call_site && address > 0) --address;
  auto [it, inserted] = address_ids_.try_emplace(address, locations_.size() + 1);
  if (inserted) locations_.push_back(Location{address, 0});
  return it->second;
}

uint64_t PprofBuilder::named_location(std::string_view name) {
  const uint64_t name_index = strings_.index(name);
  auto [it, inserted] = name_ids_.try_emplace(name_index, locations_.size() + 1);
  if (inserted) locations_.push_back(Location{0, name_index});
  return it->second;
}

void PprofBuilder::add_sample(std::span<const uint64_t> locations,
                              std::span<const PprofLabel> labels, std::span<const int64_t> values) {
  std::vector<uint64_t> key(locations.begin(), locations.end());
  key.push_back(~uint64_t{0});
  for (const PprofLabel& l : labels) {
    key.insert(key.end(), {l.key, l.str, static_cast<uint64_t>(l.num)});
  }
  std::vector<int64_t>& sum = samples_[std::move(key)];
  sum.resize(types_.size());
  for (size_t i = 0; i < values.size() && i < sum.size(); ++i) sum[i] += values[i];
}

std::string PprofBuilder::encode(int64_t time_nanos, int64_t duration_nanos) {
  ProtoEncoder profile;
  auto value_type = [this](const PprofValueType& t) {
    ProtoEncoder v;
    v.add_varint(field::value_type::kType, strings_.index(t.type));
    v.add_varint(field::value_type::kUnit, strings_.index(t.unit));
    return v;
  };
  for (const PprofValueType& t : types_)
    profile.add_message(field::profile::kSampleType, value_type(t));
  for (const auto& [key, values] : samples_) {
    ProtoEncoder sample;
    size_t i = 0;
    std::vector<uint64_t> ids;
    for (; i < key.size() && key[i] != ~uint64_t{0}; ++i) ids.push_back(key[i]);
    sample.add_packed(field::sample::kLocationId, ids);
    std::vector<uint64_t> packed;
    for (int64_t v : values) packed.push_back(static_cast<uint64_t>(v));
    sample.add_packed(field::sample::kValue, packed);
    for (++i; i + 3 <= key.size(); i += 3) {
      ProtoEncoder label;
      label.add_varint(field::label::kKey, key[i]);
      label.add_varint(field::label::kStr, key[i + 1]);
      label.add_varint(field::label::kNum, key[i + 2]);
      sample.add_message(field::sample::kLabel, label);
    }
    profile.add_message(field::profile::kSample, sample);
  }
  for (size_t m = 0; m < mappings_.size(); ++m) {
    const PprofMapping& known = mappings_[m];
    ProtoEncoder e;
    e.add_varint(field::mapping::kId, m + 1);
    e.add_varint(field::mapping::kMemoryStart, known.start);
    e.add_varint(field::mapping::kMemoryLimit, known.limit);
    e.add_varint(field::mapping::kFileOffset, known.file_offset);
    e.add_varint(field::mapping::kFilename, strings_.index(known.path));
    if (!known.build_id.empty())
      e.add_varint(field::mapping::kBuildId, strings_.index(known.build_id));
    profile.add_message(field::profile::kMapping, e);
  }
  uint64_t functions = 0;
  for (size_t l = 0; l < locations_.size(); ++l) {
    const Location& loc = locations_[l];
    ProtoEncoder e;
    e.add_varint(field::location::kId, l + 1);
    if (loc.function_name == 0) {
      e.add_varint(field::location::kMappingId, mapping_of(loc.address));  // as mapped now
      e.add_varint(field::location::kAddress, loc.address);
    }
    if (loc.function_name != 0) {
      ProtoEncoder function;
      function.add_varint(field::function::kId, ++functions);
      function.add_varint(field::function::kName, loc.function_name);
      function.add_varint(field::function::kSystemName, loc.function_name);
      profile.add_message(field::profile::kFunction, function);
      ProtoEncoder line;
      line.add_varint(field::line::kFunctionId, functions);
      e.add_message(field::location::kLine, line);
    }
    profile.add_message(field::profile::kLocation, e);
  }
  profile.add_varint(field::profile::kTimeNanos, static_cast<uint64_t>(time_nanos));
  profile.add_varint(field::profile::kDurationNanos, static_cast<uint64_t>(duration_nanos));
  profile.add_message(field::profile::kPeriodType, value_type(period_type_));
  profile.add_varint(field::profile::kPeriod, static_cast<uint64_t>(period_));
  profile.add_varint(field::profile::kDefaultSampleType, strings_.index(default_type_));
  for (const std::string& s : strings_.strings())
    profile.add_bytes(field::profile::kStringTable, s);
  return profile.bytes();
}

}  // namespace inprof::internal
