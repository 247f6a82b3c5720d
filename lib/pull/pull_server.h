// Pull mode: a listener on a loopback address or a UNIX socket that answers the scrapes of
// `go tool pprof`, Parca and Grafana Alloy the way a Go service's net/http/pprof does
// (docs/fleet.md). One thread of the profiler's serves every connection (non-blocking, one
// wait for all): at most kMaxConnections at once, a request head within kHeadTimeoutNs, a
// response taken within kWriteTimeoutNs; beyond, the connection is answered 503 or closed. The
// service's own threads are never involved. Opt-in only: nothing is opened without it.
#ifndef INPROF_LIB_PULL_PULL_SERVER_H_
#define INPROF_LIB_PULL_PULL_SERVER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "inprof/profiler.h"
#include "pull/heap_profile.h"
#include "pull/http_request.h"
#include "pull/pull_socket.h"
#include "pull/scrape_window.h"
#include "threads/profiler_threads.h"

namespace inprof::internal {

struct PullSettings {
  Options options;  // of the sessions scrapes start (mode and output are ignored)
  uint64_t max_seconds = 300;
  bool symbols = true;  // /debug/pprof/symbol names addresses (pull/loaded_symbols.h)
};

class PullServer {
 public:
  static constexpr size_t kMaxConnections = 16;
  static constexpr uint64_t kHeadTimeoutNs = 10'000'000'000;
  static constexpr uint64_t kWriteTimeoutNs = 30'000'000'000;
  static constexpr size_t kMaxHead = 16 << 10;
  static constexpr size_t kMaxSymbolRequest = 1 << 20;
  static constexpr uint64_t kLingerNs = 2'000'000'000;
  static constexpr size_t kMaxSymbolAddresses = 1 << 16;  // named per request

  // The process's one server: started, or why not.
  static Status start(std::string_view address, const PullSettings& settings);
  static Status stop();
  // The child of a fork: the server's descriptors are the parent's (copies in this table).
  static void forget_in_child();

  ~PullServer();

 private:
  struct Connection {
    int fd = -1;
    uint64_t identity = 0;  // pull_identity() when accepted
    std::string in;
    std::string out;
    size_t out_done = 0;
    uint64_t deadline_ns = 0;
    bool lingering = false;  // answered; what the client still sends is dropped until it closes
    std::unique_ptr<ScrapeWindow> scrape;  // while a profile is taken
    uint64_t scrape_end_ns = 0;
    uint64_t scrape_start_ns = 0;
    uint64_t scrape_unix_ns = 0;
  };

  PullServer(PullListener listener, const PullAddress& address, const PullSettings& settings)
      : listener_(listener), address_(address), settings_(settings) {}
  void serve();
  int wait_ms(uint64_t now) const;
  void accept_all(uint64_t now);
  void read_request(Connection& c, uint64_t now);
  void handle(Connection& c, const HttpRequest& request, std::string_view body, uint64_t now);
  void start_profile(Connection& c, const HttpRequest& request, uint64_t now);
  void answer_heap(Connection& c, uint64_t now);
  void answer_symbols(Connection& c, const HttpRequest& request, std::string_view body,
                      uint64_t now);
  void finish_profile(Connection& c, uint64_t now);
  void respond(Connection& c, int status, std::string_view type, std::string body, uint64_t now);
  void respond_error(Connection& c, int status, std::string_view message, uint64_t now);
  void write_some(Connection& c);
  void drop_input(Connection& c);
  void close(Connection& c);

  PullListener listener_;
  PullAddress address_;
  PullSettings settings_;
  std::vector<Connection> connections_;
  HeapProfile heap_;  // attached to every session that records allocations
  std::atomic<bool> stop_{false};
  ProfilerThread thread_;
};

}  // namespace inprof::internal

#endif  // INPROF_LIB_PULL_PULL_SERVER_H_
