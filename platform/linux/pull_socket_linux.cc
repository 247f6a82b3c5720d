// Pull mode's sockets on Linux (lib/pull/pull_socket.h).
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "pull/pull_socket.h"

namespace inprof::internal {
namespace {

bool parse_pull_port(std::string_view text, uint16_t* port) {
  if (text.empty() || text.size() > 5) return false;
  unsigned value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + static_cast<unsigned>(c - '0');
  }
  if (value > 65535) return false;
  *port = static_cast<uint16_t>(value);
  return true;
}

uint64_t socket_inode(int fd) {
  struct stat st;
  return fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) ? static_cast<uint64_t>(st.st_ino) : 0;
}

}  // namespace

bool parse_pull_address(std::string_view text, PullAddress* out, std::string* error) {
  *out = PullAddress{};
  if (text.substr(0, 5) == "unix:") {
    out->unix_socket = true;
    out->path = std::string(text.substr(5));
    if (out->path.empty() || out->path.size() >= sizeof(sockaddr_un{}.sun_path)) {
      *error = "a UNIX socket path of 1 to 107 bytes";
      return false;
    }
    return true;
  }
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || !parse_pull_port(text.substr(colon + 1), &out->port)) {
    *error = "HOST:PORT (a loopback host) or unix:PATH, not \"" + std::string(text) + "\"";
    return false;
  }
  std::string_view host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host == "localhost" || host == "127.0.0.1") {
    out->host = "127.0.0.1";
  } else if (host == "::1") {
    out->host = "::1";
  } else {
    *error =
        "the pull address must be loopback (127.0.0.1, [::1], localhost) or unix:PATH, not \"" +
        std::string(host) + "\"";
    return false;
  }
  return true;
}

PullListener pull_listen(const PullAddress& address, std::string* error) {
  PullListener l;
  sockaddr_storage storage{};
  socklen_t length = 0;
  int family = AF_INET;
  if (address.unix_socket) {
    family = AF_UNIX;
    auto* un = reinterpret_cast<sockaddr_un*>(&storage);
    un->sun_family = AF_UNIX;
    std::memcpy(un->sun_path, address.path.data(), address.path.size());
    if (address.path[0] == '@') un->sun_path[0] = '\0';  // abstract
    length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + address.path.size());
  } else if (address.host == "::1") {
    family = AF_INET6;
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&storage);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(address.port);
    in6->sin6_addr = in6addr_loopback;
    length = sizeof(sockaddr_in6);
  } else {
    auto* in = reinterpret_cast<sockaddr_in*>(&storage);
    in->sin_family = AF_INET;
    in->sin_port = htons(address.port);
    in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    length = sizeof(sockaddr_in);
  }
  const int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = std::string("socket: ") + std::strerror(errno);
    return l;
  }
  const int one = 1;
  if (!address.unix_socket) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, reinterpret_cast<sockaddr*>(&storage), length) != 0 || listen(fd, 64) != 0) {
    *error = std::string("cannot listen there: ") + std::strerror(errno);
    close(fd);
    return l;
  }
  if (!address.unix_socket) {
    sockaddr_storage bound{};
    socklen_t bound_length = sizeof bound;
    getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &bound_length);
    l.port = ntohs(family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                      : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  }
  l.fd = fd;
  l.identity = socket_inode(fd);
  return l;
}

uint64_t pull_identity(int fd) { return fd < 0 ? 0 : socket_inode(fd); }

int pull_accept(const PullListener& listener) {
  if (listener.fd < 0 || socket_inode(listener.fd) != listener.identity) return -1;
  return accept4(listener.fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

long pull_read(int fd, char* buffer, size_t size) {
  const ssize_t n = recv(fd, buffer, size, 0);
  if (n >= 0) return n;
  return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? -1 : -2;
}

long pull_write(int fd, const char* buffer, size_t size) {
  const ssize_t n = send(fd, buffer, size, MSG_NOSIGNAL);  // a client gone: no SIGPIPE
  if (n >= 0) return n;
  return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? -1 : -2;
}

void pull_shutdown_write(int fd) {
  if (fd >= 0) shutdown(fd, SHUT_WR);
}

void pull_close(int fd) {
  if (fd >= 0) close(fd);
}

void remove_pull_socket_file(const PullAddress& address) {
  if (address.unix_socket && !address.path.empty() && address.path[0] != '@') {
    unlink(address.path.c_str());
  }
}

void pull_shutdown(const PullListener& listener) {
  if (listener.fd >= 0 && socket_inode(listener.fd) == listener.identity) {
    shutdown(listener.fd, SHUT_RDWR);
  }
}

void pull_wait(PullWaitItem* items, size_t count, int timeout_ms) {
  pollfd fds[64];
  const size_t n = count < 64 ? count : 64;
  for (size_t i = 0; i < n; ++i) {
    fds[i] = pollfd{items[i].fd, static_cast<short>(items[i].write ? POLLOUT : POLLIN), 0};
  }
  const int ready = poll(fds, n, timeout_ms);
  for (size_t i = 0; i < n; ++i) items[i].ready = ready > 0 && fds[i].revents != 0;
}

}  // namespace inprof::internal
