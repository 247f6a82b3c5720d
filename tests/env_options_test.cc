// The environment variables that start the profiler without code changes (LD_PRELOAD).
#include "options/env_options.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "session/process_info.h"
#include "session/session.h"

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

// `inprof record` (issue 23, item 1): the process it started writes OUTPUT; its descendants,
// which inherit the variables, write OUTPUT-PID (or OUTPUT's %p), or nothing with
// INPROF_CHILDREN=0.
TEST(EnvOptions, DescendantsOfTheRecordedProcessWriteTheirOwnDump) {
  std::string error;
  const std::string self = std::to_string(process_id());
  auto root = parse(
      {{"INPROF_STARTUP", "1"}, {"INPROF_OUTPUT", "/tmp/app.inprof"}, {"INPROF_ROOT_PID", self}},
      &error);
  ASSERT_TRUE(root) << error;
  EXPECT_TRUE(root->startup);
  EXPECT_EQ(root->options.output_path, "/tmp/app.inprof");

  auto child = parse(
      {{"INPROF_STARTUP", "1"}, {"INPROF_OUTPUT", "/tmp/app.inprof"}, {"INPROF_ROOT_PID", "1"}},
      &error);
  ASSERT_TRUE(child) << error;
  EXPECT_TRUE(child->startup);
  EXPECT_EQ(child->options.output_path, "/tmp/app-" + self + ".inprof");

  auto pattern = parse(
      {{"INPROF_STARTUP", "1"}, {"INPROF_OUTPUT", "/tmp/d/%p.inprof"}, {"INPROF_ROOT_PID", "1"}},
      &error);
  ASSERT_TRUE(pattern) << error;
  EXPECT_EQ(pattern->options.output_path, "/tmp/d/" + self + ".inprof");

  auto alone =
      parse({{"INPROF_STARTUP", "1"}, {"INPROF_ROOT_PID", "1"}, {"INPROF_CHILDREN", "0"}}, &error);
  ASSERT_TRUE(alone) << error;
  EXPECT_FALSE(alone->startup);

  EXPECT_FALSE(parse({{"INPROF_ROOT_PID", "me"}}, &error));
  EXPECT_NE(error.find("INPROF_ROOT_PID='me'"), std::string::npos) << error;
  EXPECT_FALSE(parse({{"INPROF_CHILDREN", "2"}}, &error));
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

TEST(EnvOptions, RotationVariables) {
  std::string error;
  auto c = parse({{"INPROF_ROTATE", "60s"},
                  {"INPROF_KEEP_FILES", "12"},
                  {"INPROF_OUTPUT", "/tmp/app-%p-%n-%t.inprof"}},
                 &error);
  ASSERT_TRUE(c) << error;
  EXPECT_EQ(c->options.rotate_interval, std::chrono::seconds(60));
  EXPECT_EQ(c->options.keep_files, 12u);
  // %n and %t are the windows' own: the session expands them, window by window.
  EXPECT_NE(c->options.output_path.find("-%n-%t.inprof"), std::string::npos);
  EXPECT_EQ(c->options.output_path.find("%p"), std::string::npos);
  for (const auto& [name, value] :
       std::map<std::string, std::string>{{"INPROF_ROTATE", "60"},
                                          {"INPROF_ROTATE", "10ms"},
                                          {"INPROF_KEEP_FILES", "-1"},
                                          {"INPROF_KEEP_FILES", "all"}}) {
    EXPECT_FALSE(parse({{name, value}}, &error)) << name << "=" << value;
    EXPECT_EQ(error.find(name), 0u) << error;
  }
}

TEST(EnvOptions, ADurationWithoutAUnitIsRefusedWithAHint) {
  for (const auto& [name, hint] :
       std::map<std::string, std::string>{{"INPROF_DURATION", "give a unit: 5s, 5ms"},
                                          {"INPROF_INTERVAL", "give a unit: 5ms, 5us"}}) {
    std::string error;
    EXPECT_FALSE(parse({{name, "5"}}, &error)) << name;
    EXPECT_EQ(error, name + "='5': " + hint);
  }
}

TEST(EnvOptions, RefusesWhatStartWouldRefuseNamingTheVariable) {
  for (const auto& [name, value] :
       std::vector<std::pair<std::string, std::string>>{{"INPROF_INTERVAL", "10us"},
                                                        {"INPROF_INTERVAL", "2s"},
                                                        {"INPROF_INTERVAL", "inf"},
                                                        {"INPROF_DURATION", "0s"},
                                                        {"INPROF_DURATION", "-1s"},
                                                        {"INPROF_BUFFER_SIZE", "1K"},
                                                        {"INPROF_BUFFER_SIZE", "2G"},
                                                        {"INPROF_STACK_COPY_SIZE", "2M"},
                                                        {"INPROF_MAX_FRAMES", "7"},
                                                        {"INPROF_MAX_FRAMES", "5000"},
                                                        {"INPROF_MAX_FRAMES", "12x"},
                                                        {"INPROF_RING_SECONDS", "99999999999"},
                                                        {"INPROF_THREADS", ","}}) {
    std::string error;
    EXPECT_FALSE(parse({{"INPROF_MODE", "ring"}, {name, value}}, &error)) << name << "=" << value;
    EXPECT_EQ(error.rfind(name + "='" + value + "': ", 0), 0u) << error;
  }
}

TEST(EnvOptions, RingSettingsNeedRingMode) {
  for (const auto& [name, value] :
       std::map<std::string, std::string>{{"INPROF_CRASH", "1"},
                                          {"INPROF_SIGNAL_CAPTURE", "SIGUSR1"},
                                          {"INPROF_RING_SECONDS", "5"}}) {
    std::string error;
    EXPECT_FALSE(parse({{name, value}}, &error)) << name;
    EXPECT_NE(error.find(name), std::string::npos) << error;
    EXPECT_NE(error.find("INPROF_MODE=ring"), std::string::npos) << error;
  }
}

// The parser and Profiler::start() share their limits: what one accepts, the other does.
TEST(EnvOptions, TheLimitsAreThoseOfStart) {
  for (const auto& vars :
       std::vector<std::map<std::string, std::string>>{{{"INPROF_INTERVAL", "100us"},
                                                        {"INPROF_BUFFER_SIZE", "64K"},
                                                        {"INPROF_STACK_COPY_SIZE", "4K"},
                                                        {"INPROF_MAX_FRAMES", "8"}},
                                                       {{"INPROF_INTERVAL", "1s"},
                                                        {"INPROF_BUFFER_SIZE", "1G"},
                                                        {"INPROF_STACK_COPY_SIZE", "1M"},
                                                        {"INPROF_MAX_FRAMES", "4096"},
                                                        {"INPROF_MODE", "ring"},
                                                        {"INPROF_RING_SECONDS", "31536000"},
                                                        {"INPROF_CRASH", "1"}}}) {
    std::string error;
    auto c = parse(vars, &error);
    ASSERT_TRUE(c) << error;
    EXPECT_TRUE(validate(c->options).ok()) << validate(c->options).message();
  }
}

TEST(EnvOptions, ApplyingOneValueNamesNothing) {
  EnvConfig config;
  EXPECT_EQ(apply_env_variable("INPROF_INTERVAL", "fast", &config),
            "expected a duration such as 1ms or 500us (unit ns, us, ms or s)");
  EXPECT_EQ(apply_env_variable("INPROF_INTERVAL", "10us", &config), "must be from 100us to 1s");
  EXPECT_EQ(apply_env_variable("INPROF_INTERVAL", "250us", &config), std::nullopt);
  EXPECT_EQ(config.options.interval, std::chrono::microseconds(250));
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
