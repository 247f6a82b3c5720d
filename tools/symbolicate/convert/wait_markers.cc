// A thread's waits as intervals in its track (issue 43; part of Converter, converter.h): each run
// of samples that found the thread asleep in one wait (the same stack, call and object, without
// running in between) is one "Wait" marker from when it went to sleep to when it woke, with its
// reason, the program's function that waited, and the stack as the marker's cause.
//
// When it went to sleep: the sample before the run was the last that saw it awake; the thread
// then ran for the CPU time the run's first sample carries, so it slept from there on (CPU run
// unseen has no known time: it neither moves the start nor ends the wait). When it
// woke: the run's last sample, which the sampler writes at the time it saw the thread run again.
// Waits shorter than the threshold are left out, so a busy server's profile stays small; they
// stay in the samples.
#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "convert/converter.h"
#include "convert/marker_context.h"
#include "write/stack_walk.h"

namespace inprof::symbolicate {

namespace {

// One wait of a thread: its run of samples.
struct WaitSpan {
  RawStackId stack = kNoStack;
  uint64_t start_ns = 0, end_ns = 0;
  RawSample first;  // the run's first sample (its stack is the marker's cause)
};

// The spans of one thread's samples, in time order.
std::vector<WaitSpan> wait_spans(const ProfileModel& model, const ThreadInfo& info) {
  std::vector<RawSample> samples = info.samples.to_vector();
  if (!info.samples.in_time_order()) {
    std::stable_sort(samples.begin(), samples.end(),
                     [](const RawSample& a, const RawSample& b) { return a.time_ns < b.time_ns; });
  }
  std::vector<WaitSpan> spans;
  std::optional<WaitSpan> open;
  std::optional<uint64_t> previous_ns = info.start_ns;
  for (const RawSample& s : samples) {
    const RawStack* stack = s.stack != kNoStack ? &model.stack(s.stack) : nullptr;
    const bool waiting = stack && stack->wait && !(stack->flags & internal::kSampleOnCpu);
    const uint64_t ran_ns = s.cpu_delta_ns.value_or(0);
    // Still asleep there: a repeat without CPU, or one whose CPU was run unseen at no known time
    // (a new thread's start, a tail the sampler writes when it gives a timer back).
    const bool unseen = stack && (stack->flags & internal::kSampleRanUnseen);
    if (open && waiting && s.stack == open->stack && (ran_ns == 0 || unseen)) {
      open->end_ns = s.time_ns;
    } else {
      if (open) spans.push_back(*open);
      open.reset();
      if (waiting) {
        uint64_t start = previous_ns && *previous_ns <= s.time_ns ? *previous_ns : s.time_ns;
        if (!unseen) start = std::min(s.time_ns, start + ran_ns);
        open = WaitSpan{s.stack, start, s.time_ns, s};
      }
    }
    previous_ns = s.time_ns;
  }
  if (open) spans.push_back(*open);
  return spans;
}

// The graph colour a wait is drawn in: locks stand out, input and output less, sleeps least.
const char* wait_color(const std::string& reason) {
  if (reason.starts_with("futex") || reason.starts_with("flock") || reason.starts_with("fcntl")) {
    return "orange";
  }
  if (reason.find(" fd ") != std::string::npos) return "blue";
  return "grey";
}

// Reorders a marker table by start time (an interval end without a start sorts by its end).
void sort_by_start(MarkerTable& t) {
  std::vector<size_t> order(t.size());
  std::iota(order.begin(), order.end(), 0);
  auto at = [&](size_t i) { return t.start_ns[i].value_or(t.end_ns[i].value_or(0)); };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return at(a) < at(b); });
  MarkerTable sorted;
  for (size_t i : order) {
    sorted.name.push_back(t.name[i]);
    sorted.start_ns.push_back(t.start_ns[i]);
    sorted.end_ns.push_back(t.end_ns[i]);
    sorted.phase.push_back(t.phase[i]);
    sorted.category.push_back(t.category[i]);
    sorted.data.push_back(std::move(t.data[i]));
  }
  t = std::move(sorted);
}

}  // namespace

const std::string& Converter::wait_schema() {
  if (!wait_schema_) {
    std::string name = "Wait";
    for (int n = 2; context_keys_.contains(name); ++n) name = "Wait " + std::to_string(n);
    MarkerSchema schema;
    schema.name = name;
    schema.display = {"marker-chart", "marker-table", "timeline-overview"};
    schema.chart_label = "{marker.data.reason}";
    schema.table_label = "{marker.data.reason} in {marker.data.waitedIn}";
    schema.tooltip_label = "{marker.data.reason}";
    schema.description =
        "A wait of the thread: the system call it slept in and on what, from "
        "when it went to sleep to when it ran again (as its samples saw it)";
    schema.fields = {{"reason", "Waited on", "string"}, {"waitedIn", "Waited in", "string"}};
    // Its category, thread and colour as every other marker has them (marker_context.h).
    context_keys_[name] = add_context_fields(schema);
    b_.add_marker_schema(std::move(schema));
    wait_schema_ = name;
  }
  return *wait_schema_;
}

void Converter::add_wait_markers() {
  if (!wait_marker_ns_) return;
  uint64_t written = 0;
  for (const ThreadInfo& info : model_.threads()) {
    auto thread = thread_by_tid_.find(info.tid);
    if (thread == thread_by_tid_.end()) continue;
    MarkerTable& t = b_.thread(thread->second).markers;
    const size_t before = t.size();
    for (const WaitSpan& span : wait_spans(model_, info)) {
      if (span.end_ns - span.start_ns < *wait_marker_ns_) continue;
      // Where it slept (with what it ran before unseen left out: that is not the wait).
      const std::optional<StackIndex> stack =
          stacks_.stack_for(span.stack, span.first.time_ns, CpuUse::kNone);
      if (!stack) continue;
      const std::vector<FrameIndex> frames = frames_root_first(b_, *stack);
      std::string reason = frame_name(b_, frames.back());  // "[blocked: futex g_mutex]"
      if (reason.starts_with("[blocked: ") && reason.ends_with("]")) {
        reason = reason.substr(10, reason.size() - 11);
      }
      const std::optional<size_t> where = program_frame_below_leaf(b_, frames);
      const CategoryIndex category = b_.frames().category[raw(frames.back())];
      const MarkerContextKeys& keys = context_keys_.at(wait_schema());
      MarkerData data{wait_schema(), {}};
      data.fields.emplace_back("reason", reason);
      data.fields.emplace_back("waitedIn", where ? frame_name(b_, frames[*where]) : "");
      data.fields.emplace_back(keys.category, b_.categories()[raw(category)].name);
      data.fields.emplace_back(keys.thread, static_cast<int64_t>(info.tid));
      data.fields.emplace_back(keys.color, wait_color(reason));
      data.cause_stack = stack;
      data.cause_ns = span.first.time_ns;
      t.name.push_back(b_.handle_for_string(reason));
      t.start_ns.push_back(span.start_ns);
      t.end_ns.push_back(span.end_ns);
      t.phase.push_back(MarkerPhase::kInterval);
      t.category.push_back(category);
      t.data.push_back(std::move(data));
      ++written;
    }
    if (t.size() != before) sort_by_start(t);
  }
  b_.meta().extra.push_back(
      {"Wait markers (waits of at least " + std::to_string(*wait_marker_ns_ / 1'000'000) + " ms)",
       written});
}

}  // namespace inprof::symbolicate
