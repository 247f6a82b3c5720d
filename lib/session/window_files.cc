#include "session/window_files.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <system_error>
#include <utility>

namespace inprof::internal {
namespace {

bool has_window_field(const std::string& pattern) {
  for (size_t i = 0; i + 1 < pattern.size(); ++i) {
    if (pattern[i] != '%') continue;
    if (pattern[i + 1] == 'n' || pattern[i + 1] == 't') return true;
    ++i;  // "%%"
  }
  return false;
}

// "app.inprof" -> "app-%n.inprof"; a path without an extension gets "-%n" at its end.
std::string with_window_number(const std::string& path) {
  const size_t slash = path.rfind('/');
  const size_t dot = path.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash) || dot == 0 ||
      dot == slash + 1) {
    return path + "-%n";
  }
  return path.substr(0, dot) + "-%n" + path.substr(dot);
}

}  // namespace

std::string utc_timestamp(uint64_t unix_ns) {
  using namespace std::chrono;
  const sys_seconds t{seconds(unix_ns / 1'000'000'000)};
  const sys_days day = floor<days>(t);
  const year_month_day ymd{day};
  const hh_mm_ss hms{t - day};
  char text[32];
  std::snprintf(text, sizeof text, "%04d%02u%02uT%02d%02d%02dZ", int(ymd.year()),
                unsigned(ymd.month()), unsigned(ymd.day()), int(hms.hours().count()),
                int(hms.minutes().count()), int(hms.seconds().count()));
  return text;
}

WindowFiles::WindowFiles(std::string pattern, size_t keep, uint64_t pid)
    : pattern_(has_window_field(pattern) ? std::move(pattern) : with_window_number(pattern)),
      keep_(keep),
      pid_(pid) {}

std::string WindowFiles::path(uint64_t number, uint64_t start_unix_ns) const {
  std::string out;
  for (size_t i = 0; i < pattern_.size(); ++i) {
    if (pattern_[i] != '%' || i + 1 == pattern_.size()) {
      out += pattern_[i];
      continue;
    }
    const char c = pattern_[++i];
    if (c == 'n') {
      out += std::to_string(number);
    } else if (c == 'p') {
      out += std::to_string(pid_);
    } else if (c == 't') {
      out += utc_timestamp(start_unix_ns);
    } else if (c == '%') {
      out += '%';
    } else {
      out += '%';
      out += c;
    }
  }
  return out;
}

size_t WindowFiles::closed(const std::string& path) {
  written_.push_back(path);
  size_t removed = 0;
  while (keep_ != 0 && written_.size() > keep_) {
    std::error_code ignored;
    removed += std::filesystem::remove(written_.front(), ignored) ? 1 : 0;
    written_.pop_front();
  }
  return removed;
}

}  // namespace inprof::internal
