// Item (issue 39): the top of the descriptor range is the program's. A profiler that keeps its
// descriptors at limit-128 and up (out of the way of low numbers) must still not use, close or
// seek descriptors the program dup2()s there. Four threads compute first (so that a profiler has
// opened whatever it keeps per busy thread), then the program dup2()s a pipe's two ends and a
// file onto the 130 highest descriptors of its limit, streams known data through the pipe and
// into the file through those numbers while the threads compute on, and lets the threads end
// (a profiler closes what it kept for them). Every byte must arrive, the file must hold exactly
// what was written, and all 130 descriptors must still be open, each on what it was dup2()ed to.
#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "transparency.h"

namespace {

constexpr int kHigh = 130;
constexpr int kBlocks = 100;
constexpr size_t kBlockSize = 1000;

enum Kind { kPipeRead, kPipeWrite, kFile };

uint8_t byte_at(uint64_t i) { return uint8_t((i * 2654435761u) >> 13); }

bool write_all(int fd, const uint8_t* p, size_t n) {
  while (n > 0) {
    const ssize_t w = write(fd, p, n);
    if (w <= 0) return false;
    p += w;
    n -= size_t(w);
  }
  return true;
}

// Into the pipe's non-blocking write end: gives up if the reader has stopped (a read end closed
// under it) rather than wait forever on a full pipe.
bool write_pipe(int fd, const uint8_t* p, size_t n, const std::atomic<bool>& reader_done) {
  while (n > 0) {
    const ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EAGAIN && !reader_done.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    if (w <= 0) return false;
    p += w;
    n -= size_t(w);
  }
  return true;
}

}  // namespace

int main() {
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  const int cap = limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur > (1u << 20)
                      ? 1 << 20
                      : int(limit.rlim_cur);
  if (cap < 512) {  // the test needs the top of a usual range
    limit.rlim_cur =
        limit.rlim_max == RLIM_INFINITY || limit.rlim_max >= 1024 ? 1024 : limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }

  std::atomic<bool> stop{false};
  std::vector<std::thread> busy;
  for (int i = 0; i < 4; ++i) {
    busy.emplace_back([&] {
      while (!stop.load()) transparency::spin_cpu_ms(5);
    });
  }
  transparency::spin_cpu_ms(100);  // the threads are sampled before the dup2()s

  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return 2;
  fcntl(pipe_fds[0], F_SETFL, O_NONBLOCK);  // neither side waits for ever on the other
  fcntl(pipe_fds[1], F_SETFL, O_NONBLOCK);
  const int file = open("dup2_high.data", O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (file < 0) return 2;
  const int originals[3] = {pipe_fds[0], pipe_fds[1], file};
  struct stat original_stat[3];
  for (int k = 0; k < 3; ++k) fstat(originals[k], &original_stat[k]);

  getrlimit(RLIMIT_NOFILE, &limit);
  const int top = int(limit.rlim_cur) - 1;
  std::vector<int> fds_of[3];
  int dup_failures = 0;
  for (int i = 0; i < kHigh; ++i) {
    const int fd = top - i;
    const Kind kind = Kind(i % 3);
    if (dup2(originals[kind], fd) != fd) {
      ++dup_failures;
      continue;
    }
    fds_of[kind].push_back(fd);
  }
  std::printf("dup2 onto the %d highest descriptors: %s\n", kHigh,
              dup_failures == 0 ? "all done" : "some failed");

  // The reader drains the pipe through its high read ends in turn, checking every byte.
  const uint64_t total = uint64_t(kBlocks) * kBlockSize;
  std::atomic<uint64_t> received{0}, wrong{0};
  std::atomic<bool> reader_done{false}, writer_done{false};
  std::thread reader([&] {
    uint8_t buf[4096];
    size_t turn = 0;
    uint64_t at = 0;
    while (at < total) {
      const int fd = fds_of[kPipeRead][turn++ % fds_of[kPipeRead].size()];
      const bool writer_was_done = writer_done.load();
      const ssize_t n = read(fd, buf, sizeof(buf));
      if (n < 0 && errno == EAGAIN && !writer_was_done) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        continue;
      }
      if (n <= 0) break;
      for (ssize_t j = 0; j < n; ++j, ++at) {
        if (buf[j] != byte_at(at)) wrong.fetch_add(1);
      }
      received.store(at);
    }
    reader_done.store(true);
  });
  bool written = true;
  std::vector<uint8_t> block(kBlockSize);
  for (int b = 0; b < kBlocks; ++b) {  // ~400 ms: 4 ms of CPU per block
    transparency::spin_cpu_ms(4);
    for (size_t j = 0; j < kBlockSize; ++j) block[j] = byte_at(uint64_t(b) * kBlockSize + j);
    const int pfd = fds_of[kPipeWrite][size_t(b) % fds_of[kPipeWrite].size()];
    const int ffd = fds_of[kFile][size_t(b) % fds_of[kFile].size()];
    written = write_pipe(pfd, block.data(), kBlockSize, reader_done) && written;
    written = write_all(ffd, block.data(), kBlockSize) && written;
  }
  writer_done.store(true);
  reader.join();
  stop.store(true);
  for (auto& t : busy) t.join();
  transparency::spin_cpu_ms(50);  // the profiler notices the threads have gone
  std::this_thread::sleep_for(std::chrono::milliseconds(100));

  std::printf("every write succeeded: %s\n", written ? "yes" : "no");
  std::printf("every byte arrived through the pipe, intact: %s\n",
              received.load() == total && wrong.load() == 0 ? "yes" : "no");
  std::string content;
  {
    const int fd = open("dup2_high.data", O_RDONLY | O_CLOEXEC);
    uint8_t buf[4096];
    ssize_t n;
    while (fd >= 0 && (n = read(fd, buf, sizeof(buf))) > 0) content.append((char*)buf, size_t(n));
    if (fd >= 0) close(fd);
  }
  bool file_same = content.size() == total;
  for (uint64_t i = 0; file_same && i < total; ++i) file_same = uint8_t(content[i]) == byte_at(i);
  std::printf("the file holds exactly what was written: %s\n", file_same ? "yes" : "no");
  int still_open = 0, same_object = 0;
  for (int k = 0; k < 3; ++k) {
    for (int fd : fds_of[k]) {
      struct stat st;
      if (fcntl(fd, F_GETFD) < 0 || fstat(fd, &st) != 0) continue;
      ++still_open;
      if (st.st_dev == original_stat[k].st_dev && st.st_ino == original_stat[k].st_ino)
        ++same_object;
    }
  }
  std::printf("high descriptors still open: %d of %d, on what they were dup2()ed to: %d\n",
              still_open, kHigh, same_object);
  return 0;
}
