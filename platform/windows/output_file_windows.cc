// OutputFile on Windows: CreateFileW without following a reparse point (symbolic link or
// junction), regular files only. The file gets the directory's inherited ACL; unlike the POSIX
// build's mode 0600 it is not made private to the user (left for a later change).
#include <windows.h>

#include "session/output_file.h"
#include "text_windows.h"

namespace inprof::internal {
namespace {

Status os_error(const std::string& what, const std::string& path, DWORD err) {
  return Status::error(Status::Code::kOutputError,
                       what + " '" + path + "': Windows error " + std::to_string(err));
}

class WindowsOutputFile final : public OutputFile {
 public:
  WindowsOutputFile(HANDLE file, std::string path) : file_(file), path_(std::move(path)) {}
  ~WindowsOutputFile() override { (void)close(); }

  Status write(std::span<const uint8_t> bytes) override {
    if (file_ == INVALID_HANDLE_VALUE) {
      return Status::error(Status::Code::kOutputError, "write after close");
    }
    while (!bytes.empty()) {
      const DWORD chunk = bytes.size() > (1u << 30) ? (1u << 30) : static_cast<DWORD>(bytes.size());
      DWORD written = 0;
      if (!WriteFile(file_, bytes.data(), chunk, &written, nullptr)) {
        return os_error("cannot write", path_, GetLastError());
      }
      bytes = bytes.subspan(written);
    }
    return {};
  }

  Status close() override {
    if (file_ == INVALID_HANDLE_VALUE) return {};
    HANDLE file = file_;
    file_ = INVALID_HANDLE_VALUE;
    if (!CloseHandle(file)) return os_error("cannot close", path_, GetLastError());
    return {};
  }

 private:
  HANDLE file_;
  std::string path_;
};

}  // namespace

std::unique_ptr<OutputFile> OutputFile::create(const std::string& path, Status* status,
                                               bool* held_elsewhere) {
  if (held_elsewhere) *held_elsewhere = false;
  const std::wstring wide = to_wide(path);
  const DWORD existing = GetFileAttributesW(wide.c_str());
  if (existing != INVALID_FILE_ATTRIBUTES && (existing & FILE_ATTRIBUTE_REPARSE_POINT)) {
    *status = Status::error(Status::Code::kOutputError,
                            "refusing to write '" + path + "': it is a symbolic link");
    return nullptr;
  }
  // FILE_FLAG_OPEN_REPARSE_POINT: a link created after the check above is opened itself, not
  // followed; the check on the handle below then refuses it.
  HANDLE file = CreateFileW(wide.c_str(), GENERIC_WRITE, FILE_SHARE_READ, nullptr, CREATE_ALWAYS,
                            FILE_ATTRIBUTE_NORMAL | FILE_FLAG_OPEN_REPARSE_POINT, nullptr);
  if (file == INVALID_HANDLE_VALUE) {
    const DWORD error = GetLastError();
    // No FILE_SHARE_WRITE: another process writing the file makes the open fail this way.
    if (held_elsewhere) *held_elsewhere = error == ERROR_SHARING_VIOLATION;
    *status = os_error("cannot create", path, error);
    return nullptr;
  }
  BY_HANDLE_FILE_INFORMATION info;
  if (GetFileType(file) != FILE_TYPE_DISK || !GetFileInformationByHandle(file, &info) ||
      (info.dwFileAttributes & (FILE_ATTRIBUTE_REPARSE_POINT | FILE_ATTRIBUTE_DIRECTORY))) {
    CloseHandle(file);
    *status = Status::error(Status::Code::kOutputError,
                            "refusing to write '" + path + "': not a regular file");
    return nullptr;
  }
  *status = {};
  return std::make_unique<WindowsOutputFile>(file, path);
}

}  // namespace inprof::internal

namespace inprof::internal {

// Not known here: an exec'd image (POSIX only) or none.
bool OutputFile::written_by_earlier_image(const std::string&) { return false; }
std::unique_ptr<OutputFile> OutputFile::append(const std::string&) { return nullptr; }

}  // namespace inprof::internal
