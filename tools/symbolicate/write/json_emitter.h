// A thin layer over rapidjson's writer for the profile writers: every string made valid UTF-8,
// index types written as their numbers, columns of constants in one call.
#ifndef INPROF_TOOLS_SYMBOLICATE_JSON_EMITTER_H_
#define INPROF_TOOLS_SYMBOLICATE_JSON_EMITTER_H_

#include <rapidjson/filewritestream.h>
#include <rapidjson/writer.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "convert/profile_builder.h"

namespace inprof::symbolicate {

// Replaces bytes that are not valid UTF-8 with U+FFFD, so the JSON stays valid whatever the
// paths and symbol names hold.
std::string sanitize_utf8(std::string_view s);

using JsonWriter = rapidjson::Writer<rapidjson::FileWriteStream>;

class Emitter {
 public:
  explicit Emitter(JsonWriter& w) : w_(w) {}

  void key(const char* k) { w_.Key(k); }
  void str_key(std::string_view k) {
    std::string clean = sanitize_utf8(k);
    w_.Key(clean.data(), static_cast<rapidjson::SizeType>(clean.size()));
  }
  void str(std::string_view s) {
    std::string clean = sanitize_utf8(s);
    w_.String(clean.data(), static_cast<rapidjson::SizeType>(clean.size()));
  }
  void null() { w_.Null(); }
  void boolean(bool b) { w_.Bool(b); }
  void u64(uint64_t v) { w_.Uint64(v); }
  void i64(int64_t v) { w_.Int64(v); }
  void num(double v) { w_.Double(v); }
  void ms(uint64_t ns) { w_.Double(static_cast<double>(ns) / 1e6); }
  template <typename T>
  void opt_u64(const std::optional<T>& v) {
    if (v) {
      w_.Uint64(static_cast<uint64_t>(*v));
    } else {
      w_.Null();
    }
  }
  template <typename Index>
  void index(Index i) {
    w_.Uint(raw(i));
  }
  template <typename Index>
  void opt_index(const std::optional<Index>& i) {
    if (i) {
      w_.Uint(raw(*i));
    } else {
      w_.Null();
    }
  }
  void begin_object() { w_.StartObject(); }
  void end_object() { w_.EndObject(); }
  void begin_array() { w_.StartArray(); }
  void end_array() { w_.EndArray(); }

  template <typename F>
  void array(size_t n, F element) {
    w_.StartArray();
    for (size_t i = 0; i < n; ++i) element(i);
    w_.EndArray();
  }
  // A column of n identical constants.
  void null_column(size_t n) {
    array(n, [&](size_t) { w_.Null(); });
  }
  void bool_column(size_t n, bool value) {
    array(n, [&](size_t) { w_.Bool(value); });
  }
  void uint_column(size_t n, unsigned value) {
    array(n, [&](size_t) { w_.Uint(value); });
  }

 private:
  JsonWriter& w_;
};

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_JSON_EMITTER_H_
