#include "pull/pull_server.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>

#include "api/copies.h"
#include "pprof/gzip.h"
#include "pull/loaded_symbols.h"
#include "session/process_info.h"

namespace inprof::internal {
namespace {

std::mutex g_server_mutex;  // start() and stop(), on the program's threads
PullServer* g_server = nullptr;

constexpr const char* kPullIndexPage =
    "<html><head><title>/debug/pprof/</title></head><body>\n"
    "<p>inprof: profiles of this process, as Go's net/http/pprof serves them.</p>\n"
    "<table>\n"
    "<tr><td><a href=\"profile?seconds=30\">profile</a></td><td>CPU and wall-clock samples of "
    "the next <i>seconds</i> (gzipped pprof). <code>go tool pprof "
    "http://HOST/debug/pprof/profile?seconds=10</code></td></tr>\n"
    "<tr><td><a href=\"heap\">heap</a></td><td>sampled allocations (needs "
    "libinprof_allocations)</td></tr>\n"
    "</table></body></html>\n";

// Whole seconds from 1 to `most`; `fallback` without the parameter.
bool scrape_seconds(const HttpRequest& request, uint64_t most, uint64_t* seconds) {
  const std::string* text = request.query_value("seconds");
  if (!text) {
    *seconds = std::min<uint64_t>(30, most);
    return true;
  }
  const std::optional<uint64_t> value = parse_decimal(*text);
  if (!value || *value < 1 || *value > most) return false;
  *seconds = *value;
  return true;
}

std::optional<uint64_t> parse_hex_address(std::string_view digits) {
  if (digits.empty() || digits.size() > 16) return std::nullopt;
  uint64_t value = 0;
  for (char c : digits) {
    const int d = c >= '0' && c <= '9'   ? c - '0'
                  : c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                         : -1;
    if (d < 0) return std::nullopt;
    value = value << 4 | static_cast<uint64_t>(d);
  }
  return value;
}

}  // namespace

Status PullServer::start(std::string_view address, const PullSettings& settings) {
  std::lock_guard lock(g_server_mutex);
  if (g_server) return Status::error(Status::Code::kAlreadyRunning, "pull mode already serves");
  PullAddress parsed;
  std::string error;
  if (!parse_pull_address(address, &parsed, &error)) {
    return Status::error(Status::Code::kInvalidOption, "pull address: " + error);
  }
  const PullListener listener = pull_listen(parsed, &error);
  if (listener.fd < 0) {
    return Status::error(Status::Code::kPlatformError,
                         "pull mode on " + std::string(address) + ": " + error);
  }
  auto server = std::unique_ptr<PullServer>(new PullServer(listener, parsed, settings));
  if (!server->thread_.start("inprof-pull", [s = server.get()] { s->serve(); })) {
    pull_close(listener.fd);
    return Status::error(Status::Code::kPlatformError, "pull mode: no thread for it");
  }
  g_server = server.release();
  here::set_allocation_tap(&g_server->heap_);
  static std::once_flag hooks;
  std::call_once(hooks, [] {
    call_around_fork(nullptr, nullptr, &PullServer::forget_in_child);
    // A UNIX socket's file goes with the process (the server itself is left to the end).
    std::atexit([] {
      std::lock_guard lock(g_server_mutex);
      if (g_server) remove_pull_socket_file(g_server->address_);
    });
  });
  return {};
}

Status PullServer::stop() {
  std::lock_guard lock(g_server_mutex);
  if (!g_server) return Status::error(Status::Code::kNotRunning, "pull mode is not serving");
  here::set_allocation_tap(nullptr);
  delete g_server;
  g_server = nullptr;
  return {};
}

void PullServer::forget_in_child() {
  // The thread is the parent's; the descriptors here are copies: closed, the object left.
  if (!g_server) return;
  for (Connection& c : g_server->connections_) {
    if (pull_identity(c.fd) == c.identity) pull_close(c.fd);
  }
  if (pull_identity(g_server->listener_.fd) == g_server->listener_.identity) {
    pull_close(g_server->listener_.fd);
  }
  g_server = nullptr;
}

PullServer::~PullServer() {
  stop_.store(true);
  pull_shutdown(listener_);
  thread_.join();
  for (Connection& c : connections_) close(c);
  if (pull_identity(listener_.fd) == listener_.identity) pull_close(listener_.fd);
  remove_pull_socket_file(address_);
}

int PullServer::wait_ms(uint64_t now) const {
  uint64_t next = now + 1'000'000'000;  // at least once a second: stop_ is read
  for (const Connection& c : connections_) {
    next = std::min(next, c.scrape ? c.scrape_end_ns : c.deadline_ns);
  }
  return next > now ? static_cast<int>((next - now + 999'999) / 1'000'000) : 0;
}

void PullServer::serve() {
  std::vector<PullWaitItem> items;
  while (!stop_.load()) {
    items.clear();
    items.push_back({listener_.fd, false, false});
    for (const Connection& c : connections_)
      items.push_back({c.scrape ? -1 : c.fd, !c.out.empty(), false});
    pull_wait(items.data(), items.size(), wait_ms(monotonic_ns()));
    if (stop_.load()) break;
    const uint64_t now = monotonic_ns();
    if (items[0].ready) {
      if (pull_identity(listener_.fd) != listener_.identity) {
        listener_.fd = -1;  // the program closed it (and may have the number again): given up
      } else {
        accept_all(now);
      }
    }
    for (size_t i = 0; i < connections_.size(); ++i) {
      Connection& c = connections_[i];
      const bool ready = i + 1 < items.size() && items[i + 1].ready;
      if (pull_identity(c.fd) != c.identity) {
        c.fd = -1;  // no longer ours: forgotten, never closed
        close(c);
      } else if (c.scrape) {
        if (now >= c.scrape_end_ns || c.scrape->ended()) finish_profile(c, now);
      } else if (now >= c.deadline_ns) {
        close(c);  // a client that sends no request, or takes no response, in time
      } else if (c.lingering) {
        if (ready) drop_input(c);
      } else if (ready && c.out.empty()) {
        read_request(c, now);
      } else if (ready) {
        write_some(c);
      }
    }
    std::erase_if(connections_, [](const Connection& c) { return c.fd < 0; });
  }
  for (Connection& c : connections_) {
    if (c.scrape) here::finish_scrape(c.scrape.get(), /*drain=*/false);
    c.scrape.reset();
  }
}

void PullServer::accept_all(uint64_t now) {
  for (int i = 0; i < 64; ++i) {
    const int fd = pull_accept(listener_);
    if (fd < 0) return;
    Connection c;
    c.fd = fd;
    c.identity = pull_identity(fd);
    c.deadline_ns = now + kHeadTimeoutNs;
    if (connections_.size() >= kMaxConnections) {
      // Said, not waited for: the answer fits the socket's buffer, or is lost.
      const std::string body = "too many connections to the profiler; try again\n";
      const std::string response =
          http_response_head(503, "text/plain; charset=utf-8", body.size(), false) + body;
      (void)pull_write(fd, response.data(), response.size());
      pull_close(fd);
      continue;
    }
    connections_.push_back(std::move(c));
  }
}

void PullServer::read_request(Connection& c, uint64_t now) {
  char buffer[4096];
  const long n = pull_read(c.fd, buffer, sizeof buffer);
  if (n == -1) return;
  if (n <= 0) {
    close(c);  // gone before asking
    return;
  }
  c.in.append(buffer, static_cast<size_t>(n));
  HttpRequest request;
  std::string error;
  switch (parse_http_request(c.in, kMaxHead, &request, &error)) {
    case HttpParse::kIncomplete:
      return;
    case HttpParse::kBad:
      respond_error(c, 400, error, now);
      return;
    case HttpParse::kTooLarge:
      respond_error(c, 413, "request head too large", now);
      return;
    case HttpParse::kComplete:
      if (request.content_length > kMaxSymbolRequest) {
        respond_error(c, 413, "at most " + std::to_string(kMaxSymbolRequest) + " bytes of body",
                      now);
      } else if (c.in.size() >= request.head_bytes + request.content_length) {
        handle(c, request,
               std::string_view(c.in).substr(request.head_bytes, request.content_length), now);
      }
      return;
  }
}

void PullServer::handle(Connection& c, const HttpRequest& request, std::string_view body,
                        uint64_t now) {
  if (request.method != "GET" && request.method != "POST") {
    respond_error(c, 405, "only GET (and POST to /debug/pprof/symbol) is served", now);
    return;
  }
  const std::string_view path = request.path;
  if (path == "/debug/pprof/" || path == "/debug/pprof") {
    respond(c, 200, "text/html; charset=utf-8", kPullIndexPage, now);
  } else if (path == "/debug/pprof/profile") {
    start_profile(c, request, now);
  } else if (path == "/debug/pprof/heap" || path == "/debug/pprof/allocs") {
    answer_heap(c, now);
  } else if (path == "/debug/pprof/symbol") {
    answer_symbols(c, request, body, now);
  } else {
    respond_error(c, 404, "no such profile; the index is /debug/pprof/", now);
  }
}

void PullServer::answer_heap(Connection& c, uint64_t now) {
  if (!heap_.has_session()) {
    respond_error(
        c, 501,
        "no allocation profile: preload libinprof_allocations.so beside libinprof.so (with "
        "INPROF_PULL a session then records allocations from the process's start)",
        now);
    return;
  }
  std::string body = gzip(heap_.pprof(wall_clock_ns()));
  if (body.empty()) {
    respond_error(c, 500, "out of memory for the profile", now);
    return;
  }
  respond(c, 200, "application/octet-stream", std::move(body), now);
}

void PullServer::answer_symbols(Connection& c, const HttpRequest& request, std::string_view body,
                                uint64_t now) {
  // Go's symbolz protocol: GET says whether symbols are served, POST names "0xA+0xB" addresses
  // with a line "0xA name" each, leaving out those it cannot name.
  if (request.method != "POST") {
    respond(c, 200, "text/plain; charset=utf-8",
            settings_.symbols ? "num_symbols: 1\n" : "num_symbols: 0\n", now);
    return;
  }
  std::vector<uint64_t> addresses;
  for (size_t at = 0; at < body.size() && settings_.symbols;) {
    size_t end = body.find('+', at);
    if (end == std::string_view::npos) end = body.size();
    std::string_view word = body.substr(at, end - at);
    while (!word.empty() && (word.back() == '\n' || word.back() == '\r' || word.back() == ' ')) {
      word.remove_suffix(1);
    }
    if (addresses.size() >= kMaxSymbolAddresses) break;  // the rest stays unnamed
    if (word.size() > 2 && word[0] == '0' && (word[1] == 'x' || word[1] == 'X')) {
      if (const std::optional<uint64_t> a = parse_hex_address(word.substr(2)))
        addresses.push_back(*a);
    }
    at = end + 1;
  }
  const std::vector<std::string> names = name_loaded_addresses(addresses);
  std::string out;
  char hex[24];
  for (size_t i = 0; i < addresses.size(); ++i) {
    if (names[i].empty()) continue;
    std::snprintf(hex, sizeof hex, "%#llx ", static_cast<unsigned long long>(addresses[i]));
    out += hex;
    out += names[i];
    out += '\n';
  }
  respond(c, 200, "text/plain; charset=utf-8", std::move(out), now);
}

void PullServer::start_profile(Connection& c, const HttpRequest& request, uint64_t now) {
  uint64_t seconds = 0;
  if (!scrape_seconds(request, settings_.max_seconds, &seconds)) {
    respond_error(
        c, 400, "seconds must be a whole number from 1 to " + std::to_string(settings_.max_seconds),
        now);
    return;
  }
  Options options = settings_.options;
  options.mode = Mode::kStream;
  auto window = std::make_unique<ScrapeWindow>(seconds * 1'000'000'000);
  const Status attached = here::attach_scrape(window.get(), options);
  if (!attached.ok()) {
    respond_error(c, 503, attached.message(), now);
    return;
  }
  c.scrape = std::move(window);
  c.scrape_start_ns = now;
  c.scrape_unix_ns = wall_clock_ns();
  c.scrape_end_ns = now + seconds * 1'000'000'000;
}

void PullServer::finish_profile(Connection& c, uint64_t now) {
  here::finish_scrape(c.scrape.get(), /*drain=*/!c.scrape->ended());
  const uint64_t end = std::min(now, c.scrape_end_ns);
  std::string body = gzip(c.scrape->pprof(c.scrape_unix_ns, end - c.scrape_start_ns));
  c.scrape.reset();
  if (body.empty()) {
    respond_error(c, 500, "out of memory for the profile", now);
    return;
  }
  respond(c, 200, "application/octet-stream", std::move(body), now);
}

void PullServer::respond(Connection& c, int status, std::string_view type, std::string body,
                         uint64_t now) {
  // X-Go-Pprof: pprof prints an error's text only from a server that says it is one.
  c.out = http_response_head(status, type, body.size(), /*keep_alive=*/false,
                             status != 200 ? "X-Go-Pprof: 1\r\n"
                             : type == "application/octet-stream"
                                 ? "Content-Disposition: attachment; filename=\"profile\"\r\n"
                                 : "");
  c.out += body;
  c.out_done = 0;
  c.deadline_ns = now + kWriteTimeoutNs;
  write_some(c);
}

void PullServer::respond_error(Connection& c, int status, std::string_view message, uint64_t now) {
  respond(c, status, "text/plain; charset=utf-8", std::string(message) + "\n", now);
}

void PullServer::write_some(Connection& c) {
  while (c.out_done < c.out.size()) {
    const long n = pull_write(c.fd, c.out.data() + c.out_done, c.out.size() - c.out_done);
    if (n == -1) return;  // the socket's buffer is full: later
    if (n < 0) {
      close(c);  // the client went away
      return;
    }
    c.out_done += static_cast<size_t>(n);
  }
  // Every response ends its connection (Connection: close), once the client has closed its side.
  pull_shutdown_write(c.fd);
  c.out.clear();
  c.lingering = true;
  c.deadline_ns = monotonic_ns() + kLingerNs;
}

void PullServer::drop_input(Connection& c) {
  char buffer[4096];
  for (;;) {
    const long n = pull_read(c.fd, buffer, sizeof buffer);
    if (n == -1) return;  // nothing more for now
    if (n <= 0) break;    // the client closed (or failed): done
  }
  close(c);
}

void PullServer::close(Connection& c) {
  if (c.scrape) {
    here::finish_scrape(c.scrape.get(), /*drain=*/false);
    c.scrape.reset();
  }
  if (c.fd >= 0 && pull_identity(c.fd) == c.identity) pull_close(c.fd);
  c.fd = -1;
}

}  // namespace inprof::internal
