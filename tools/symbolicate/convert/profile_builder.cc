#include "convert/profile_builder.h"

#include <algorithm>

namespace inprof::symbolicate {
namespace {

template <typename T>
uint64_t key_of(const std::optional<T>& v) {
  return v ? static_cast<uint64_t>(*v) : ~uint64_t{0};
}

// Hashes a row's fields (integers) into one value; FlatIndexSet mixes it further.
template <typename... T>
uint64_t hash_fields(const T&... v) {
  uint64_t h = 0;
  ((h = (h ^ static_cast<uint64_t>(v)) * 0x100000001b3ull + (h >> 29)), ...);
  return h;
}

}  // namespace

StringIndex ProfileBuilder::handle_for_string(std::string_view s) {
  const auto next = static_cast<uint32_t>(strings_.size());
  const uint32_t row = string_index_.find_or_insert(std::hash<std::string_view>()(s), next,
                                                    [&](uint32_t r) { return strings_[r] == s; });
  if (row == next) strings_.emplace_back(s);
  return static_cast<StringIndex>(row);
}

CategoryIndex ProfileBuilder::add_category(Category category) {
  categories_.push_back(std::move(category));
  return static_cast<CategoryIndex>(categories_.size() - 1);
}

LibIndex ProfileBuilder::add_lib(Lib lib) {
  auto index = static_cast<LibIndex>(libs_.size());
  StringIndex name = handle_for_string(lib.name);
  libs_.push_back(std::move(lib));
  lib_resources_.push_back(static_cast<ResourceIndex>(resources_.size()));
  resources_.lib.push_back(index);
  resources_.name.push_back(name);
  return index;
}

SourceIndex ProfileBuilder::handle_for_source(std::string_view filename) {
  StringIndex name = handle_for_string(filename);
  const auto next = static_cast<uint32_t>(sources_.size());
  const uint32_t row = source_index_.find_or_insert(
      hash_fields(raw(name)), next, [&](uint32_t r) { return sources_.filename[r] == name; });
  if (row == next) sources_.filename.push_back(name);
  return static_cast<SourceIndex>(row);
}

FuncIndex ProfileBuilder::handle_for_func(StringIndex name, std::optional<ResourceIndex> resource,
                                          std::optional<SourceIndex> source,
                                          std::optional<uint32_t> line) {
  const auto next = static_cast<uint32_t>(funcs_.size());
  const uint32_t row = func_index_.find_or_insert(
      hash_fields(raw(name), key_of(resource), key_of(source), key_of(line)), next,
      [&](uint32_t r) {
        return funcs_.name[r] == name && funcs_.resource[r] == resource &&
               funcs_.source[r] == source && funcs_.line_number[r] == line;
      });
  if (row == next) {
    funcs_.name.push_back(name);
    funcs_.resource.push_back(resource);
    funcs_.source.push_back(source);
    funcs_.line_number.push_back(line);
  }
  return static_cast<FuncIndex>(row);
}

NativeSymbolIndex ProfileBuilder::handle_for_native_symbol(LibIndex lib, uint64_t address,
                                                           StringIndex name,
                                                           std::optional<uint64_t> size) {
  const auto next = static_cast<uint32_t>(native_symbols_.size());
  const uint32_t row =
      native_symbol_index_.find_or_insert(hash_fields(raw(lib), address), next, [&](uint32_t r) {
        return native_symbols_.lib[r] == lib && native_symbols_.address[r] == address;
      });
  if (row == next) {
    native_symbols_.lib.push_back(lib);
    native_symbols_.address.push_back(address);
    native_symbols_.name.push_back(name);
    native_symbols_.function_size.push_back(size);
  }
  return static_cast<NativeSymbolIndex>(row);
}

FrameIndex ProfileBuilder::handle_for_frame(FuncIndex func, std::optional<uint64_t> address,
                                            uint32_t inline_depth, CategoryIndex category,
                                            uint32_t subcategory,
                                            std::optional<NativeSymbolIndex> native_symbol,
                                            std::optional<uint32_t> line) {
  const auto next = static_cast<uint32_t>(frames_.size());
  const uint32_t row = frame_index_.find_or_insert(
      hash_fields(raw(func), key_of(address), inline_depth, raw(category), subcategory,
                  key_of(native_symbol), key_of(line)),
      next, [&](uint32_t r) {
        return frames_.func[r] == func && frames_.address[r] == address &&
               frames_.inline_depth[r] == inline_depth && frames_.category[r] == category &&
               frames_.subcategory[r] == subcategory && frames_.native_symbol[r] == native_symbol &&
               frames_.line[r] == line;
      });
  if (row == next) {
    frames_.func.push_back(func);
    frames_.address.push_back(address);
    frames_.inline_depth.push_back(inline_depth);
    frames_.category.push_back(category);
    frames_.subcategory.push_back(subcategory);
    frames_.native_symbol.push_back(native_symbol);
    frames_.line.push_back(line);
  }
  return static_cast<FrameIndex>(row);
}

StackIndex ProfileBuilder::handle_for_stack(std::optional<StackIndex> prefix, FrameIndex frame) {
  const auto next = static_cast<uint32_t>(stacks_.size());
  const uint32_t row = stack_index_.find_or_insert(
      hash_fields(key_of(prefix), raw(frame)), next,
      [&](uint32_t r) { return stacks_.frame[r] == frame && stacks_.prefix[r] == prefix; });
  if (row == next) {
    stacks_.frame.push_back(frame);
    stacks_.prefix.push_back(prefix);
  }
  return static_cast<StackIndex>(row);
}

ThreadIndex ProfileBuilder::add_thread(Thread thread) {
  threads_.push_back(std::move(thread));
  return static_cast<ThreadIndex>(threads_.size() - 1);
}

void SampleTable::write(uint64_t v) {
  while (v >= 0x80) {
    bytes_.push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  bytes_.push_back(static_cast<uint8_t>(v));
}

void SampleTable::set_source(size_t count, Source source) {
  bytes_.clear();
  size_ = count;
  source_ = std::move(source);
}

void SampleTable::push_back(const Sample& s) {
  uint64_t time = std::max(s.time_ns, last_time_);
  write(s.stack ? uint64_t(raw(*s.stack)) + 1 : 0);
  write(time - last_time_);
  // UINT64_MAX cannot be stored shifted by one; no thread runs for 584 years.
  write(s.cpu_delta_ns ? std::min<uint64_t>(*s.cpu_delta_ns, UINT64_MAX - 1) + 1 : 0);
  last_time_ = time;
  ++size_;
}

std::vector<SampleTable::Sample> SampleTable::to_vector() const {
  std::vector<Sample> out;
  out.reserve(size_);
  for_each([&](const Sample& s) { out.push_back(s); });
  return out;
}

}  // namespace inprof::symbolicate
