#include "profile_builder.h"

#include <algorithm>

namespace inprof::symbolicate {
namespace {

template <typename T>
int64_t key_of(const std::optional<T>& v) {
  return v ? static_cast<int64_t>(*v) : -1;
}

}  // namespace

StringIndex ProfileBuilder::handle_for_string(std::string_view s) {
  auto it = string_index_.find(s);
  if (it != string_index_.end()) return it->second;
  auto index = static_cast<StringIndex>(strings_.size());
  strings_.emplace_back(s);
  string_index_.emplace(strings_.back(), index);
  return index;
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
  auto [it, inserted] =
      source_index_.try_emplace(raw(name), static_cast<SourceIndex>(sources_.size()));
  if (inserted) sources_.filename.push_back(name);
  return it->second;
}

FuncIndex ProfileBuilder::handle_for_func(StringIndex name, std::optional<ResourceIndex> resource,
                                          std::optional<SourceIndex> source,
                                          std::optional<uint32_t> line) {
  auto key = std::make_tuple(raw(name), resource ? int64_t(raw(*resource)) : -1,
                             source ? int64_t(raw(*source)) : -1, key_of(line));
  auto [it, inserted] = func_index_.try_emplace(key, static_cast<FuncIndex>(funcs_.size()));
  if (inserted) {
    funcs_.name.push_back(name);
    funcs_.resource.push_back(resource);
    funcs_.source.push_back(source);
    funcs_.line_number.push_back(line);
  }
  return it->second;
}

NativeSymbolIndex ProfileBuilder::handle_for_native_symbol(LibIndex lib, uint64_t address,
                                                           StringIndex name,
                                                           std::optional<uint64_t> size) {
  auto [it, inserted] = native_symbol_index_.try_emplace(
      std::make_pair(raw(lib), address), static_cast<NativeSymbolIndex>(native_symbols_.size()));
  if (inserted) {
    native_symbols_.lib.push_back(lib);
    native_symbols_.address.push_back(address);
    native_symbols_.name.push_back(name);
    native_symbols_.function_size.push_back(size);
  }
  return it->second;
}

FrameIndex ProfileBuilder::handle_for_frame(FuncIndex func, std::optional<uint64_t> address,
                                            uint32_t inline_depth, CategoryIndex category,
                                            uint32_t subcategory,
                                            std::optional<NativeSymbolIndex> native_symbol,
                                            std::optional<uint32_t> line) {
  auto key = std::make_tuple(raw(func), key_of(address), inline_depth, raw(category), subcategory,
                             native_symbol ? int64_t(raw(*native_symbol)) : -1, key_of(line));
  auto [it, inserted] = frame_index_.try_emplace(key, static_cast<FrameIndex>(frames_.size()));
  if (inserted) {
    frames_.func.push_back(func);
    frames_.address.push_back(address);
    frames_.inline_depth.push_back(inline_depth);
    frames_.category.push_back(category);
    frames_.subcategory.push_back(subcategory);
    frames_.native_symbol.push_back(native_symbol);
    frames_.line.push_back(line);
  }
  return it->second;
}

FrameIndex ProfileBuilder::frame_with_category(FrameIndex frame, CategoryIndex category) {
  const uint32_t i = raw(frame);
  if (frames_.category[i] == category) return frame;
  // A new category starts at its first subcategory: the old one may not exist in it.
  return handle_for_frame(frames_.func[i], frames_.address[i], frames_.inline_depth[i], category, 0,
                          frames_.native_symbol[i], frames_.line[i]);
}

StackIndex ProfileBuilder::handle_for_stack(std::optional<StackIndex> prefix, FrameIndex frame) {
  uint64_t key = (uint64_t(prefix ? raw(*prefix) + 1ull : 0ull) << 32) | raw(frame);
  auto [it, inserted] = stack_index_.try_emplace(key, static_cast<StackIndex>(stacks_.size()));
  if (inserted) {
    stacks_.frame.push_back(frame);
    stacks_.prefix.push_back(prefix);
  }
  return it->second;
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
