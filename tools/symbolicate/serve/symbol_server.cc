#include "serve/symbol_server.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "serve/disassembler.h"
#include "text_util.h"
#include "write/profile_json_writer.h"

namespace inprof::symbolicate {
namespace {

using Json = rapidjson::Writer<rapidjson::StringBuffer>;

void put(Json& w, std::string_view s) {
  const std::string clean = sanitize_utf8(s);
  w.String(clean.data(), static_cast<rapidjson::SizeType>(clean.size()));
}

// "0x1a2b" (or "1a2b") -> 0x1a2b; nothing for anything else.
std::optional<uint64_t> parse_hex(const rapidjson::Value* v) {
  if (!v || !v->IsString()) return std::nullopt;
  std::string_view s(v->GetString(), v->GetStringLength());
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
  if (s.empty() || s.size() > 16) return std::nullopt;
  uint64_t value = 0;
  for (char c : s) {
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (d < 0) return std::nullopt;
    value = value << 4 | static_cast<uint64_t>(d);
  }
  return value;
}

const rapidjson::Value* member(const rapidjson::Value& object, const char* name) {
  if (!object.IsObject()) return nullptr;
  auto it = object.FindMember(name);
  return it == object.MemberEnd() ? nullptr : &it->value;
}

std::string string_member(const rapidjson::Value& object, const char* name) {
  const rapidjson::Value* v = member(object, name);
  return v && v->IsString() ? std::string(v->GetString(), v->GetStringLength()) : std::string();
}

ApiResponse error(int status, const std::string& message) {
  rapidjson::StringBuffer buffer;
  Json w(buffer);
  w.StartObject();
  w.Key("error");
  put(w, message);
  w.EndObject();
  return {status, buffer.GetString()};
}

bool parse(std::string_view text, rapidjson::Document* doc) {
  doc->Parse(text.data(), text.size());
  return !doc->HasParseError() && doc->IsObject();
}

// One address's answer in /symbolicate/v5: the physical function, with the functions inlined
// into it innermost first (as the API lists them).
void write_frame(Json& w, size_t index, const std::string& module, uint64_t relative,
                 uint64_t vaddr, const AddressSymbol* info) {
  w.StartObject();
  w.Key("frame");
  w.Uint64(index);
  w.Key("module");
  put(w, module);
  w.Key("module_offset");
  put(w, hex_u64(relative));
  if (info && !info->frames.empty()) {
    const SourceFrame& outer = info->frames.front();
    w.Key("function");
    put(w, outer.function);
    // Where the function starts: its symbol's address. Without a symbol, the address itself
    // (the viewer groups frames by it; the name is still the right one).
    uint64_t offset = 0;
    if (info->symbol && info->symbol->vaddr <= vaddr) offset = vaddr - info->symbol->vaddr;
    w.Key("function_offset");
    put(w, hex_u64(offset));
    if (info->symbol && info->symbol->size) {
      w.Key("function_size");
      put(w, hex_u64(*info->symbol->size));
    }
    if (!outer.file.empty()) {
      w.Key("file");
      put(w, outer.file);
    }
    if (outer.line) {
      w.Key("line");
      w.Uint(outer.line);
    }
    if (info->frames.size() > 1) {
      w.Key("inlines");
      w.StartArray();
      for (size_t k = info->frames.size(); k-- > 1;) {
        const SourceFrame& f = info->frames[k];
        w.StartObject();
        w.Key("function");
        put(w, f.function);
        if (!f.file.empty()) {
          w.Key("file");
          put(w, f.file);
        }
        if (f.line) {
          w.Key("line");
          w.Uint(f.line);
        }
        w.EndObject();
      }
      w.EndArray();
    }
  }
  w.EndObject();
}

}  // namespace

SymbolServer::SymbolServer(ProfileSymbolInfo info)
    : info_(std::move(info)), libs_(info_.libs.size()) {}

SymbolServer::~SymbolServer() = default;

ApiResponse SymbolServer::handle(std::string_view api, std::string_view request_json) {
  if (api == "/symbolicate/v5") return symbolicate_v5(request_json);
  if (api == "/source/v1") return source_v1(request_json);
  if (api == "/asm/v1") return asm_v1(request_json);
  return error(404, "no such API: " + std::string(api));
}

std::optional<size_t> SymbolServer::find_lib(const std::string& debug_name,
                                             const std::string& debug_id) const {
  for (size_t i = 0; i < info_.libs.size(); ++i) {
    const Lib& lib = info_.libs[i];
    if (lib.debug_name == debug_name && lib.breakpad_id == debug_id) return i;
  }
  return std::nullopt;
}

std::optional<size_t> SymbolServer::find_lib_by_code_id(const std::string& name,
                                                        const std::string& code_id) const {
  for (size_t i = 0; i < info_.libs.size(); ++i) {
    const Lib& lib = info_.libs[i];
    if (lib.name == name && lib.code_id && *lib.code_id == code_id) return i;
  }
  return std::nullopt;
}

ModuleSymbolizer* SymbolServer::symbolizer(size_t lib) {
  LibState& state = libs_[lib];
  if (!state.opened) {
    state.opened = true;
    if (lib < info_.lib_modules.size()) {
      const auto& image = info_.lib_images[lib];
      std::optional<ModuleFiles> files = locate_module_files(
          info_.lib_modules[lib], info_.locate, &state.why,
          image ? std::span<const uint8_t>(*image) : std::span<const uint8_t>());
      if (files) state.symbolizer = ModuleSymbolizer::open(*files, &state.why);
    } else {
      state.why = "no module recorded for the library";
    }
  }
  return state.symbolizer.get();
}

uint64_t SymbolServer::vaddr_of(size_t lib, uint64_t relative) const {
  const internal::ModuleRecord& rec = info_.lib_modules[lib];
  return relative + rec.start - rec.load_bias;
}

ApiResponse SymbolServer::symbolicate_v5(std::string_view request) {
  rapidjson::Document doc;
  if (!parse(request, &doc)) return error(400, "the request is not a JSON object");
  // {jobs: [job, ...]}, or one job on its own.
  std::vector<const rapidjson::Value*> jobs;
  if (const rapidjson::Value* list = member(doc, "jobs")) {
    if (!list->IsArray()) return error(400, "'jobs' is not an array");
    for (const rapidjson::Value& job : list->GetArray()) jobs.push_back(&job);
  } else {
    jobs.push_back(&doc);
  }
  rapidjson::StringBuffer buffer;
  Json w(buffer);
  w.StartObject();
  w.Key("results");
  w.StartArray();
  for (const rapidjson::Value* job : jobs) {
    const rapidjson::Value* memory_map = member(*job, "memoryMap");
    const rapidjson::Value* stacks = member(*job, "stacks");
    if (!memory_map || !memory_map->IsArray() || !stacks || !stacks->IsArray()) {
      return error(400, "a job needs 'memoryMap' and 'stacks' arrays");
    }
    struct Module {
      std::string name, id;
      std::optional<size_t> lib;
      ModuleSymbolizer* sym = nullptr;
    };
    std::vector<Module> modules;
    for (const rapidjson::Value& entry : memory_map->GetArray()) {
      if (!entry.IsArray() || entry.Size() != 2 || !entry[0].IsString() || !entry[1].IsString()) {
        return error(400, "a memoryMap entry is not [debugName, breakpadId]");
      }
      Module m{entry[0].GetString(), entry[1].GetString(), std::nullopt, nullptr};
      m.lib = find_lib(m.name, m.id);
      if (m.lib) m.sym = symbolizer(*m.lib);
      modules.push_back(std::move(m));
    }
    w.StartObject();
    w.Key("stacks");
    w.StartArray();
    for (const rapidjson::Value& stack : stacks->GetArray()) {
      if (!stack.IsArray()) return error(400, "a stack is not an array");
      w.StartArray();
      size_t index = 0;
      for (const rapidjson::Value& frame : stack.GetArray()) {
        if (!frame.IsArray() || frame.Size() != 2 || !frame[0].IsInt64() || !frame[1].IsUint64()) {
          return error(400, "a frame is not [moduleIndex, moduleOffset]");
        }
        const int64_t module_index = frame[0].GetInt64();
        const uint64_t relative = frame[1].GetUint64();
        if (module_index < 0 || static_cast<size_t>(module_index) >= modules.size()) {
          // -1: an address in no module (the API's convention). Echoed back unnamed.
          w.StartObject();
          w.Key("frame");
          w.Uint64(index++);
          w.Key("module_offset");
          put(w, hex_u64(relative));
          w.EndObject();
          continue;
        }
        const Module& m = modules[static_cast<size_t>(module_index)];
        const uint64_t vaddr = m.lib ? vaddr_of(*m.lib, relative) : 0;
        write_frame(w, index++, m.name, relative, vaddr, m.sym ? &m.sym->lookup(vaddr) : nullptr);
      }
      w.EndArray();
    }
    w.EndArray();
    w.Key("found_modules");
    w.StartObject();
    for (const Module& m : modules) {
      const std::string key = m.name + "/" + m.id;
      w.Key(key.c_str(), static_cast<rapidjson::SizeType>(key.size()));
      w.Bool(m.sym != nullptr);
    }
    w.EndObject();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return {200, buffer.GetString()};
}

ApiResponse SymbolServer::source_v1(std::string_view request) {
  rapidjson::Document doc;
  if (!parse(request, &doc)) return error(400, "the request is not a JSON object");
  const std::string debug_name = string_member(doc, "debugName");
  const std::string debug_id = string_member(doc, "debugId");
  const std::string file = string_member(doc, "file");
  const std::optional<uint64_t> offset = parse_hex(member(doc, "moduleOffset"));
  if (debug_name.empty() || debug_id.empty() || file.empty() || !offset) {
    return error(400, "/source/v1 needs debugName, debugId, moduleOffset (hex) and file");
  }
  const std::optional<size_t> lib = find_lib(debug_name, debug_id);
  if (!lib) return error(404, "no library " + debug_name + "/" + debug_id + " in the profile");
  // Only a file that one of the profile's own frame addresses resolves to.
  const std::vector<uint64_t>& addresses = info_.lib_frame_addresses[*lib];
  if (!std::binary_search(addresses.begin(), addresses.end(), *offset)) {
    return error(403, "refused: " + hex_u64(*offset) + " is no frame address of " + debug_name +
                          " in the profile");
  }
  ModuleSymbolizer* sym = symbolizer(*lib);
  if (!sym) return error(404, debug_name + ": " + libs_[*lib].why);
  const AddressSymbol& info = sym->lookup(vaddr_of(*lib, *offset));
  const bool referenced = std::any_of(info.frames.begin(), info.frames.end(),
                                      [&](const SourceFrame& f) { return f.file == file; });
  if (!referenced) {
    return error(
        403, "refused: " + debug_name + " " + hex_u64(*offset) + " does not resolve to " + file);
  }
  if (file[0] != '/') return error(404, file + ": a relative name, whose directory is unknown");
  std::FILE* f = std::fopen(file.c_str(), "rb");
  if (!f) return error(404, "cannot read " + file);
  std::string source;
  char chunk[65536];
  size_t n;
  while ((n = std::fread(chunk, 1, sizeof chunk, f)) > 0 && source.size() <= kMaxSourceBytes) {
    source.append(chunk, n);
  }
  std::fclose(f);
  if (source.size() > kMaxSourceBytes) return error(413, file + " is larger than 32 MiB");
  rapidjson::StringBuffer buffer;
  Json w(buffer);
  w.StartObject();
  w.Key("symbolsLastModified");
  w.Null();
  w.Key("sourceLastModified");
  w.Null();
  w.Key("file");
  put(w, file);
  w.Key("source");
  put(w, source);
  w.EndObject();
  return {200, buffer.GetString()};
}

ApiResponse SymbolServer::asm_v1(std::string_view request) {
  rapidjson::Document doc;
  if (!parse(request, &doc)) return error(400, "the request is not a JSON object");
  const std::optional<uint64_t> start = parse_hex(member(doc, "startAddress"));
  const std::optional<uint64_t> size = parse_hex(member(doc, "size"));
  if (!start || !size) return error(400, "/asm/v1 needs startAddress and size (hex)");
  if (*size == 0 || *size > kMaxAsmBytes) return error(400, "/asm/v1: size must be 1 B to 1 MiB");
  std::optional<size_t> lib =
      find_lib(string_member(doc, "debugName"), string_member(doc, "debugId"));
  if (!lib) lib = find_lib_by_code_id(string_member(doc, "name"), string_member(doc, "codeId"));
  if (!lib) return error(404, "no such library in the profile");
  ModuleSymbolizer* sym = symbolizer(*lib);
  if (!sym) return error(404, info_.libs[*lib].debug_name + ": " + libs_[*lib].why);
  std::vector<uint8_t> code(*size);
  const uint64_t vaddr = vaddr_of(*lib, *start);
  if (!sym->read_code(vaddr, code)) {
    return error(404, info_.libs[*lib].debug_name + ": no code at " + hex_u64(*start) +
                          " (only a debug file found, or outside the code)");
  }
  std::string why;
  std::optional<Disassembly> d = disassemble(info_.libs[*lib].arch, code, vaddr, &why);
  if (!d) return error(501, why);
  rapidjson::StringBuffer buffer;
  Json w(buffer);
  w.StartObject();
  w.Key("startAddress");
  put(w, hex_u64(*start));
  w.Key("size");
  put(w, hex_u64(*size));
  w.Key("arch");
  put(w, info_.libs[*lib].arch);
  w.Key("syntax");
  w.StartArray();
  put(w, d->syntax);
  w.EndArray();
  w.Key("instructions");
  w.StartArray();
  for (const Instruction& insn : d->instructions) {
    w.StartArray();
    w.Uint(insn.offset);
    put(w, insn.text);
    w.EndArray();
  }
  w.EndArray();
  w.EndObject();
  return {200, buffer.GetString()};
}

}  // namespace inprof::symbolicate
