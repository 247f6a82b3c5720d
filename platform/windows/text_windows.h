// UTF-16 (the Windows API's) to and from UTF-8 (inprof's strings and dump). Not for the
// suspended window: both allocate.
#ifndef INPROF_PLATFORM_WINDOWS_TEXT_WINDOWS_H_
#define INPROF_PLATFORM_WINDOWS_TEXT_WINDOWS_H_

#include <windows.h>

#include <string>

namespace inprof::internal {

inline std::string to_utf8(const wchar_t* text, int length = -1) {
  if (text == nullptr) return {};
  const int n = WideCharToMultiByte(CP_UTF8, 0, text, length, nullptr, 0, nullptr, nullptr);
  if (n <= 0) return {};
  std::string out(static_cast<size_t>(n), '\0');
  WideCharToMultiByte(CP_UTF8, 0, text, length, out.data(), n, nullptr, nullptr);
  if (length < 0 && !out.empty() && out.back() == '\0') out.pop_back();
  return out;
}

inline std::wstring to_wide(const std::string& text) {
  if (text.empty()) return {};
  const int n =
      MultiByteToWideChar(CP_UTF8, 0, text.data(), static_cast<int>(text.size()), nullptr, 0);
  if (n <= 0) return {};
  std::wstring out(static_cast<size_t>(n), L'\0');
  MultiByteToWideChar(CP_UTF8, 0, text.data(), static_cast<int>(text.size()), out.data(), n);
  return out;
}

}  // namespace inprof::internal

#endif  // INPROF_PLATFORM_WINDOWS_TEXT_WINDOWS_H_
