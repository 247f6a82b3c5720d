#include "lifeboat_dock.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "lifeboat_landing.h"

namespace inprof::launcher {
namespace {

uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

int open_pidfd(pid_t pid) {
#if defined(SYS_pidfd_open)
  return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  errno = ENOSYS;
  return -1;
#endif
}

}  // namespace

struct Boat {
  uint64_t pid = 0;
  int memory_fd = -1;
  int pidfd = -1;  // readable once the process is gone; -1: unknown (checked at finish)
  const uint8_t* memory = nullptr;
  size_t size = 0;
};

struct LifeboatDock::State {
  int listener = -1;
  int wake[2] = {-1, -1};  // finish() writes a byte: the thread stops
  std::thread thread;
  std::vector<Boat> boats;
  // Accepted, their boat not yet sent: a process may be preempted between its connect and its
  // send, so a connection is read only once it is readable (or at finish(), when it is closed).
  std::vector<int> connections;

  void run();
  void accept_all();
  void take(int connection);
  void land(Boat& boat, uint64_t end_ns);
  void sink(Boat& boat);
  bool gone(const Boat& boat) const;
};

void LifeboatDock::State::sink(Boat& boat) {
  if (boat.memory) munmap(const_cast<uint8_t*>(boat.memory), boat.size);
  if (boat.memory_fd >= 0) close(boat.memory_fd);
  if (boat.pidfd >= 0) close(boat.pidfd);
  boat = Boat{};
}

void LifeboatDock::State::land(Boat& boat, uint64_t end_ns) {
  const Landing landing = land_lifeboat({boat.memory, boat.size}, end_ns);
  if (!landing.landed && !landing.finished) {
    std::fprintf(stderr, "inprof: could not finish the dump of process %llu%s%s: %s\n",
                 static_cast<unsigned long long>(boat.pid), landing.dump_path.empty() ? "" : " ",
                 landing.dump_path.c_str(), landing.error.c_str());
  }
  sink(boat);
}

bool LifeboatDock::State::gone(const Boat& boat) const {
  if (boat.pidfd >= 0) {
    pollfd p = {boat.pidfd, POLLIN, 0};
    return poll(&p, 1, 0) == 1;
  }
  return kill(static_cast<pid_t>(boat.pid), 0) != 0 && errno == ESRCH;
}

void LifeboatDock::State::take(int connection) {
  char byte = 0;
  iovec iov = {&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr message = {};
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof(control);
  ucred peer = {};
  socklen_t peer_size = sizeof(peer);
  const ssize_t n = recvmsg(connection, &message, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  const bool ours = getsockopt(connection, SOL_SOCKET, SO_PEERCRED, &peer, &peer_size) == 0 &&
                    peer.uid == getuid();
  close(connection);
  int fd = -1;
  for (cmsghdr* c = CMSG_FIRSTHDR(&message); c; c = CMSG_NXTHDR(&message, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      std::memcpy(&fd, CMSG_DATA(c), sizeof(int));
    }
  }
  struct stat st;
  if (n != 1 || !ours || fd < 0 || fstat(fd, &st) != 0 || st.st_size <= 0) {
    if (fd >= 0) close(fd);
    return;
  }
  Boat boat;
  boat.memory_fd = fd;
  boat.size = static_cast<size_t>(st.st_size);
  void* memory = mmap(nullptr, boat.size, PROT_READ, MAP_SHARED, fd, 0);
  if (memory == MAP_FAILED) {
    close(fd);
    return;
  }
  boat.memory = static_cast<const uint8_t*>(memory);
  boat.pid = lifeboat_pid({boat.memory, boat.size});
  if (boat.pid == 0 || boat.pid != static_cast<uint64_t>(peer.pid)) {
    sink(boat);
    return;
  }
  // A new boat from a process that already had one: the earlier image is gone (execve), and with
  // it whatever it had not written.
  for (Boat& earlier : boats) {
    if (earlier.memory && earlier.pid == boat.pid) land(earlier, monotonic_ns());
  }
  boat.pidfd = open_pidfd(static_cast<pid_t>(boat.pid));
  boats.push_back(boat);
}

void LifeboatDock::State::accept_all() {
  for (;;) {
    const int connection = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (connection < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;
    }
    connections.push_back(connection);
  }
}

void LifeboatDock::State::run() {
  for (;;) {
    std::vector<pollfd> watched = {{wake[0], POLLIN, 0}, {listener, POLLIN, 0}};
    for (int c : connections) watched.push_back({c, POLLIN, 0});
    std::vector<size_t> which;
    for (size_t i = 0; i < boats.size(); ++i) {
      if (boats[i].memory && boats[i].pidfd >= 0) {
        watched.push_back({boats[i].pidfd, POLLIN, 0});
        which.push_back(i);
      }
    }
    if (poll(watched.data(), watched.size(), -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (watched[0].revents) return;
    const size_t first_boat = 2 + connections.size();
    std::vector<int> waiting;
    for (size_t k = 0; k < connections.size(); ++k) {
      if (watched[2 + k].revents) {
        take(connections[k]);  // closes it
      } else {
        waiting.push_back(connections[k]);
      }
    }
    connections = std::move(waiting);
    if (watched[1].revents) accept_all();
    for (size_t k = 0; k < which.size(); ++k) {
      if (watched[first_boat + k].revents && boats[which[k]].memory) {
        land(boats[which[k]], monotonic_ns());
      }
    }
    std::erase_if(boats, [](const Boat& b) { return b.memory == nullptr; });
  }
}

std::unique_ptr<LifeboatDock> LifeboatDock::open() {
  auto state = std::make_unique<State>();
  state->listener = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (state->listener < 0 || pipe2(state->wake, O_CLOEXEC) != 0) return nullptr;
  char name[64];
  std::snprintf(name, sizeof(name), "inprof-lifeboat-%d-%llx", static_cast<int>(getpid()),
                static_cast<unsigned long long>(monotonic_ns()));
  sockaddr_un address = {};
  address.sun_family = AF_UNIX;
  const size_t length = std::strlen(name);
  std::memcpy(address.sun_path + 1, name, length);
  if (bind(state->listener, reinterpret_cast<const sockaddr*>(&address),
           static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + length)) != 0 ||
      listen(state->listener, 128) != 0) {
    close(state->listener);
    close(state->wake[0]);
    close(state->wake[1]);
    return nullptr;
  }
  setenv("INPROF_LIFEBOAT", name, 1);
  // Signals stay the main thread's (it passes them on to the program).
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  State* raw = state.get();
  state->thread = std::thread([raw] { raw->run(); });
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return std::unique_ptr<LifeboatDock>(new LifeboatDock(std::move(state)));
}

LifeboatDock::LifeboatDock(std::unique_ptr<State> state) : state_(std::move(state)) {}

void LifeboatDock::finish() {
  if (!state_->thread.joinable()) return;
  const char stop = 's';
  (void)!write(state_->wake[1], &stop, 1);
  state_->thread.join();
  state_->accept_all();
  // Every process that could send is gone: what was sent is there to read.
  for (int c : state_->connections) state_->take(c);
  state_->connections.clear();
  const uint64_t now = monotonic_ns();
  for (Boat& boat : state_->boats) {
    if (!boat.memory) continue;
    if (lifeboat_finished({boat.memory, boat.size}) || state_->gone(boat)) {
      state_->land(boat, now);
    } else {
      state_->sink(boat);  // still running: its session may yet finish the dump itself
    }
  }
  state_->boats.clear();
  unsetenv("INPROF_LIFEBOAT");
}

LifeboatDock::~LifeboatDock() {
  finish();
  if (state_->listener >= 0) close(state_->listener);
  close(state_->wake[0]);
  close(state_->wake[1]);
}

}  // namespace inprof::launcher
