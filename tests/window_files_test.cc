// Continuous mode's file names (%n, %t, %p, the "-%n" added when the pattern has neither) and
// keep_files removing the oldest windows.
#include "session/window_files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace inprof::internal {
namespace {

constexpr uint64_t kStart = 1'795'667'400'000'000'000;  // 2026-11-26 04:30:00 UTC

TEST(WindowFiles, ExpandsNumberTimeAndPid) {
  EXPECT_EQ(WindowFiles("/d/app-%p-%n.inprof", 0, 42).path(7, kStart), "/d/app-42-7.inprof");
  EXPECT_EQ(WindowFiles("/d/app-%t.inprof", 0, 42).path(7, kStart),
            "/d/app-20261126T043000Z.inprof");
  EXPECT_EQ(WindowFiles("/d/100%%-%n", 0, 1).path(3, kStart), "/d/100%-3");
  EXPECT_EQ(utc_timestamp(0), "19700101T000000Z");
}

TEST(WindowFiles, APatternWithoutNumberOrTimeGetsOne) {
  EXPECT_EQ(WindowFiles("/d/app.inprof", 0, 1).path(2, kStart), "/d/app-2.inprof");
  EXPECT_EQ(WindowFiles("/d.x/app", 0, 1).path(2, kStart), "/d.x/app-2");
  // %p alone does not tell windows apart.
  EXPECT_EQ(WindowFiles("/d/app-%p.inprof", 0, 9).path(2, kStart), "/d/app-9-2.inprof");
}

TEST(WindowFiles, KeepRemovesTheOldest) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("window-files-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  WindowFiles files((dir / "w-%n.inprof").string(), 2, 1);
  for (uint64_t n = 1; n <= 4; ++n) {
    const std::string path = files.path(n, kStart);
    std::ofstream(path) << "x";
    EXPECT_EQ(files.closed(path), n <= 2 ? 0u : 1u);
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "w-1.inprof"));
  EXPECT_FALSE(std::filesystem::exists(dir / "w-2.inprof"));
  EXPECT_TRUE(std::filesystem::exists(dir / "w-3.inprof"));
  EXPECT_TRUE(std::filesystem::exists(dir / "w-4.inprof"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace inprof::internal
