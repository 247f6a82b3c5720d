// OutputFile on POSIX: opened by open_output_file (no link, regular files only, mode 0600, locked
// against other processes while written).
//
// The descriptor lives in the program's table, where the program's own code may close it
// (close_range, a daemon's close loop) or put another file at its number (dup2). So before every
// write it is checked to still be the file opened (device and inode); when it is not, the file is
// opened again by its absolute path, appending, and only if it is still the same file. Its loss
// (the file deleted, the disk full) is said once on stderr when it happens: the profile from then
// on cannot be written, and the program is not told in any other way.
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>

#include "dump/dump_records.h"
#include "output_open_linux.h"
#include "owned_fd_linux.h"
#include "session/output_file.h"
#include "session/process_info.h"

namespace inprof::internal {
namespace {

Status os_error(const std::string& what, const std::string& path, int err) {
  return Status::error(Status::Code::kOutputError, what + " '" + path + "': " + std::strerror(err));
}

std::string absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof(cwd)) == nullptr) return path;
  return std::string(cwd) + "/" + path;
}

class PosixOutputFile final : public OutputFile {
 public:
  PosixOutputFile(int fd, const FileIdentity& identity, std::string path)
      : fd_(fd), identity_(identity), path_(std::move(path)), absolute_path_(absolute(path_)) {}
  ~PosixOutputFile() override { (void)close(); }

  Status write(std::span<const uint8_t> bytes) override {
    if (!failure_.ok()) return failure_;
    if (closed_) return Status::error(Status::Code::kOutputError, "write after close");
    while (!bytes.empty()) {
      const int fd = verified_fd();
      if (fd < 0) return failure_;
      const ssize_t n = ::write(fd, bytes.data(), bytes.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        return lost(os_error("cannot write", path_, errno));
      }
      bytes = bytes.subspan(static_cast<size_t>(n));
    }
    return {};
  }

  int descriptor() const override { return fd_; }

  void moved_to_private_table() override {
    FileIdentity now;
    // The lock is the open file's (output_open_linux.h): the writer's copy keeps it.
    if (fd_ >= 0 && identity_of(fd_, &now) && now == identity_) ::close(fd_);
  }

  Status close() override {
    closed_ = true;
    if (fd_ < 0) return {};
    // Closed only if the number is still ours: else it is the program's file now.
    FileIdentity now;
    const int fd = fd_;
    fd_ = -1;
    if (!identity_of(fd, &now) || !(now == identity_)) return {};
    if (::close(fd) != 0 && errno != EINTR) return os_error("cannot close", path_, errno);
    return {};
  }

 private:
  // The descriptor, once proven to be the dump; -1 (and failure_ set) when it is lost.
  int verified_fd() {
    struct stat st;
    if (fd_ >= 0 && fstat(fd_, &st) == 0 && uint64_t(st.st_dev) == identity_.device &&
        uint64_t(st.st_ino) == identity_.inode) {
      if (st.st_nlink == 0) {
        lost(Status::error(Status::Code::kOutputError,
                           "the dump '" + path_ + "' was deleted while it was written"));
        return -1;
      }
      return fd_;
    }
    // Not ours any more: forget the number (never close it) and find the file by its path.
    fd_ = -1;
    return reopen() ? fd_ : -1;
  }

  bool reopen() {
    const int fd = ::open(absolute_path_.c_str(),
                          O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
      lost(os_error("cannot reopen the dump", path_, errno));
      return false;
    }
    FileIdentity now;
    if (!identity_of(fd, &now) || !(now == identity_)) {
      ::close(fd);
      lost(Status::error(Status::Code::kOutputError,
                         "the dump '" + path_ + "' was replaced by another file"));
      return false;
    }
    // The program's close of our descriptor dropped our lock with it.
    lock(fd);
    const int flags = fcntl(fd, F_GETFL);
    if (flags >= 0) (void)fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    fd_ = fd;
    return true;
  }

  // Held against other processes while the file is written (see output_open_linux.h).
  static void lock(int fd) {
    struct flock lock = {};
    lock.l_type = F_WRLCK;
    lock.l_whence = SEEK_SET;
    (void)fcntl(fd, F_OFD_SETLK, &lock);
  }

  // Said once, when it happens: what is recorded from now on cannot be written.
  Status lost(Status why) {
    if (failure_.ok()) {
      failure_ = why;
      // Not stdio: its FILE lock and error flag are the program's.
      say_on_stderr("inprof: " + why.message() + "; the profile recorded from now on is lost\n");
    }
    return failure_;
  }

  int fd_;
  const FileIdentity identity_;
  const std::string path_;
  const std::string absolute_path_;  // a chdir() of the program must not send us elsewhere
  Status failure_;
  bool closed_ = false;
};

}  // namespace

std::unique_ptr<OutputFile> OutputFile::create(const std::string& path, Status* status,
                                               bool* held_elsewhere) {
  std::string error;
  bool held = false;
  const int fd = open_output_file(path, "", &error, &held);
  if (held_elsewhere) *held_elsewhere = held;
  if (fd < 0) {
    *status = Status::error(Status::Code::kOutputError, error);
    return nullptr;
  }
  FileIdentity identity;
  if (!identity_of(fd, &identity)) {
    *status = os_error("cannot examine", path, errno);
    ::close(fd);
    return nullptr;
  }
  *status = {};
  return std::make_unique<PosixOutputFile>(fd, identity, path);
}

}  // namespace inprof::internal

namespace inprof::internal {
namespace {

// When this process started (its first image), on the wall clock, in ns; 0 if unknown. The
// kernel counts the start in clock ticks since boot: it is known to a tick (10 ms), rounded down.
uint64_t process_start_wall_ns() {
  char text[1024];
  if (read_small_file("/proc/self/stat", text, sizeof(text)) <= 0) return 0;
  const char* fields = std::strrchr(text, ')');  // the name may hold spaces and parentheses
  if (fields == nullptr) return 0;
  // After ") " come state (field 3) ... starttime (field 22).
  unsigned long long start_ticks = 0;
  const char* p = fields + 2;
  for (int field = 3; field < 22 && p != nullptr; ++field) {
    p = std::strchr(p, ' ');
    if (p) ++p;
  }
  if (p == nullptr || std::sscanf(p, "%llu", &start_ticks) != 1) return 0;
  const long hz = sysconf(_SC_CLK_TCK);
  timespec boot{}, wall{};
  if (hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &boot) != 0 ||
      clock_gettime(CLOCK_REALTIME, &wall) != 0) {
    return 0;
  }
  const uint64_t since_boot = uint64_t(boot.tv_sec) * 1000000000u + uint64_t(boot.tv_nsec);
  const uint64_t started = start_ticks * (1000000000u / uint64_t(hz));
  const uint64_t now = uint64_t(wall.tv_sec) * 1000000000u + uint64_t(wall.tv_nsec);
  return since_boot >= started ? now - (since_boot - started) : 0;
}

}  // namespace

bool OutputFile::written_by_earlier_image(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0 ||
      st.st_uid != geteuid()) {
    return false;
  }
  const uint64_t started = process_start_wall_ns();
  if (started == 0) return false;
  // Written after this process started, a tick of the start's rounding aside: by an earlier
  // image of this process (or by another process that ended after this one started: kept too).
  const uint64_t modified =
      uint64_t(st.st_mtim.tv_sec) * 1000000000u + uint64_t(st.st_mtim.tv_nsec);
  if (modified <= started + 20000000) return false;
  // A dump (its magic number), not some other file this process wrote there.
  char magic[8] = {};
  if (OwnedFd probe(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
      probe.read(magic, sizeof(magic)) != sizeof(magic) ||
      std::memcmp(magic, kDumpMagic, sizeof(magic)) != 0) {
    return false;
  }
  // A live process writing it (a parent shell with the same path) holds its lock: that file is
  // not an earlier image's, and create_unshared() gives this process a name of its own.
  OwnedFd file(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
  const int fd = file.checked_fd();
  if (fd < 0) return false;
  struct flock lock = {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  return fcntl(fd, F_OFD_GETLK, &lock) == 0 && lock.l_type == F_UNLCK;
}

}  // namespace inprof::internal

namespace inprof::internal {

std::unique_ptr<OutputFile> OutputFile::append(const std::string& path) {
  const int fd =
      ::open(path.c_str(), O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return nullptr;
  FileIdentity identity;
  struct stat st;
  if (!identity_of(fd, &identity) || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return nullptr;
  }
  const int flags = fcntl(fd, F_GETFL);
  if (flags >= 0) (void)fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return std::make_unique<PosixOutputFile>(fd, identity, path);
}

}  // namespace inprof::internal
