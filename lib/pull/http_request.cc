#include "pull/http_request.h"

#include <algorithm>
#include <charconv>

namespace inprof::internal {
namespace {

// Reasons are static strings: nothing is allocated until one is copied into *error.
using Why = const char*;

bool is_alnum(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool in_set(char c, std::string_view set) { return set.find(c) != std::string_view::npos; }
bool is_tchar(char c) { return is_alnum(c) || in_set(c, "!#$%&'*+-.^_`|~"); }

bool all_tchars(std::string_view s) { return std::all_of(s.begin(), s.end(), is_tchar); }
bool is_token(std::string_view s) { return !s.empty() && all_tchars(s); }
bool is_ctl(char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }

bool iequals(std::string_view a, std::string_view b) {
  const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; };
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(),
                                            [&](char x, char y) { return lower(x) == lower(y); });
}

std::string_view trim_ows(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Replaces *out with the decoding of `in`. Reserving first: one allocation at most, none when the
// string kept its capacity from an earlier request.
Why percent_decode(std::string_view in, bool plus_is_space, std::string* out) {
  out->clear();
  out->reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '%') {
      const int hi = i + 2 < in.size() ? hex_value(in[i + 1]) : -1;
      const int lo = hi >= 0 ? hex_value(in[i + 2]) : -1;
      if (lo < 0) return "invalid percent escape in request target";
      c = static_cast<char>(hi * 16 + lo);
      i += 2;
    } else if (c == '+' && plus_is_space) {
      c = ' ';
    }
    out->push_back(c);
  }
  // Handlers may hand these to C APIs: a NUL would cut them short there.
  return out->find('\0') == std::string::npos ? nullptr : "NUL in decoded request target";
}

Why parse_query(std::string_view query, HttpRequest* out) {
  size_t pos = 0;
  while (pos <= query.size()) {
    const size_t amp = std::min(query.find('&', pos), query.size());
    const std::string_view item = query.substr(pos, amp - pos);
    pos = amp + 1;
    if (item.empty()) continue;  // "a=1&&b=2", a trailing '&'
    if (out->query.size() == kHttpMaxQueryParams) return "too many query parameters";
    const size_t eq = std::min(item.find('='), item.size());
    auto& [name, value] = out->query.emplace_back();
    if (Why why = percent_decode(item.substr(0, eq), true, &name)) return why;
    if (eq < item.size()) {
      if (Why why = percent_decode(item.substr(eq + 1), true, &value)) return why;
    }
  }
  return nullptr;
}

// "http://host[:port]" as a proxy sends it: strips scheme and authority from *target.
Why strip_absolute_form(std::string_view* target) {
  size_t scheme = 0;
  if (iequals(target->substr(0, 7), "http://")) scheme = 7;
  if (iequals(target->substr(0, 8), "https://")) scheme = 8;
  if (scheme == 0) return "request target must begin with '/' or http://";
  const size_t end = std::min(target->find_first_of("/?", scheme), target->size());
  const std::string_view authority = target->substr(scheme, end - scheme);
  if (authority.empty()) return "empty authority in request target";
  // RFC 9110 4.2.4: userinfo in an http URI is to be treated as an error.
  const auto ok = [](char c) { return is_alnum(c) || in_set(c, "-._~!$&'()*+,;=:[]%"); };
  if (!std::all_of(authority.begin(), authority.end(), ok)) {
    return "invalid authority in request target";
  }
  target->remove_prefix(end);
  return nullptr;
}

Why parse_target(std::string_view target, HttpRequest* out) {
  if (std::any_of(target.begin(), target.end(), is_ctl)) {
    return "control character in request target";
  }
  if (target.find('#') != std::string_view::npos) return "fragment in request target";
  if (target.front() != '/') {
    if (Why why = strip_absolute_form(&target)) return why;
  }
  const size_t q = std::min(target.find('?'), target.size());
  if (Why why = percent_decode(target.substr(0, q), false, &out->path)) return why;
  if (out->path.empty()) out->path = "/";  // "http://host" or "http://host?x"
  return q < target.size() ? parse_query(target.substr(q + 1), out) : nullptr;
}

Why parse_request_line(std::string_view line, HttpRequest* out) {
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos) return "malformed request line";
  const std::string_view method = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (!is_token(method)) return "invalid method";
  if (target.empty() || version.find(' ') != std::string_view::npos) {
    return "malformed request line";
  }
  if (version == "HTTP/1.1" || version == "HTTP/1.0") {
    out->minor_version = version.back() - '0';
  } else if (version.starts_with("HTTP/2")) {
    return "HTTP/2 is not supported";  // also the prior-knowledge preface "PRI * HTTP/2.0"
  } else {
    return "unsupported HTTP version";
  }
  out->method.assign(method);
  return parse_target(target, out);
}

// What the header lines said, beyond what goes straight into the request.
struct HeaderState {
  size_t count = 0;
  bool has_length = false;
  bool close = false;
  bool keep_alive = false;
};

void parse_connection(std::string_view value, HeaderState* state) {
  size_t pos = 0;
  while (pos <= value.size()) {
    const size_t comma = std::min(value.find(',', pos), value.size());
    const std::string_view option = trim_ows(value.substr(pos, comma - pos));
    pos = comma + 1;
    if (iequals(option, "close")) state->close = true;
    if (iequals(option, "keep-alive")) state->keep_alive = true;
  }
}

Why parse_header(std::string_view line, HeaderState* state, HttpRequest* out) {
  if (line.front() == ' ' || line.front() == '\t') return "obs-fold (line starts with whitespace)";
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) return "header line without ':'";
  const std::string_view name = line.substr(0, colon);
  if (!is_token(name)) return "invalid header name";
  const std::string_view value = trim_ows(line.substr(colon + 1));
  // RFC 9110 5.5: CR, LF and NUL in a value are to be rejected; other CTLs are not field-content.
  if (std::any_of(value.begin(), value.end(), [](char c) { return c != '\t' && is_ctl(c); })) {
    return "control character in header value";
  }
  if (++state->count > kHttpMaxHeaders) return "too many header fields";
  if (iequals(name, "transfer-encoding")) return "chunked request bodies are not accepted";
  if (iequals(name, "connection")) parse_connection(value, state);
  if (iequals(name, "content-length")) {
    const std::optional<uint64_t> length = parse_decimal(value);
    if (!length || static_cast<size_t>(*length) != *length) return "invalid Content-Length";
    if (state->has_length && out->content_length != *length) {
      return "conflicting Content-Length values";
    }
    state->has_length = true;
    out->content_length = static_cast<size_t>(*length);
  }
  return nullptr;
}

HttpParse bad(std::string* error, Why why) {
  if (error) error->assign(why);
  return HttpParse::kBad;
}

}  // namespace

const std::string* HttpRequest::query_value(std::string_view name) const {
  for (const auto& [key, value] : query) {
    if (key == name) return &value;
  }
  return nullptr;
}

HttpParse parse_http_request(std::string_view bytes, size_t max_head, HttpRequest* out,
                             std::string* error) {
  if (error) error->clear();
  out->method.clear();
  out->path.clear();
  out->query.clear();
  out->minor_version = 1;
  out->head_bytes = 0;
  out->content_length = 0;
  out->keep_alive = false;
  const std::string_view window = bytes.substr(0, std::min(bytes.size(), max_head));
  HeaderState state;
  bool have_request_line = false;
  size_t pos = 0;
  for (size_t nl; (nl = window.find('\n', pos)) != std::string_view::npos;) {
    std::string_view line = window.substr(pos, nl - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    pos = nl + 1;
    Why why = nullptr;
    if (!have_request_line) {
      if (line.empty()) continue;  // RFC 9112 2.2: ignore empty lines before the request line
      why = parse_request_line(line, out);
      have_request_line = true;
    } else if (line.empty()) {
      out->head_bytes = pos;
      out->keep_alive = !state.close && (out->minor_version == 1 || state.keep_alive);
      return HttpParse::kComplete;
    } else {
      why = parse_header(line, &state, out);
    }
    if (why) return bad(error, why);
  }
  // A first line already not a method (a TLS ClientHello on this plain port, say) is refused now
  // rather than after max_head bytes; a lone CR may still be an empty line's.
  const std::string_view partial = window.substr(pos);
  if (!have_request_line && partial != "\r" && !all_tchars(partial.substr(0, partial.find(' ')))) {
    return bad(error, "invalid method");
  }
  return bytes.size() >= max_head ? HttpParse::kTooLarge : HttpParse::kIncomplete;
}

std::string http_response_head(int status, std::string_view content_type, size_t content_length,
                               bool keep_alive, std::string_view extra_headers) {
  char number[24];
  std::string head;
  head.reserve(128 + content_type.size() + extra_headers.size());
  head += "HTTP/1.1 ";
  head.append(number, std::to_chars(number, number + sizeof number, status).ptr);
  head += ' ';
  head += http_reason(status);
  head += "\r\n";
  if (!content_type.empty()) {
    head += "Content-Type: ";
    head += content_type;
    head += "\r\n";
  }
  head += "Content-Length: ";
  head.append(number, std::to_chars(number, number + sizeof number, content_length).ptr);
  head += "\r\n";
  head += extra_headers;
  head += keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  return head;
}

std::string_view http_reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 413:
      return "Content Too Large";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    default:
      return "Status";
  }
}

std::optional<uint64_t> parse_decimal(std::string_view text) {
  uint64_t value = 0;
  if (text.empty() || text.front() < '0' || text.front() > '9') return std::nullopt;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace inprof::internal
