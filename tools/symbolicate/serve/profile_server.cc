#include "serve/profile_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "serve/symbol_server.h"
#include "symbolize/elf/elf_file.h"
#include "text_util.h"

namespace inprof::symbolicate {
namespace {

constexpr size_t kMaxRequestBody = size_t{64} << 20;

volatile sig_atomic_t stop_requested = 0;
int stop_pipe_write = -1;

void on_stop_signal(int) {
  stop_requested = 1;
  if (stop_pipe_write >= 0) {
    char c = 1;
    [[maybe_unused]] ssize_t n = ::write(stop_pipe_write, &c, 1);
  }
}

std::string random_token() {
  unsigned char bytes[16];
  size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t n = getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) std::abort();  // no randomness: never serve under a guessable path
    got += static_cast<size_t>(n);
  }
  return hex_string(bytes);
}

bool send_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR && !stop_requested) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// Reads the request head (up to the blank line), waiting at most a few seconds for it.
bool read_request_head(int fd, std::string* head) {
  char buffer[2048];
  while (head->find("\r\n\r\n") == std::string::npos) {
    if (head->size() > 16384) return false;
    pollfd p = {fd, POLLIN, 0};
    int r = ::poll(&p, 1, 5000);
    if (r <= 0 || stop_requested) return false;
    ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) return false;
    head->append(buffer, static_cast<size_t>(n));
  }
  return true;
}

// The request body, by its Content-Length (no chunked bodies: the profiler sends none), after the
// part of it that came with the head.
bool read_request_body(int fd, const std::string& head, std::string* body) {
  size_t length = 0;
  bool found = false;
  size_t line = head.find("\r\n");
  while (line != std::string::npos && line + 2 < head.size()) {
    size_t end = head.find("\r\n", line + 2);
    if (end == std::string::npos) break;
    std::string header = head.substr(line + 2, end - line - 2);
    for (size_t i = 0; i < header.size() && header[i] != ':'; ++i) {
      header[i] = static_cast<char>(std::tolower(static_cast<unsigned char>(header[i])));
    }
    if (header.compare(0, 15, "content-length:") == 0) {
      length = std::strtoull(header.c_str() + 15, nullptr, 10);
      found = true;
    }
    line = end;
  }
  if (!found || length > kMaxRequestBody) return false;
  *body = head.substr(head.find("\r\n\r\n") + 4);
  char buffer[1 << 16];
  while (body->size() < length) {
    pollfd p = {fd, POLLIN, 0};
    if (::poll(&p, 1, 5000) <= 0 || stop_requested) return false;
    ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) return false;
    body->append(buffer, static_cast<size_t>(n));
  }
  body->resize(length);
  return true;
}

void send_reply(int client, int status, const std::string& cors, const std::string& body) {
  const char* reason = status == 200   ? "OK"
                       : status == 400 ? "Bad Request"
                       : status == 403 ? "Forbidden"
                       : status == 404 ? "Not Found"
                       : status == 413 ? "Content Too Large"
                                       : "Error";
  std::string reply = "HTTP/1.1 " + std::to_string(status) + " " + reason + "\r\n" + cors +
                      "Content-Type: application/json\r\nCache-Control: no-store\r\n"
                      "Content-Length: " +
                      std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
  send_all(client, reply.data(), reply.size());
}

void answer(int client, const std::string& file, const std::string& prefix,
            const std::string& origin, SymbolServer* symbols, std::FILE* log) {
  std::string head;
  if (!read_request_head(client, &head)) return;
  std::string line = head.substr(0, head.find("\r\n"));
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string::npos) {
    static const char kBad[] =
        "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    send_all(client, kBad, sizeof kBad - 1);
    return;
  }
  std::string method = line.substr(0, sp1);
  std::string target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string cors = "Access-Control-Allow-Origin: " + origin + "\r\n";
  const bool is_profile = target == prefix + "profile.json";
  const bool is_api = symbols && target.size() > prefix.size() &&
                      target.compare(0, prefix.size(), prefix) == 0 && !is_profile;
  if (!is_profile && !is_api) {
    static const char k404[] =
        "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    send_all(client, k404, sizeof k404 - 1);
    std::fprintf(log, "symbolicate: %s %s -> 404\n", method.c_str(), "(another path)");
    return;
  }
  if (method == "OPTIONS") {
    std::string reply =
        "HTTP/1.1 204 No Content\r\n" + cors +
        "Access-Control-Allow-Methods: GET, HEAD, POST, OPTIONS\r\n"
        "Access-Control-Allow-Headers: *\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    send_all(client, reply.data(), reply.size());
    return;
  }
  if (is_api) {
    const std::string api = "/" + target.substr(prefix.size());
    if (method != "POST") {
      std::string reply = "HTTP/1.1 405 Method Not Allowed\r\nAllow: POST, OPTIONS\r\n" + cors +
                          "Content-Length: 0\r\nConnection: close\r\n\r\n";
      send_all(client, reply.data(), reply.size());
      return;
    }
    std::string body;
    if (!read_request_body(client, head, &body)) {
      send_reply(client, 400, cors, "{\"error\":\"no request body (Content-Length)\"}");
      return;
    }
    ApiResponse response = symbols->handle(api, body);
    send_reply(client, response.status, cors, response.body);
    std::fprintf(log, "symbolicate: POST %s -> %d\n", api.c_str(), response.status);
    return;
  }
  if (method != "GET" && method != "HEAD") {
    std::string reply = "HTTP/1.1 405 Method Not Allowed\r\nAllow: GET, HEAD, OPTIONS\r\n" + cors +
                        "Content-Length: 0\r\nConnection: close\r\n\r\n";
    send_all(client, reply.data(), reply.size());
    return;
  }
  std::string why;
  int fd = open_regular_file(file, &why);
  struct stat st;
  if (fd < 0 || ::fstat(fd, &st) != 0) {
    if (fd >= 0) ::close(fd);
    static const char k500[] =
        "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    send_all(client, k500, sizeof k500 - 1);
    std::fprintf(log, "symbolicate: cannot read '%s': %s\n", file.c_str(), why.c_str());
    return;
  }
  std::string reply = "HTTP/1.1 200 OK\r\n" + cors +
                      "Content-Type: application/json\r\nCache-Control: no-store\r\n"
                      "Content-Length: " +
                      std::to_string(st.st_size) + "\r\nConnection: close\r\n\r\n";
  bool ok = send_all(client, reply.data(), reply.size());
  if (method == "GET") {
    char buffer[1 << 16];
    ssize_t n;
    while (ok && (n = ::read(fd, buffer, sizeof buffer)) > 0)
      ok = send_all(client, buffer, size_t(n));
  }
  ::close(fd);
  std::fprintf(log, "symbolicate: %s profile -> 200%s\n", method.c_str(), ok ? "" : " (cut off)");
}

void try_open_browser(const std::string& url) {
  // xdg-open may be missing (a server, a container): that is fine, the address is printed.
  pid_t pid = ::fork();
  if (pid != 0) return;  // the parent reaps it later (or never needs to: SIGCHLD is ignored)
  int null = ::open("/dev/null", O_RDWR);
  if (null >= 0) {
    ::dup2(null, 0);
    ::dup2(null, 1);
    ::dup2(null, 2);
  }
  ::execlp("xdg-open", "xdg-open", url.c_str(), static_cast<char*>(nullptr));
  ::_exit(127);
}

}  // namespace

namespace {

std::string percent_encoded(const std::string& text) {
  static const char kDigits[] = "0123456789ABCDEF";
  std::string encoded;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      encoded += static_cast<char>(c);
    } else {
      encoded += '%';
      encoded += kDigits[c >> 4];
      encoded += kDigits[c & 15];
    }
  }
  return encoded;
}

// "https://host:port/path" -> "https://host:port"
std::string origin_of(const std::string& url) {
  size_t scheme = url.find("://");
  size_t slash = scheme == std::string::npos ? scheme : url.find('/', scheme + 3);
  return slash == std::string::npos ? url : url.substr(0, slash);
}

}  // namespace

std::string profiler_url_for(const std::string& profile_url, const std::string& profiler,
                             const std::string& symbol_server_url) {
  std::string url = profiler + "/from-url/" + percent_encoded(profile_url) + "/";
  if (!symbol_server_url.empty()) url += "?symbolServer=" + percent_encoded(symbol_server_url);
  return url;
}

int serve_profile(const ServeOptions& options) {
  std::FILE* log = options.log;
  int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener < 0) {
    std::fprintf(log, "symbolicate: error: socket: %s\n", std::strerror(errno));
    return 1;
  }
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);               // this machine only
  address.sin_port = htons(static_cast<uint16_t>(options.port));  // 0: any free port
  socklen_t length = sizeof address;
  const int reuse = 1;  // a port given again at once, while the last run's connections linger
  if (options.port != 0) ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &reuse, sizeof reuse);
  if (::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(listener, 8) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    const std::string where =
        options.port != 0 ? "127.0.0.1:" + std::to_string(options.port) : "127.0.0.1";
    std::fprintf(log, "symbolicate: error: cannot listen on %s: %s\n", where.c_str(),
                 std::strerror(errno));
    ::close(listener);
    return 1;
  }
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    std::fprintf(log, "symbolicate: error: pipe: %s\n", std::strerror(errno));
    ::close(listener);
    return 1;
  }
  stop_pipe_write = pipe_fds[1];
  struct sigaction action = {};
  action.sa_handler = on_stop_signal;  // no SA_RESTART: a blocked send returns
  sigemptyset(&action.sa_mask);
  struct sigaction old_int, old_term, old_chld;
  ::sigaction(SIGINT, &action, &old_int);
  ::sigaction(SIGTERM, &action, &old_term);
  struct sigaction ignore = {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGCHLD, &ignore, &old_chld);  // the browser launcher needs no reaping

  const std::string prefix = "/" + random_token() + "/";
  const std::string base = "http://127.0.0.1:" + std::to_string(ntohs(address.sin_port)) + prefix;
  const std::string url = base + "profile.json";
  // The symbol server's address has no trailing '/': the profiler appends "/symbolicate/v5".
  const std::string symbol_server =
      options.symbols ? base.substr(0, base.size() - 1) : std::string();
  const std::string profiler_url = profiler_url_for(url, options.profiler_url, symbol_server);
  const std::string origin = origin_of(options.profiler_url);
  std::fprintf(log, "symbolicate: serving the profile at %s\n", url.c_str());
  if (options.symbols) {
    std::fprintf(log, "symbolicate: symbol server (symbolicate/v5, source/v1, asm/v1) at %s\n",
                 symbol_server.c_str());
  }
  std::fprintf(log, "symbolicate: open %s\n", profiler_url.c_str());
  std::fprintf(log, "symbolicate: press Ctrl-C to stop\n");
  std::fflush(log);
  std::printf("%s\n", profiler_url.c_str());
  std::fflush(stdout);
  if (options.open_browser) try_open_browser(profiler_url);

  while (!stop_requested) {
    pollfd fds[2] = {{listener, POLLIN, 0}, {pipe_fds[0], POLLIN, 0}};
    int r = ::poll(fds, 2, -1);
    if (r < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[1].revents) break;
    if (!(fds[0].revents & POLLIN)) continue;
    int client = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    timeval timeout = {30, 0};  // a client that stops reading cannot hold the server forever
    ::setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
    answer(client, options.file, prefix, origin, options.symbols, log);
    ::shutdown(client, SHUT_WR);
    ::close(client);
    std::fflush(log);
  }
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  ::sigaction(SIGCHLD, &old_chld, nullptr);
  stop_pipe_write = -1;
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
  ::close(listener);
  std::fprintf(log, "symbolicate: stopped serving\n");
  return 0;
}

}  // namespace inprof::symbolicate
