// Threads that each wait the whole run in one known way (issue 43): a contended global mutex, a
// condition variable, a socket read, a pipe read, nanosleep, epoll_wait, and a mutex inside a
// block make_heap_lock() allocated (named by that function when allocations are recorded). Each
// names itself after its wait; the program prints what each waits on ("socket fd 5", ...) and how
// long the waits lasted, for check_waits.py to compare with the profile.
//   waits_target [seconds=2]
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

pthread_mutex_t g_contended_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t cond_mutex = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t g_never_signalled = PTHREAD_COND_INITIALIZER;
// A lock in the heap, 40 bytes into its block.
struct heap_lock {
  char before[40];
  pthread_mutex_t mutex;
};
static struct heap_lock* heap_lock;
static int done;
static int sockets[2], pipe_fds[2], epoll_fd;
static double seconds = 2;

__attribute__((noinline)) struct heap_lock* make_heap_lock(void) {
  struct heap_lock* lock = malloc(sizeof *lock);
  if (lock) pthread_mutex_init(&lock->mutex, NULL);
  return lock;
}

static void* on_heap_lock(void* arg) {
  pthread_setname_np(pthread_self(), "wait-heap-lock");
  pthread_mutex_lock(&heap_lock->mutex);  // held by main until the end
  pthread_mutex_unlock(&heap_lock->mutex);
  return arg;
}

static void* on_mutex(void* arg) {
  pthread_setname_np(pthread_self(), "wait-mutex");
  pthread_mutex_lock(&g_contended_mutex);  // held by main until the end
  pthread_mutex_unlock(&g_contended_mutex);
  return arg;
}

static void* on_condvar(void* arg) {
  pthread_setname_np(pthread_self(), "wait-condvar");
  pthread_mutex_lock(&cond_mutex);
  while (!done) pthread_cond_wait(&g_never_signalled, &cond_mutex);
  pthread_mutex_unlock(&cond_mutex);
  return arg;
}

static void* on_socket(void* arg) {
  pthread_setname_np(pthread_self(), "wait-socket");
  char byte;
  (void)!recv(sockets[1], &byte, 1, 0);
  return arg;
}

static void* on_pipe(void* arg) {
  pthread_setname_np(pthread_self(), "wait-pipe");
  char byte;
  (void)!read(pipe_fds[0], &byte, 1);
  return arg;
}

static void* on_sleep(void* arg) {
  pthread_setname_np(pthread_self(), "wait-sleep");
  struct timespec ts = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};
  nanosleep(&ts, NULL);
  return arg;
}

static void* on_epoll(void* arg) {
  pthread_setname_np(pthread_self(), "wait-epoll");
  struct epoll_event event;
  (void)!epoll_wait(epoll_fd, &event, 1, -1);
  return arg;
}

int main(int argc, char** argv) {
  if (argc > 1) seconds = atof(argv[1]);
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sockets) != 0 || pipe(pipe_fds) != 0) return 1;
  epoll_fd = epoll_create1(0);
  struct epoll_event event = {.events = EPOLLIN, .data.fd = pipe_fds[0]};
  int epoll_pipe[2];
  if (epoll_fd < 0 || pipe(epoll_pipe) != 0) return 1;
  event.data.fd = epoll_pipe[0];
  if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, epoll_pipe[0], &event) != 0) return 1;
  heap_lock = make_heap_lock();
  if (!heap_lock) return 1;
  pthread_mutex_lock(&g_contended_mutex);
  pthread_mutex_lock(&heap_lock->mutex);
  void* (*bodies[])(void*) = {on_mutex, on_condvar, on_socket,   on_pipe,
                              on_sleep, on_epoll,   on_heap_lock};
  enum { kThreads = sizeof bodies / sizeof bodies[0] };
  pthread_t threads[kThreads];
  struct timespec start, end;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (int i = 0; i < kThreads; i++) pthread_create(&threads[i], NULL, bodies[i], NULL);
  printf("mutex 0x%jx\n", (uintmax_t)(uintptr_t)&g_contended_mutex);
  printf("condvar 0x%jx 0x%jx\n", (uintmax_t)(uintptr_t)&g_never_signalled,
         (uintmax_t)(uintptr_t)(&g_never_signalled + 1));
  printf("socket fd %d\npipe fd %d\nepoll fd %d\n", sockets[1], pipe_fds[0], epoll_fd);
  fflush(stdout);
  struct timespec ts = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};
  nanosleep(&ts, NULL);
  // Every wait ends: the lock released, the condition broadcast, a byte on each descriptor.
  pthread_mutex_unlock(&g_contended_mutex);
  pthread_mutex_unlock(&heap_lock->mutex);
  pthread_mutex_lock(&cond_mutex);
  done = 1;
  pthread_cond_broadcast(&g_never_signalled);
  pthread_mutex_unlock(&cond_mutex);
  (void)!write(sockets[0], "x", 1);
  (void)!write(pipe_fds[1], "x", 1);
  (void)!write(epoll_pipe[1], "x", 1);
  for (int i = 0; i < kThreads; i++) pthread_join(threads[i], NULL);
  clock_gettime(CLOCK_MONOTONIC, &end);
  free(heap_lock);
  printf("waited %.1f ms\n",
         (end.tv_sec - start.tv_sec) * 1e3 + (end.tv_nsec - start.tv_nsec) / 1e6);
  return 0;
}
