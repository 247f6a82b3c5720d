// The HTTP/1.1 the pull mode speaks: a strict parser for request heads and a builder for response
// heads. Pull mode answers scrapes (`go tool pprof`, Parca, Grafana Alloy) of /debug/pprof/... on
// a loopback listener; this file is the pure part of it, with no sockets.
//
// Strict because the peer is a program, not a browser: anything a well-behaved client never sends
// (obs-fold, chunked request bodies, conflicting Content-Length, bad escapes, HTTP/2) is refused
// with a one-line reason rather than guessed at, which also leaves no room for request smuggling.
// The parser copies out only what the handler needs (method, decoded path and query), and reuses
// the strings of the HttpRequest it is given, so a connection parsing request after request into
// the same object allocates little.
#ifndef INPROF_LIB_PULL_HTTP_REQUEST_H_
#define INPROF_LIB_PULL_HTTP_REQUEST_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace inprof::internal {

enum class HttpParse { kIncomplete, kComplete, kBad, kTooLarge };

struct HttpRequest {
  std::string method;  // "GET", "POST", "HEAD" ... as sent (tokens only)
  std::string path;    // percent-decoded path without the query: "/debug/pprof/profile"
  // Percent-decoded, '+' -> ' ', in order.
  std::vector<std::pair<std::string, std::string>> query;
  int minor_version = 1;      // HTTP/1.x
  size_t head_bytes = 0;      // bytes of the head including the final CRLFCRLF
  size_t content_length = 0;  // from Content-Length (0 if absent)
  // HTTP/1.1 default true unless "Connection: close"; 1.0 default false unless keep-alive.
  bool keep_alive = false;
  // The value of the first query parameter `name`, if present.
  const std::string* query_value(std::string_view name) const;
};

// Limits past which a head is kBad.
inline constexpr size_t kHttpMaxHeaders = 100;
inline constexpr size_t kHttpMaxQueryParams = 64;

// Parses the head at the start of `bytes` (which may hold more than one request or a partial
// one). kIncomplete: no CRLFCRLF yet and fewer than max_head bytes; kTooLarge: no end of head
// within max_head bytes; kBad: malformed (then *error says what, one short line). Accepts bare LF
// line endings too, and ignores empty lines before the request line (RFC 9112 2.2); they count in
// head_bytes. A complete line that is already wrong (or a first line that cannot become a request
// line) is kBad before the head is complete. `error` may be null. `*out` is meaningful only on
// kComplete.
HttpParse parse_http_request(std::string_view bytes, size_t max_head, HttpRequest* out,
                             std::string* error);

// "HTTP/1.1 200 OK\r\nContent-Type: ...\r\nContent-Length: N\r\n<extra>Connection:
// close|keep-alive\r\n\r\n". Content-Type is left out when `content_type` is empty.
// extra_headers: each "Name: value\r\n" already formatted, may be empty.
std::string http_response_head(int status, std::string_view content_type, size_t content_length,
                               bool keep_alive, std::string_view extra_headers = {});

// The standard reason phrase for the codes used: 200 400 404 405 408 413 429 500 501 503 (else
// "Status").
std::string_view http_reason(int status);

// Parses a decimal non-negative integer query value fully ("30" ok; "", "3x", "-1", overflow:
// nullopt).
std::optional<uint64_t> parse_decimal(std::string_view text);

}  // namespace inprof::internal

#endif  // INPROF_LIB_PULL_HTTP_REQUEST_H_
