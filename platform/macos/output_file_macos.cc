// OutputFile on macOS: open(2) with kONofollow and mode 0600, an exclusive flock(2) that tells a
// file another live process is writing, then truncation (only once the lock is ours).
#include <algorithm>
#include <string>

#include "darwin_declarations_macos.h"
#include "session/output_file.h"

namespace inprof::internal {
namespace {

namespace d = darwin;

Status os_error(const std::string& what, const std::string& path, int err) {
  return Status::error(Status::Code::kOutputError,
                       what + " '" + path + "': errno " + std::to_string(err));
}

class MacOutputFile final : public OutputFile {
 public:
  MacOutputFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~MacOutputFile() override { (void)close(); }

  Status write(std::span<const uint8_t> bytes) override {
    if (fd_ < 0) return Status::error(Status::Code::kOutputError, "write after close");
    while (!bytes.empty()) {
      const long n = d::write(fd_, bytes.data(), std::min<size_t>(bytes.size(), 1u << 30));
      if (n < 0) {
        if (*d::errno_location() == d::kEintr) continue;
        return os_error("cannot write", path_, *d::errno_location());
      }
      bytes = bytes.subspan(static_cast<size_t>(n));
    }
    return {};
  }

  Status close() override {
    if (fd_ < 0) return {};
    const int fd = fd_;
    fd_ = -1;
    const bool synced = d::fsync(fd) == 0;
    const int err = *d::errno_location();
    if (d::close(fd) != 0) return os_error("cannot close", path_, *d::errno_location());
    if (!synced) return os_error("cannot flush", path_, err);
    return {};
  }

 private:
  int fd_;
  std::string path_;
};

}  // namespace

std::unique_ptr<OutputFile> OutputFile::create(const std::string& path, Status* status,
                                               bool* held_elsewhere) {
  if (held_elsewhere) *held_elsewhere = false;
  const int fd =
      d::open(path.c_str(), d::kOWronly | d::kOCreat | d::kONofollow | d::kOCloexec, 0600);
  if (fd < 0) {
    const int err = *d::errno_location();
    *status = err == d::kEloop
                  ? Status::error(Status::Code::kOutputError,
                                  "refusing to write '" + path + "': it is a symbolic link")
                  : os_error("cannot create", path, err);
    return nullptr;
  }
  alignas(8) unsigned char st[d::kStatSize];
  uint16_t mode = 0;
  if (d::fstat(fd, st) == 0) __builtin_memcpy(&mode, st + d::kStatModeOffset, sizeof(mode));
  if ((mode & d::kSIfmt) != d::kSIfreg) {
    d::close(fd);
    *status = Status::error(Status::Code::kOutputError,
                            "refusing to write '" + path + "': not a regular file");
    return nullptr;
  }
  if (d::flock(fd, d::kLockEx | d::kLockNb) != 0) {
    const int err = *d::errno_location();
    d::close(fd);
    if (held_elsewhere) *held_elsewhere = err == d::kEagain;
    *status = os_error("cannot lock", path, err);
    return nullptr;
  }
  if (d::ftruncate(fd, 0) != 0) {
    const int err = *d::errno_location();
    d::close(fd);
    *status = os_error("cannot truncate", path, err);
    return nullptr;
  }
  *status = {};
  return std::make_unique<MacOutputFile>(fd, path);
}

}  // namespace inprof::internal

namespace inprof::internal {

// Not known here: an exec'd image (POSIX only) or none.
bool OutputFile::written_by_earlier_image(const std::string&) { return false; }
std::unique_ptr<OutputFile> OutputFile::append(const std::string&) { return nullptr; }

}  // namespace inprof::internal
