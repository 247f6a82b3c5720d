#include "write/gzip_stream.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

namespace inprof::symbolicate {
namespace {

// Compression runs on a thread of its own, behind a bounded queue: writing a long profile's JSON
// and deflating it take about as long as each other, so the two overlap instead of adding up.
class Compressor {
 public:
  explicit Compressor(gzFile gz) : gz_(gz), worker_([this] { run(); }) {}

  // Queues a copy of `data`; false once compressing or writing has failed.
  bool write(const char* data, size_t size) {
    std::unique_lock lock(mutex_);
    space_.wait(lock, [&] { return queued_bytes_ < kMaxQueuedBytes || failed_; });
    if (failed_) return false;
    queue_.emplace_back(data, size);
    queued_bytes_ += size;
    work_.notify_one();
    return true;
  }

  // Compresses what is queued, ends the gzip stream; false if anything failed.
  bool close() {
    {
      std::lock_guard lock(mutex_);
      closing_ = true;
    }
    work_.notify_one();
    worker_.join();
    bool ok = !failed_;
    if (gzclose(gz_) != Z_OK) ok = false;
    return ok;
  }

 private:
  static constexpr size_t kMaxQueuedBytes = 8 << 20;

  void run() {
    for (;;) {
      std::string piece;
      {
        std::unique_lock lock(mutex_);
        work_.wait(lock, [&] { return !queue_.empty() || closing_; });
        if (queue_.empty()) return;
        piece = std::move(queue_.front());
        queue_.pop_front();
      }
      bool ok = true;
      for (size_t done = 0; done < piece.size();) {
        // gzwrite takes an unsigned length; write in pieces well below its limit.
        unsigned n = static_cast<unsigned>(std::min<size_t>(piece.size() - done, 1u << 30));
        int written = gzwrite(gz_, piece.data() + done, n);
        if (written <= 0) {
          ok = false;
          break;
        }
        done += static_cast<size_t>(written);
      }
      std::lock_guard lock(mutex_);
      queued_bytes_ -= piece.size();
      if (!ok) failed_ = true;
      space_.notify_one();
    }
  }

  gzFile gz_;
  std::mutex mutex_;
  std::condition_variable work_, space_;
  std::deque<std::string> queue_;
  size_t queued_bytes_ = 0;
  bool closing_ = false;
  bool failed_ = false;
  std::thread worker_;  // last: starts once the rest is ready
};

ssize_t gz_write(void* cookie, const char* data, size_t size) {
  if (!static_cast<Compressor*>(cookie)->write(data, size)) {
    errno = EIO;
    return -1;
  }
  return static_cast<ssize_t>(size);
}

int gz_close(void* cookie) {
  auto* compressor = static_cast<Compressor*>(cookie);
  const bool ok = compressor->close();
  delete compressor;
  if (!ok) {
    errno = EIO;
    return -1;
  }
  return 0;
}

std::FILE* wrap(gzFile gz) {
  if (!gz) return nullptr;
  gzbuffer(gz, 1 << 17);
  auto* compressor = new Compressor(gz);
  cookie_io_functions_t io = {};
  io.write = gz_write;
  io.close = gz_close;
  std::FILE* f = fopencookie(compressor, "w", io);
  if (!f) gz_close(compressor);
  return f;
}

}  // namespace

std::FILE* open_gzip_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return nullptr;
  return open_gzip_stream(fd, true);
}

std::FILE* open_gzip_stream(int fd, bool close_fd) {
  int own = close_fd ? fd : ::dup(fd);
  if (own < 0) return nullptr;
  // Level 1: profiles are long runs of small numbers; the faster levels shrink them nearly as
  // well, several times faster.
  gzFile gz = gzdopen(own, "wb1");
  if (!gz) {
    ::close(own);
    errno = ENOMEM;
    return nullptr;
  }
  return wrap(gz);
}

}  // namespace inprof::symbolicate
