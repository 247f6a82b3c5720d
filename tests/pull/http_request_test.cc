#include "pull/http_request.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <string_view>

namespace inprof::internal {
namespace {

constexpr size_t kMaxHead = 8192;

constexpr std::string_view kProfileRequest =
    "GET /debug/pprof/profile?seconds=2 HTTP/1.1\r\n"
    "Host: 127.0.0.1:6060\r\n"
    "User-Agent: Go-http-client/1.1\r\n"
    "Accept-Encoding: gzip\r\n"
    "\r\n";

HttpParse parse(std::string_view bytes, HttpRequest* out, std::string* error = nullptr) {
  return parse_http_request(bytes, kMaxHead, out, error);
}

// The reason a head is refused, or "" when it is not refused.
std::string bad_reason(std::string_view bytes) {
  HttpRequest req;
  std::string error;
  return parse(bytes, &req, &error) == HttpParse::kBad ? error : "";
}

std::string with_header(std::string_view header) {
  return "GET / HTTP/1.1\r\nHost: x\r\n" + std::string(header) + "\r\n\r\n";
}

TEST(HttpRequest, ParsesGetWithQuery) {
  HttpRequest req;
  std::string error = "stale";
  ASSERT_EQ(parse(kProfileRequest, &req, &error), HttpParse::kComplete);
  EXPECT_EQ(error, "");
  EXPECT_EQ(req.method, "GET");
  EXPECT_EQ(req.path, "/debug/pprof/profile");
  ASSERT_EQ(req.query.size(), 1u);
  EXPECT_EQ(req.query[0].first, "seconds");
  EXPECT_EQ(req.query[0].second, "2");
  ASSERT_NE(req.query_value("seconds"), nullptr);
  EXPECT_EQ(*req.query_value("seconds"), "2");
  EXPECT_EQ(req.query_value("debug"), nullptr);
  EXPECT_EQ(req.minor_version, 1);
  EXPECT_EQ(req.head_bytes, kProfileRequest.size());
  EXPECT_EQ(req.content_length, 0u);
  EXPECT_TRUE(req.keep_alive);
}

TEST(HttpRequest, PercentDecodesPathAndQuery) {
  HttpRequest req;
  ASSERT_EQ(parse("GET /a%20b+c/%7e%2F?x+y=1%2B2+3&flag&&k=&x+y=again& HTTP/1.1\r\n\r\n", &req),
            HttpParse::kComplete);
  EXPECT_EQ(req.path, "/a b+c/~/");  // '+' is a plus in the path
  ASSERT_EQ(req.query.size(), 4u);
  EXPECT_EQ(req.query[0], (std::pair<std::string, std::string>("x y", "1+2 3")));
  EXPECT_EQ(req.query[1], (std::pair<std::string, std::string>("flag", "")));
  EXPECT_EQ(req.query[2], (std::pair<std::string, std::string>("k", "")));
  EXPECT_EQ(req.query[3], (std::pair<std::string, std::string>("x y", "again")));
  EXPECT_EQ(*req.query_value("x y"), "1+2 3");  // the first one
  ASSERT_EQ(parse("GET /p?a=b=c HTTP/1.1\r\n\r\n", &req), HttpParse::kComplete);
  EXPECT_EQ(*req.query_value("a"), "b=c");
}

TEST(HttpRequest, AcceptsAbsoluteForm) {
  HttpRequest req;
  ASSERT_EQ(parse("GET http://localhost:6060/debug/pprof/heap?gc=1 HTTP/1.1\r\n\r\n", &req),
            HttpParse::kComplete);
  EXPECT_EQ(req.path, "/debug/pprof/heap");
  EXPECT_EQ(*req.query_value("gc"), "1");
  ASSERT_EQ(parse("GET HTTP://[::1]:80 HTTP/1.1\r\n\r\n", &req), HttpParse::kComplete);
  EXPECT_EQ(req.path, "/");
  ASSERT_EQ(parse("GET http://h?seconds=5 HTTP/1.1\r\n\r\n", &req), HttpParse::kComplete);
  EXPECT_EQ(req.path, "/");
  EXPECT_EQ(*req.query_value("seconds"), "5");
  EXPECT_NE(bad_reason("GET http:///x HTTP/1.1\r\n\r\n"), "");
  EXPECT_NE(bad_reason("GET http://user@h/x HTTP/1.1\r\n\r\n"), "");
  EXPECT_NE(bad_reason("GET ftp://h/x HTTP/1.1\r\n\r\n"), "");
}

TEST(HttpRequest, AcceptsBareLineFeeds) {
  HttpRequest req;
  const std::string_view bytes = "GET /x?a=1 HTTP/1.0\nHost: h\nConnection: keep-alive\n\n";
  ASSERT_EQ(parse(bytes, &req), HttpParse::kComplete);
  EXPECT_EQ(req.path, "/x");
  EXPECT_EQ(req.minor_version, 0);
  EXPECT_TRUE(req.keep_alive);
  EXPECT_EQ(req.head_bytes, bytes.size());
  // Mixed endings.
  const std::string_view mixed = "GET / HTTP/1.1\r\nHost: h\n\r\n";
  ASSERT_EQ(parse(mixed, &req), HttpParse::kComplete);
  EXPECT_EQ(req.head_bytes, mixed.size());
}

TEST(HttpRequest, IgnoresEmptyLinesBeforeRequestLine) {
  HttpRequest req;
  ASSERT_EQ(parse("\r\n\nGET / HTTP/1.1\r\n\r\n", &req), HttpParse::kComplete);
  EXPECT_EQ(req.head_bytes, 21u);
  EXPECT_EQ(parse("\r\n\r\n", &req), HttpParse::kIncomplete);
}

TEST(HttpRequest, EveryPrefixIsIncomplete) {
  const std::string with_length = with_header("Content-Length: 5");
  for (const std::string_view valid : {kProfileRequest, std::string_view("\r\nGET / HTTP/1.0\n\n"),
                                       std::string_view(with_length)}) {
    for (size_t n = 0; n < valid.size(); ++n) {
      HttpRequest req;
      std::string error;
      EXPECT_EQ(parse(valid.substr(0, n), &req, &error), HttpParse::kIncomplete)
          << "prefix " << n << " of " << valid << ": " << error;
    }
  }
}

TEST(HttpRequest, PipelinedRequestFollowsHead) {
  const std::string bytes = std::string(kProfileRequest) + "GET /debug/pprof/heap HTTP/1.1\r\n\r\n";
  HttpRequest req;
  ASSERT_EQ(parse(bytes, &req), HttpParse::kComplete);
  EXPECT_EQ(req.head_bytes, kProfileRequest.size());
  EXPECT_EQ(req.path, "/debug/pprof/profile");
  ASSERT_EQ(parse(std::string_view(bytes).substr(req.head_bytes), &req), HttpParse::kComplete);
  EXPECT_EQ(req.path, "/debug/pprof/heap");
  EXPECT_TRUE(req.query.empty());  // nothing left over from the first request
  EXPECT_EQ(req.head_bytes, bytes.size() - kProfileRequest.size());
}

TEST(HttpRequest, ContentLengthGivesBodyLength) {
  const std::string head = "POST /debug/pprof/symbol HTTP/1.1\r\nContent-Length:  12 \r\n\r\n";
  const std::string bytes = head + "0x1234+0x56" + "GET / HTTP/1.1\r\n\r\n";
  HttpRequest req;
  ASSERT_EQ(parse(bytes, &req), HttpParse::kComplete);
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.content_length, 12u);
  EXPECT_EQ(req.head_bytes, head.size());
  // The same length twice is one length.
  ASSERT_EQ(parse(with_header("Content-Length: 7\r\ncontent-length: 007"), &req),
            HttpParse::kComplete);
  EXPECT_EQ(req.content_length, 7u);
}

TEST(HttpRequest, KeepAliveRules) {
  const auto keep_alive = [](std::string_view version, std::string_view connection) {
    std::string bytes = "GET / " + std::string(version) + "\r\n";
    if (!connection.empty()) bytes += "Connection: " + std::string(connection) + "\r\n";
    HttpRequest req;
    EXPECT_EQ(parse(bytes + "\r\n", &req), HttpParse::kComplete) << bytes;
    return req.keep_alive;
  };
  EXPECT_TRUE(keep_alive("HTTP/1.1", ""));
  EXPECT_FALSE(keep_alive("HTTP/1.1", "close"));
  EXPECT_FALSE(keep_alive("HTTP/1.1", "Upgrade, CLOSE"));
  EXPECT_TRUE(keep_alive("HTTP/1.1", "keep-alive"));
  EXPECT_TRUE(keep_alive("HTTP/1.1", "closed"));  // a token, not a substring
  EXPECT_FALSE(keep_alive("HTTP/1.0", ""));
  EXPECT_TRUE(keep_alive("HTTP/1.0", "Keep-Alive"));
  EXPECT_FALSE(keep_alive("HTTP/1.0", "keep-alive, close"));
  HttpRequest req;
  ASSERT_EQ(parse("GET / HTTP/1.1\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n", &req),
            HttpParse::kComplete);
  EXPECT_FALSE(req.keep_alive);
}

TEST(HttpRequest, RejectsMalformedRequestLines) {
  for (const char* bytes : {
           "GET /\r\n\r\n",                        // HTTP/0.9
           "GET  / HTTP/1.1\r\n\r\n",              // two spaces
           "GET / HTTP/1.1 \r\n\r\n",              // trailing space
           "GET /a b HTTP/1.1\r\n\r\n",            // space in target
           "G(T / HTTP/1.1\r\n\r\n",               // method not a token
           " GET / HTTP/1.1\r\n\r\n",              // empty method
           "GET * HTTP/1.1\r\n\r\n",               // asterisk-form
           "GET example.com:80 HTTP/1.1\r\n\r\n",  // authority-form
           "GET / HTTP/1.2\r\n\r\n",               // unknown version
           "GET / HTTP/1.1\r\r\n\r\n",             // stray CR
           "GET / http/1.1\r\n\r\n",               // case matters in the version
           "GET / HTTP/3\r\n\r\n",
       }) {
    EXPECT_NE(bad_reason(bytes), "") << bytes;
  }
  EXPECT_EQ(bad_reason("GET / HTTP/1.2\r\n\r\n"), "unsupported HTTP version");
  EXPECT_EQ(bad_reason("GET\r\n\r\n"), "malformed request line");
}

TEST(HttpRequest, RejectsHttp2) {
  EXPECT_EQ(bad_reason("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), "HTTP/2 is not supported");
  EXPECT_EQ(bad_reason("GET / HTTP/2\r\n\r\n"), "HTTP/2 is not supported");
  // The preface's first line is enough.
  HttpRequest req;
  EXPECT_EQ(parse("PRI * HTTP/2.0\r\n", &req), HttpParse::kBad);
}

TEST(HttpRequest, RejectsBadTargets) {
  EXPECT_EQ(bad_reason("GET /a%2 HTTP/1.1\r\n\r\n"), "invalid percent escape in request target");
  EXPECT_NE(bad_reason("GET /a% HTTP/1.1\r\n\r\n"), "");
  EXPECT_NE(bad_reason("GET /a%zz HTTP/1.1\r\n\r\n"), "");
  EXPECT_NE(bad_reason("GET /a?x=%g1 HTTP/1.1\r\n\r\n"), "");
  EXPECT_NE(bad_reason("GET /a?%=1 HTTP/1.1\r\n\r\n"), "");
  EXPECT_EQ(bad_reason("GET /a%00b HTTP/1.1\r\n\r\n"), "NUL in decoded request target");
  EXPECT_NE(bad_reason("GET /a?x=%00 HTTP/1.1\r\n\r\n"), "");
  using namespace std::string_literals;
  EXPECT_EQ(bad_reason("GET /a\0b HTTP/1.1\r\n\r\n"s), "control character in request target");
  EXPECT_EQ(bad_reason("GET /a\tb HTTP/1.1\r\n\r\n"), "control character in request target");
  EXPECT_EQ(bad_reason("GET /a\x7f HTTP/1.1\r\n\r\n"), "control character in request target");
  EXPECT_EQ(bad_reason("GET /a#frag HTTP/1.1\r\n\r\n"), "fragment in request target");
}

TEST(HttpRequest, RejectsBadHeaders) {
  EXPECT_EQ(bad_reason(with_header("NoColon")), "header line without ':'");
  EXPECT_EQ(bad_reason(with_header("Bad Name: x")), "invalid header name");
  EXPECT_EQ(bad_reason(with_header("Name : x")), "invalid header name");
  EXPECT_EQ(bad_reason(with_header(": x")), "invalid header name");
  EXPECT_EQ(bad_reason(with_header("X-A: 1\r\n  continued")),
            "obs-fold (line starts with whitespace)");
  EXPECT_EQ(bad_reason(with_header("X-A: 1\r\n\tcontinued")),
            "obs-fold (line starts with whitespace)");
  EXPECT_EQ(bad_reason(with_header("X-A: a\rb")), "control character in header value");
  EXPECT_EQ(bad_reason(with_header("X-A: a\x01")), "control character in header value");
  EXPECT_EQ(bad_reason(with_header("X-A: a\tb")), "");  // HTAB is allowed
  EXPECT_EQ(bad_reason(with_header("X-A:")), "");       // so is an empty value
}

TEST(HttpRequest, RejectsBadContentLength) {
  EXPECT_EQ(bad_reason(with_header("Content-Length: 5\r\nContent-Length: 6")),
            "conflicting Content-Length values");
  for (const char* value : {"", "x", "5x", "-1", "+5", "5, 5", "0x10", "99999999999999999999"}) {
    EXPECT_EQ(bad_reason(with_header("Content-Length: " + std::string(value))),
              "invalid Content-Length")
        << value;
  }
}

TEST(HttpRequest, RejectsTransferEncoding) {
  EXPECT_EQ(bad_reason(with_header("Transfer-Encoding: chunked")),
            "chunked request bodies are not accepted");
  EXPECT_EQ(bad_reason(with_header("TRANSFER-ENCODING: identity")),
            "chunked request bodies are not accepted");
}

TEST(HttpRequest, LimitsHeadersAndQueryParameters) {
  std::string headers;
  for (size_t i = 0; i < kHttpMaxHeaders; ++i) headers += "X-" + std::to_string(i) + ": v\r\n";
  const std::string at_limit = "GET / HTTP/1.1\r\n" + headers;
  EXPECT_EQ(bad_reason(at_limit + "\r\n"), "");
  EXPECT_EQ(bad_reason(at_limit + "X-Last: v\r\n\r\n"), "too many header fields");

  std::string query = "a=0";
  for (size_t i = 1; i < kHttpMaxQueryParams; ++i) query += "&a=" + std::to_string(i);
  HttpRequest req;
  ASSERT_EQ(parse("GET /?" + query + " HTTP/1.1\r\n\r\n", &req), HttpParse::kComplete);
  EXPECT_EQ(req.query.size(), kHttpMaxQueryParams);
  EXPECT_EQ(bad_reason("GET /?" + query + "&b HTTP/1.1\r\n\r\n"), "too many query parameters");
}

TEST(HttpRequest, TooLargeWithoutEndOfHead) {
  HttpRequest req;
  const std::string_view bytes = kProfileRequest;
  EXPECT_EQ(parse_http_request(bytes, bytes.size(), &req, nullptr), HttpParse::kComplete);
  EXPECT_EQ(parse_http_request(bytes, bytes.size() - 1, &req, nullptr), HttpParse::kTooLarge);
  EXPECT_EQ(parse_http_request(bytes.substr(0, 20), 20, &req, nullptr), HttpParse::kTooLarge);
  EXPECT_EQ(parse_http_request(bytes.substr(0, 19), 20, &req, nullptr), HttpParse::kIncomplete);
  EXPECT_EQ(parse_http_request(bytes, 0, &req, nullptr), HttpParse::kTooLarge);
  const std::string long_header = "GET / HTTP/1.1\r\nX: " + std::string(10000, 'a');
  EXPECT_EQ(parse(long_header, &req), HttpParse::kTooLarge);
}

TEST(HttpRequest, RefusesNonHttpEarly) {
  HttpRequest req;
  std::string error;
  // A TLS ClientHello's first bytes, sent to the plain-text port.
  EXPECT_EQ(parse(std::string_view("\x16\x03\x01\x02\x00\x01", 6), &req, &error), HttpParse::kBad);
  EXPECT_EQ(error, "invalid method");
}

TEST(HttpRequest, ParseDecimal) {
  EXPECT_EQ(parse_decimal("30"), 30u);
  EXPECT_EQ(parse_decimal("0"), 0u);
  EXPECT_EQ(parse_decimal("007"), 7u);
  EXPECT_EQ(parse_decimal("18446744073709551615"), UINT64_MAX);
  EXPECT_EQ(parse_decimal("18446744073709551616"), std::nullopt);
  EXPECT_EQ(parse_decimal("99999999999999999999999"), std::nullopt);
  for (const char* text : {"", "3x", "x3", "-1", "+1", " 1", "1 ", "1.5", "0x1"}) {
    EXPECT_EQ(parse_decimal(text), std::nullopt) << text;
  }
}

TEST(HttpRequest, ResponseHeadBytes) {
  EXPECT_EQ(http_response_head(200, "application/octet-stream", 1234, true),
            "HTTP/1.1 200 OK\r\n"
            "Content-Type: application/octet-stream\r\n"
            "Content-Length: 1234\r\n"
            "Connection: keep-alive\r\n"
            "\r\n");
  EXPECT_EQ(http_response_head(429, "text/plain; charset=utf-8", 0, false, "Retry-After: 5\r\n"),
            "HTTP/1.1 429 Too Many Requests\r\n"
            "Content-Type: text/plain; charset=utf-8\r\n"
            "Content-Length: 0\r\n"
            "Retry-After: 5\r\n"
            "Connection: close\r\n"
            "\r\n");
  EXPECT_EQ(http_response_head(405, "", 0, false, "Allow: GET, HEAD\r\n"),
            "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\nAllow: GET, HEAD\r\n"
            "Connection: close\r\n\r\n");
  EXPECT_EQ(http_response_head(299, "a/b", 1, false),
            "HTTP/1.1 299 Status\r\nContent-Type: a/b\r\nContent-Length: 1\r\n"
            "Connection: close\r\n\r\n");
}

TEST(HttpRequest, ReasonPhrases) {
  const std::pair<int, std::string_view> expected[] = {{200, "OK"},
                                                       {400, "Bad Request"},
                                                       {404, "Not Found"},
                                                       {405, "Method Not Allowed"},
                                                       {408, "Request Timeout"},
                                                       {413, "Content Too Large"},
                                                       {429, "Too Many Requests"},
                                                       {500, "Internal Server Error"},
                                                       {501, "Not Implemented"},
                                                       {503, "Service Unavailable"},
                                                       {302, "Status"},
                                                       {0, "Status"}};
  for (const auto& [status, reason] : expected) EXPECT_EQ(http_reason(status), reason) << status;
}

// Random bytes, and random edits of a valid request: every answer is one of the four, with a
// reason exactly when kBad, and a complete head never claims more bytes than it was given.
TEST(HttpRequest, RandomInputNeverCrashes) {
  std::mt19937 rng(20240611);
  using namespace std::string_view_literals;
  const std::string_view alphabet = "GET /?=&%+:\r\n\t HTTP/1.0a9\x00\x7f\xff"sv;
  const auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  int counts[4] = {};
  for (int i = 0; i < 20000; ++i) {
    std::string bytes;
    if (i % 2 == 0) {
      bytes.resize(pick(64));
      for (char& c : bytes) c = pick(4) == 0 ? char(pick(256)) : alphabet[pick(alphabet.size())];
    } else {
      bytes = kProfileRequest;
      for (size_t edits = 1 + pick(4); edits > 0; --edits) {
        const size_t at = pick(bytes.size() + 1);
        switch (pick(3)) {
          case 0:
            bytes.insert(at, 1, alphabet[pick(alphabet.size())]);
            break;
          case 1:
            if (at < bytes.size()) bytes.erase(at, 1);
            break;
          default:
            if (at < bytes.size()) bytes[at] = char(pick(256));
            break;
        }
      }
    }
    HttpRequest req;
    std::string error;
    const HttpParse result = parse_http_request(bytes, 1 + pick(256), &req, &error);
    ASSERT_TRUE(result == HttpParse::kIncomplete || result == HttpParse::kComplete ||
                result == HttpParse::kBad || result == HttpParse::kTooLarge);
    ++counts[static_cast<int>(result)];
    EXPECT_EQ(error.empty(), result != HttpParse::kBad) << bytes;
    if (result == HttpParse::kComplete) {
      EXPECT_LE(req.head_bytes, bytes.size());
    }
  }
  // Each state was reached: the mutations exercise the parser, not only its first check.
  for (int n : counts) EXPECT_GT(n, 0);
}

}  // namespace
}  // namespace inprof::internal
