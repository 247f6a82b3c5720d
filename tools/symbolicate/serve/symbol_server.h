// samply's local symbol-server API (its API.md), answered for the profile symbolicate just wrote,
// so that the Firefox Profiler can symbolicate a --no-symbols profile and show the source and
// assembly views:
//   /symbolicate/v5  {jobs: [{memoryMap: [[debugName, breakpadId], ...], stacks: [[[lib, offset],
//                    ...]]}]} -> {results: [{stacks: [[{frame, module, module_offset, function,
//                    function_offset, function_size, file, line, inlines}]], found_modules}]}
//   /source/v1       {debugName, debugId, moduleOffset, file} -> {symbolsLastModified,
//                    sourceLastModified, file, source}. Only a file that a frame address of the
//                    profile resolves to: moduleOffset must be one of the lib's frameTable
//                    addresses, and `file` one of the files its lookup names. Anything else is
//                    refused (403).
//   /asm/v1          {debugName, debugId | name, codeId, startAddress, size} -> {startAddress,
//                    size, arch, syntax, instructions: [[offset, text], ...]} (Capstone).
// Only the profile's libs are known; they are found by debugName + breakpadId (or name +
// codeId). Errors are {"error": "..."} with a 4xx status. Not thread-safe.
#ifndef INPROF_TOOLS_SYMBOLICATE_SERVE_SYMBOL_SERVER_H_
#define INPROF_TOOLS_SYMBOLICATE_SERVE_SYMBOL_SERVER_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "symbolicate.h"
#include "symbolize/module_symbolizer.h"

namespace inprof::symbolicate {

struct ApiResponse {
  int status = 200;  // HTTP status
  std::string body;  // JSON
};

class SymbolServer {
 public:
  explicit SymbolServer(ProfileSymbolInfo info);
  ~SymbolServer();
  SymbolServer(const SymbolServer&) = delete;
  SymbolServer& operator=(const SymbolServer&) = delete;

  // `api` is the path after the server's prefix: "/symbolicate/v5", "/source/v1" or "/asm/v1".
  // A path that is none of them is 404.
  ApiResponse handle(std::string_view api, std::string_view request_json);

  static constexpr size_t kMaxSourceBytes = size_t{32} << 20;
  static constexpr uint64_t kMaxAsmBytes = 1 << 20;

 private:
  struct LibState {
    bool opened = false;
    std::unique_ptr<ModuleSymbolizer> symbolizer;
    std::string why;  // when there is none
  };
  ApiResponse symbolicate_v5(std::string_view request);
  ApiResponse source_v1(std::string_view request);
  ApiResponse asm_v1(std::string_view request);
  std::optional<size_t> find_lib(const std::string& debug_name, const std::string& debug_id) const;
  std::optional<size_t> find_lib_by_code_id(const std::string& name,
                                            const std::string& code_id) const;
  ModuleSymbolizer* symbolizer(size_t lib);
  // The module's own virtual address of a lib-relative address.
  uint64_t vaddr_of(size_t lib, uint64_t relative) const;

  ProfileSymbolInfo info_;
  std::vector<LibState> libs_;
};

}  // namespace inprof::symbolicate

#endif  // INPROF_TOOLS_SYMBOLICATE_SERVE_SYMBOL_SERVER_H_
