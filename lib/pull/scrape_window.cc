#include "pull/scrape_window.h"

#include <algorithm>

#include "pull/module_mappings.h"
#include "sampling/sampler_constants.h"
#include "session/process_info.h"

namespace inprof::internal {

ScrapeWindow::ScrapeWindow(uint64_t duration_ns)
    : duration_ns_(duration_ns),
      builder_({{"samples", "count"}, {"cpu", "nanoseconds"}, {"wall", "nanoseconds"}}, "cpu",
               {"cpu", "nanoseconds"}, 0) {}

void ScrapeWindow::attached(uint64_t session_start_ns, const Options& options) {
  const auto interval_ns = static_cast<uint64_t>(options.interval.count());
  interval_ns_ = interval_ns;
  const uint64_t now = monotonic_ns();
  from_ns_ = now > session_start_ns ? now - session_start_ns : 0;
  until_ns_ = from_ns_ + duration_ns_;
  builder_.set_period(static_cast<int64_t>(interval_ns));
}

void ScrapeWindow::record(RecordType type, std::span<const uint8_t> payload) {
  ByteReader r(payload);
  switch (type) {
    case RecordType::kThreadStart:
    case RecordType::kThreadName: {
      ThreadRecord t;
      if (decode(r, t)) threads_[t.tid].name = std::move(t.name);
      return;
    }
    case RecordType::kString: {
      StringRecord s;
      if (decode(r, s)) strings_[s.id] = std::move(s.text);
      return;
    }
    case RecordType::kModuleLoad: {
      ModuleRecord m;
      if (decode(r, m)) modules_[m.id] = std::move(m);
      return;
    }
    case RecordType::kSample:
      add_sample(payload);
      return;
    case RecordType::kSampleRepeat:
      add_repeat(payload);
      return;
    case RecordType::kMarker: {
      MarkerRecord m;
      if (decode(r, m)) markers_.marker(m);
      return;
    }
    default:
      return;
  }
}

void ScrapeWindow::add_sample(std::span<const uint8_t> payload) {
  SampleHead head;
  std::span<const uint8_t> stack;
  if (!split_sample(payload, head, stack) || head.time_ns >= until_ns_) return;
  ByteReader r(stack);
  if (!decode_stack(r, scratch_)) return;
  ThreadWindow& t = threads_[head.tid];
  t.frames.assign(scratch_.frames.begin(), scratch_.frames.end());
  t.labels.assign(scratch_.labels.begin(), scratch_.labels.end());
  t.flags = scratch_.flags;
  t.have_stack = true;
  weigh(t, head.tid, head.time_ns, head.cpu_delta_ns);
}

void ScrapeWindow::add_repeat(std::span<const uint8_t> payload) {
  ByteReader r(payload);
  SampleRepeatRecord repeat;
  if (!decode(r, repeat) || repeat.time_ns >= until_ns_) return;
  ThreadWindow& t = threads_[repeat.tid];
  if (!t.have_stack) return;  // its sample came before the tap was attached
  weigh(t, repeat.tid, repeat.time_ns, repeat.cpu_delta_ns);
}

void ScrapeWindow::weigh(ThreadWindow& t, uint64_t tid, uint64_t time_ns,
                         std::optional<uint64_t> cpu_delta) {
  const uint64_t wall =
      t.have_previous && time_ns >= t.previous_ns ? time_ns - t.previous_ns : interval_ns_;
  t.have_previous = true;
  t.previous_ns = time_ns;
  if (time_ns < from_ns_) return;
  // As symbolicate weighs them (ProfileModel::push_sample), no CPU dropped: an on-CPU sample
  // carries at most 16 intervals, what it carried past that (a gap in the sampling) is under
  // [ran between samples] alone; the CPU a copy asleep in a system call (or a repeat of it, the
  // tail written as its thread ended) carries is under that frame above its stack, and the
  // sample is the sleep.
  const bool unseen = t.flags & kSampleRanUnseen;
  const uint64_t most = kMostIntervalsPerSample * interval_ns_;
  uint64_t cpu = 0;
  if (t.flags & kSampleOnCpu) {
    const uint64_t all = cpu_delta.value_or(interval_ns_);
    cpu = std::min(all, most);
    if (all > cpu) add_unseen(tid, t, time_ns, all - cpu, /*above_frames=*/false);
  } else if (unseen) {
    cpu = cpu_delta.value_or(0);
  } else if ((t.flags & kSampleWait) && cpu_delta.value_or(0) > 0) {
    add_unseen(tid, t, time_ns, *cpu_delta, /*above_frames=*/true);
  }
  std::vector<uint64_t> locations;
  locations.reserve(t.frames.size() + 1);
  if (unseen && cpu > 0) locations.push_back(builder_.named_location("[ran between samples]"));
  for (size_t i = 0; i < t.frames.size(); ++i) {
    locations.push_back(builder_.location(t.frames[i], /*call_site=*/i > 0));
  }
  if (t.frames.empty()) locations.push_back(builder_.named_location("[no stack]"));
  markers_.add(tid, time_ns, std::move(locations), sample_labels(tid, t),
               {1, static_cast<int64_t>(cpu), static_cast<int64_t>(wall)});
  ++samples_;
}

void ScrapeWindow::add_unseen(uint64_t tid, const ThreadWindow& t, uint64_t time_ns, uint64_t cpu,
                              bool above_frames) {
  std::vector<uint64_t> locations{builder_.named_location("[ran between samples]")};
  if (above_frames) {
    for (size_t i = 0; i < t.frames.size(); ++i) {
      locations.push_back(builder_.location(t.frames[i], /*call_site=*/i > 0));
    }
  }
  markers_.add(tid, time_ns, std::move(locations), sample_labels(tid, t),
               {0, static_cast<int64_t>(cpu), 0});
}

std::vector<PprofLabel> ScrapeWindow::sample_labels(uint64_t tid, const ThreadWindow& t) {
  std::vector<PprofLabel> labels;
  labels.push_back({builder_.string("thread_name"), builder_.string(t.name), 0});
  labels.push_back({builder_.string("tid"), 0, static_cast<int64_t>(tid)});
  // The program's label scopes (inprof::LabelScope), outermost first.
  for (auto l = t.labels.rbegin(); l != t.labels.rend(); ++l) {
    auto text = strings_.find(l->string_id);
    if (text != strings_.end()) {
      labels.push_back({builder_.string("label"), builder_.string(text->second), 0});
    }
  }
  return labels;
}

std::string ScrapeWindow::pprof(uint64_t start_unix_ns, uint64_t duration_ns) {
  markers_.flush();
  add_module_mappings(modules_, builder_);
  return builder_.encode(static_cast<int64_t>(start_unix_ns), static_cast<int64_t>(duration_ns));
}

}  // namespace inprof::internal
