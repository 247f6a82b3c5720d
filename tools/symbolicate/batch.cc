#include "batch.h"

#include <filesystem>
#include <system_error>
#include <vector>

#include "read/dump_set.h"
#include "write/gzip_stream.h"

namespace inprof::symbolicate {

bool is_output_directory(const std::string& output) {
  std::error_code ec;
  return !output.empty() && (output.back() == '/' || std::filesystem::is_directory(output, ec));
}

int run_symbolicate_batch(const RunOptions& options, std::FILE* err) {
  std::string error;
  const auto dumps = expand_dump_paths(
      options.dump_paths.empty() ? std::vector<std::string>{options.dump_path} : options.dump_paths,
      &error);
  if (!dumps) {
    std::fprintf(err, "symbolicate: error: %s\n", error.c_str());
    return kExitError;
  }
  const std::filesystem::path out_dir(options.output_path);
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec || !std::filesystem::is_directory(out_dir, ec)) {
    std::fprintf(err, "symbolicate: error: cannot create the output directory '%s': %s\n",
                 options.output_path.c_str(), ec ? ec.message().c_str() : "not a directory");
    return kExitError;
  }
  int worst = kExitOk;
  for (const std::string& dump : *dumps) {
    RunOptions one = options;
    one.dump_path = dump;
    one.dump_paths = {dump};
    std::string name = std::filesystem::path(dump).filename().string();
    if (name.size() > 7 && name.compare(name.size() - 7, 7, ".inprof") == 0) {
      name.resize(name.size() - 7);
    }
    const bool gzip = options.format->always_gzip && kHaveGzipOutput;
    one.output_path = (out_dir / (name + options.format->extension + (gzip ? ".gz" : ""))).string();
    one.exiting_after = false;  // the next dump follows: its tables are freed
    const int status = run_symbolicate(one, err);
    if (status == kExitError || (status == kExitDamaged && worst == kExitOk)) worst = status;
  }
  return worst;
}

}  // namespace inprof::symbolicate
