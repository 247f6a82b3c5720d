// The environment variables that start the profiler without code changes (LD_PRELOAD).
#include "env_options.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <map>
#include <string>

namespace inprof::internal {
namespace {

std::optional<EnvConfig> parse(const std::map<std::string, std::string>& vars, std::string* error) {
  return parse_env(
      [&](const char* name) -> const char* {
        auto it = vars.find(name);
        return it == vars.end() ? nullptr : it->second.c_str();
      },
      error);
}

TEST(EnvOptions, DefaultsWhenNothingIsSet) {
  std::string error;
  auto c = parse({}, &error);
  ASSERT_TRUE(c) << error;
  EXPECT_FALSE(c->startup);
  EXPECT_EQ(c->options.mode, Mode::kStream);
  EXPECT_FALSE(c->options.crash_capture);
}

TEST(EnvOptions, ReadsEveryVariable) {
  std::string error;
  auto c = parse({{"INPROF_STARTUP", "1"},
                  {"INPROF_OUTPUT", "/tmp/x-%p.inprof"},
                  {"INPROF_INTERVAL", "500us"},
                  {"INPROF_DURATION", "2s"},
                  {"INPROF_THREADS", "worker,io"},
                  {"INPROF_BUFFER_SIZE", "64M"},
                  {"INPROF_UNWINDER", "fp"},
                  {"INPROF_MODE", "ring"},
                  {"INPROF_RING_SECONDS", "30"},
                  {"INPROF_SIGNAL_CAPTURE", "SIGUSR1"},
                  {"INPROF_CRASH", "/tmp/crash-%p.inprof"}},
                 &error);
  ASSERT_TRUE(c) << error;
  EXPECT_TRUE(c->startup);
  EXPECT_EQ(c->options.output_path.find("%p"), std::string::npos);
  EXPECT_EQ(c->options.interval, std::chrono::microseconds(500));
  EXPECT_EQ(c->duration, std::chrono::seconds(2));
  EXPECT_EQ(c->options.thread_filters, (std::vector<std::string>{"worker", "io"}));
  EXPECT_EQ(c->options.buffer_size, 64u << 20);
  EXPECT_EQ(c->options.unwinder, UnwindMethod::kFramePointer);
  EXPECT_EQ(c->options.mode, Mode::kRing);
  EXPECT_EQ(c->options.ring_seconds, std::chrono::seconds(30));
  EXPECT_EQ(c->options.capture_signal, SIGUSR1);
  EXPECT_TRUE(c->options.crash_capture);
  EXPECT_EQ(c->options.crash_path.find("%p"), std::string::npos);
  EXPECT_EQ(c->options.crash_path.rfind("/tmp/crash-", 0), 0u);
}

TEST(EnvOptions, CrashOneMeansTheDefaultPath) {
  std::string error;
  auto c = parse({{"INPROF_MODE", "ring"}, {"INPROF_CRASH", "1"}}, &error);
  ASSERT_TRUE(c) << error;
  EXPECT_TRUE(c->options.crash_capture);
  EXPECT_TRUE(c->options.crash_path.empty());
}

TEST(EnvOptions, BadValuesNameTheVariable) {
  for (const auto& [name, value] :
       std::map<std::string, std::string>{{"INPROF_MODE", "circular"},
                                          {"INPROF_RING_SECONDS", "ten"},
                                          {"INPROF_RING_SECONDS", "0"},
                                          {"INPROF_SIGNAL_CAPTURE", "SIGNOPE"},
                                          {"INPROF_INTERVAL", "fast"},
                                          {"INPROF_UNWINDER", "magic"}}) {
    std::string error;
    EXPECT_FALSE(parse({{name, value}}, &error)) << name << "=" << value;
    EXPECT_NE(error.find(name), std::string::npos) << error;
  }
}

TEST(EnvOptions, HelpListsTheFlightRecorderVariables) {
  const std::string help = env_help();
  for (const char* name :
       {"INPROF_MODE", "INPROF_RING_SECONDS", "INPROF_SIGNAL_CAPTURE", "INPROF_CRASH"}) {
    EXPECT_NE(help.find(name), std::string::npos) << name;
  }
}

}  // namespace
}  // namespace inprof::internal
