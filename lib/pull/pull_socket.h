// The pull listener's sockets (platform/<os>/pull_socket_<os>.cc): a loopback TCP address or a
// UNIX socket, every descriptor non-blocking and close-on-exec. The listener is the one
// descriptor pull mode keeps in the program's table while it serves (the user asked for it);
// before each accept it is checked to still be the socket opened (a program that closed it and
// got the number again for a file of its own must not have its descriptor used).
#ifndef INPROF_LIB_PULL_PULL_SOCKET_H_
#define INPROF_LIB_PULL_PULL_SOCKET_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace inprof::internal {

struct PullAddress {
  bool unix_socket = false;
  std::string host;  // a loopback literal: "127.0.0.1", "::1"
  uint16_t port = 0;
  std::string path;  // a UNIX socket's; "@name": abstract
};

// "127.0.0.1:6060", "localhost:6060", "[::1]:6060", "unix:/run/app.sock", "unix:@name". Only
// loopback hosts: a profile tells much about a program, and no one off the machine should ask.
bool parse_pull_address(std::string_view text, PullAddress* out, std::string* error);

struct PullListener {
  int fd = -1;
  uint64_t identity = 0;  // the socket's inode
  uint16_t port = 0;      // the port bound (a TCP port 0 asks for any)
};
PullListener pull_listen(const PullAddress& address, std::string* error);
// A connection, or -1 (none waiting, or the listener is no longer ours).
int pull_accept(const PullListener& listener);
// A socket's identity (its inode; 0: not a socket, or closed): a descriptor is used only while
// it still is the socket it was (a program that closes every descriptor, then opens its own
// files, gets the same numbers).
uint64_t pull_identity(int fd);
// Bytes read or written; 0 at end of input; -1 would block; -2 on error.
long pull_read(int fd, char* buffer, size_t size);
long pull_write(int fd, const char* buffer, size_t size);
void pull_close(int fd);
// No more output (the answer is whole): the client sees its end, while what it still sends is read
// and dropped before the close (closing with unread input resets the connection, and the client
// may lose the answer).
void pull_shutdown_write(int fd);
// A UNIX socket's file, removed as the server stops (nothing for the others).
void remove_pull_socket_file(const PullAddress& address);
// Wakes a pull_wait() on the listener for good (the server stops).
void pull_shutdown(const PullListener& listener);

// Waits until the listener or a connection is ready, or `timeout_ms` (-1: no limit). `fds[i]`
// wants reading when `write[i]` is false; ready[i] is set for those that are.
struct PullWaitItem {
  int fd = -1;
  bool write = false;
  bool ready = false;
};
void pull_wait(PullWaitItem* items, size_t count, int timeout_ms);

}  // namespace inprof::internal

#endif  // INPROF_LIB_PULL_PULL_SOCKET_H_
