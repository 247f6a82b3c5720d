// Collects the warnings of a run so the CLI prints them and tests can inspect them.
#ifndef INPROF_TOOLS_SYMBOLICATE_DIAGNOSTICS_H_
#define INPROF_TOOLS_SYMBOLICATE_DIAGNOSTICS_H_

#include <cstdio>
#include <string>
#include <vector>

namespace inprof::symbolicate {

class Diagnostics {
 public:
  // `echo`: also print each warning there as it happens (null: keep them only).
  // `quiet`: print warnings only, not the run's figures (info).
  explicit Diagnostics(std::FILE* echo = nullptr, bool quiet = false)
      : echo_(echo), quiet_(quiet) {}

  void warn(std::string message) {
    if (echo_) std::fprintf(echo_, "symbolicate: warning: %s\n", message.c_str());
    warnings_.push_back(std::move(message));
  }
  void info(const std::string& message) {
    if (echo_ && !quiet_) std::fprintf(echo_, "symbolicate: %s\n", message.c_str());
  }
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  std::FILE* echo_;
  bool quiet_;
  std::vector<std::string> warnings_;
};

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_DIAGNOSTICS_H_
