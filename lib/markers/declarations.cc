#include "markers/declarations.h"

namespace inprof::internal {

Declarations& Declarations::instance() {
  static auto* d = new Declarations;  // leaked: used until the very end of the process
  return *d;
}

Declarations::Declarations() {
  // The built-in categories of markers.h, in id order.
  const std::pair<const char*, Color> builtins[] = {
      {"Other", Color::kGrey},        {"Idle", Color::kTransparent}, {"IO", Color::kGreen},
      {"Network", Color::kLightBlue}, {"Graphics", Color::kOrange},  {"Memory", Color::kMagenta},
      {"User", Color::kYellow},
  };
  for (const auto& [name, color] : builtins) {
    categories_.push_back(CategoryRecord{static_cast<uint32_t>(categories_.size()),
                                         static_cast<uint8_t>(color), name});
  }
}

uint16_t Declarations::define_category(std::string_view name, Color color) {
  std::lock_guard lock(mutex_);
  for (const auto& c : categories_) {
    if (c.name == name) return static_cast<uint16_t>(c.id);
  }
  if (categories_.size() >= 0xffff) return 0;
  CategoryRecord rec{static_cast<uint32_t>(categories_.size()), static_cast<uint8_t>(color),
                     std::string(name)};
  categories_.push_back(rec);
  if (queue_) queue_->push(RecordType::kCategory, rec);
  return static_cast<uint16_t>(rec.id);
}

uint32_t Declarations::register_marker_type(const MarkerSchemaDescription& schema) {
  std::lock_guard lock(mutex_);
  MarkerSchemaRecord rec;
  rec.type = static_cast<uint32_t>(marker_types_.size() + 1);
  rec.name = schema.name;
  rec.table_label = schema.table_label;
  rec.tooltip_label = schema.tooltip_label;
  rec.chart_label = schema.chart_label;
  rec.description = schema.description;
  for (const MarkerField& f : schema.fields) {
    rec.fields.push_back(
        {std::string(f.key), std::string(f.label), static_cast<uint8_t>(f.format)});
  }
  marker_types_.push_back(rec);
  if (queue_) queue_->push(RecordType::kMarkerSchema, rec);
  return rec.type;
}

std::pair<uint32_t, std::atomic<int64_t>*> Declarations::register_counter(
    std::string_view name, std::string_view description, uint16_t category) {
  std::lock_guard lock(mutex_);
  CounterRecord rec{static_cast<uint32_t>(counter_records_.size()), category, std::string(name),
                    std::string(description)};
  counter_records_.push_back(rec);
  std::atomic<int64_t>* cell = &counter_values_.emplace_back(0);
  counter_count_.store(counter_records_.size(), std::memory_order_release);
  if (queue_) queue_->push(RecordType::kCounter, rec);
  return {rec.id, cell};
}

std::vector<Declarations::CounterCell> Declarations::counters() const {
  std::lock_guard lock(mutex_);
  std::vector<CounterCell> cells;
  for (size_t i = 0; i < counter_records_.size(); ++i) {
    cells.push_back(
        {counter_records_[i].id, const_cast<std::atomic<int64_t>*>(&counter_values_[i])});
  }
  return cells;
}

void Declarations::attach(MetadataQueue* queue) {
  std::lock_guard lock(mutex_);
  queue_ = queue;
  for (const auto& c : categories_) queue->push(RecordType::kCategory, c);
  for (const auto& t : marker_types_) queue->push(RecordType::kMarkerSchema, t);
  for (const auto& c : counter_records_) queue->push(RecordType::kCounter, c);
}

void Declarations::detach() {
  std::lock_guard lock(mutex_);
  queue_ = nullptr;
}

}  // namespace inprof::internal
