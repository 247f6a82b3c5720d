// symbolicate --open: the profile is served on 127.0.0.1 under a random path with the CORS
// header the Firefox Profiler needs; other paths get 404; SIGINT stops the server cleanly.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "serve/profile_server.h"
#include "test_support.h"
#include "test_targets.h"

namespace {

using namespace inprof::internal;

std::string percent_decode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// One HTTP request to 127.0.0.1:port; the whole response (head and body).
std::string http(int port, const std::string& request) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a = {};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return "connect failed";
  }
  send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string response;
  char buffer[65536];
  for (;;) {
    pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 10000) <= 0) break;
    ssize_t n = recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    response.append(buffer, size_t(n));
  }
  close(fd);
  return response;
}

// The first line the server prints on `fd` (the profiler's address), waiting up to a minute.
std::string first_line(int fd) {
  std::string line;
  char c;
  while (line.find('\n') == std::string::npos) {
    pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 60000) <= 0 || read(fd, &c, 1) != 1) break;
    line += c;
  }
  return line;
}

using symtest::read_file;

TEST(ProfileServer, ProfilerUrlEncodesTheProfileAddress) {
  EXPECT_EQ(inprof::symbolicate::profiler_url_for("http://127.0.0.1:8000/abc/profile.json"),
            "https://profiler.firefox.com/from-url/"
            "http%3A%2F%2F127.0.0.1%3A8000%2Fabc%2Fprofile.json/");
  EXPECT_EQ(
      inprof::symbolicate::profiler_url_for("http://127.0.0.1:8000/abc/profile.json",
                                            "http://localhost:4242", "http://127.0.0.1:8000/abc"),
      "http://localhost:4242/from-url/"
      "http%3A%2F%2F127.0.0.1%3A8000%2Fabc%2Fprofile.json/"
      "?symbolServer=http%3A%2F%2F127.0.0.1%3A8000%2Fabc");
}

TEST(ProfileServer, ServesTheProfileOnlyUnderItsTokenAndStopsOnSigint) {
  symtest::TempDir dir;
  {
    symtest::DumpFile d(dir.path("d.inprof"));
    d.process(symtest::test_process());
    d.module(symtest::self_module());
    d.thread_start(1, 0, "main", kThreadMain);
    d.sample(1, 1'000'000, {reinterpret_cast<uintptr_t>(&symtest::leaf_function)});
    d.end(2'000'000);
    d.close();
  }
  std::string json = dir.path("p.json");
  int out_pipe[2];
  ASSERT_EQ(pipe(out_pipe), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    dup2(out_pipe[1], 1);
    int err = open(dir.path("stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(err, 2);
    close(out_pipe[0]);
    execl(SYMBOLICATE_BINARY, SYMBOLICATE_BINARY, dir.path("d.inprof").c_str(), "-o", json.c_str(),
          "--open", "--no-browser", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out_pipe[1]);
  // The first line on stdout is the profiler's address.
  std::string line = first_line(out_pipe[0]);
  close(out_pipe[0]);
  const std::string prefix = "https://profiler.firefox.com/from-url/";
  ASSERT_EQ(line.rfind(prefix, 0), 0u) << line << read_file(dir.path("stderr"));
  // .../from-url/<profile url>/?symbolServer=<the same server, its prefix without profile.json>
  const size_t query = line.find("/?symbolServer=");
  ASSERT_NE(query, std::string::npos) << line;
  std::string url = percent_decode(line.substr(prefix.size(), query - prefix.size()));
  std::string symbol_server = percent_decode(line.substr(query + 15, line.size() - query - 15 - 1));
  EXPECT_EQ(symbol_server + "/profile.json", url);
  // http://127.0.0.1:PORT/TOKEN/profile.json
  ASSERT_EQ(url.rfind("http://127.0.0.1:", 0), 0u) << url;
  size_t slash = url.find('/', 17);
  int port = std::stoi(url.substr(17, slash - 17));
  std::string path = url.substr(slash);
  EXPECT_EQ(path.size(), std::string("/").size() + 32 + std::string("/profile.json").size());

  std::string ok = http(port, "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  EXPECT_EQ(ok.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << ok.substr(0, 300);
  EXPECT_NE(ok.find("\r\nAccess-Control-Allow-Origin: https://profiler.firefox.com\r\n"),
            std::string::npos);
  size_t body = ok.find("\r\n\r\n");
  ASSERT_NE(body, std::string::npos);
  EXPECT_EQ(ok.substr(body + 4), read_file(json));

  std::string wrong = http(port, "GET /profile.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  EXPECT_EQ(wrong.rfind("HTTP/1.1 404 ", 0), 0u) << wrong;
  std::string guessed = path;
  guessed[1] = guessed[1] == 'a' ? 'b' : 'a';
  EXPECT_EQ(http(port, "GET " + guessed + " HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 404 ", 0), 0u);
  std::string preflight = http(port, "OPTIONS " + path + " HTTP/1.1\r\n\r\n");
  EXPECT_EQ(preflight.rfind("HTTP/1.1 204 ", 0), 0u) << preflight;
  EXPECT_NE(preflight.find("POST"), std::string::npos) << preflight;

  // The symbol server's API under the same prefix: POST with a JSON body.
  const std::string api = path.substr(0, path.size() - std::string("profile.json").size());
  auto post = [&](const std::string& target, const std::string& body) {
    return http(port, "POST " + target +
                          " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                          "application/json\r\nContent-Length: " +
                          std::to_string(body.size()) + "\r\n\r\n" + body);
  };
  std::string v5 = post(api + "symbolicate/v5", R"({"jobs":[{"memoryMap":[],"stacks":[[]]}]})");
  EXPECT_EQ(v5.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << v5;
  EXPECT_NE(v5.find("\r\nAccess-Control-Allow-Origin: https://profiler.firefox.com\r\n"),
            std::string::npos);
  EXPECT_NE(v5.find(R"({"results":[{"stacks":[[]],"found_modules":{}}]})"), std::string::npos)
      << v5;
  std::string refused = post(api + "source/v1", R"({"debugName":"a","debugId":"b",)"
                                                R"("moduleOffset":"0x0","file":"/etc/passwd"})");
  EXPECT_EQ(refused.rfind("HTTP/1.1 404 ", 0), 0u) << refused;
  EXPECT_EQ(refused.find("root:"), std::string::npos);
  EXPECT_EQ(post(api + "nosuch/v1", "{}").rfind("HTTP/1.1 404 ", 0), 0u);
  EXPECT_EQ(http(port, "GET " + api + "symbolicate/v5 HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 405 ", 0),
            0u);
  EXPECT_EQ(post("/" + std::string(32, 'a') + "/symbolicate/v5", "{}").rfind("HTTP/1.1 404 ", 0),
            0u);

  ASSERT_EQ(kill(pid, SIGINT), 0);
  int status = 0;
  pid_t done = 0;
  for (int i = 0; i < 600 && done == 0; ++i) {  // up to 60 s on a loaded machine
    done = waitpid(pid, &status, WNOHANG);
    if (done == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (done == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    FAIL() << "the server did not stop on SIGINT";
  }
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_NE(read_file(dir.path("stderr")).find("stopped serving"), std::string::npos);
}

// symbolicate backs malloc's heap with huge pages from within (huge_page_heap.h), without
// starting itself again with glibc's tunable: the running server's /proc/PID/environ (the
// environment it was started with) is the caller's, and its /proc/PID/smaps shows the heap
// advised (VmFlags "hg").
TEST(ProfileServer, AdvisesItsHeapForHugePagesWithoutARestart) {
#if defined(__SANITIZE_ADDRESS__) || defined(INPROF_ASAN) || defined(__SANITIZE_THREAD__) || \
    defined(INPROF_TSAN)
  GTEST_SKIP() << "a sanitizer's allocator replaces glibc's: no heap is advised";
#endif
  std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string mode;
  std::getline(thp, mode);
  if (!thp || mode.find("[never]") != std::string::npos) {
    GTEST_SKIP() << "transparent huge pages are off: symbolicate gives no advice";
  }
  symtest::TempDir dir;
  {
    symtest::DumpFile d(dir.path("d.inprof"));
    d.process(symtest::test_process());
    d.thread_start(1, 0, "main", kThreadMain);
    d.sample(1, 1'000'000, {0x1234});
    d.end(2'000'000);
    d.close();
  }
  // The environment and memory map of a server started with `tunables` (null: none), read once
  // it serves.
  auto environment_of_server = [&](const char* tunables) {
    int out_pipe[2];
    if (pipe(out_pipe) != 0) return std::string("pipe failed");
    pid_t pid = fork();
    if (pid == 0) {
      dup2(out_pipe[1], 1);
      close(out_pipe[0]);
      int null = open("/dev/null", O_WRONLY);
      dup2(null, 2);
      unsetenv("LD_PRELOAD");
      if (tunables)
        setenv("GLIBC_TUNABLES", tunables, 1);
      else
        unsetenv("GLIBC_TUNABLES");
      execl(SYMBOLICATE_BINARY, SYMBOLICATE_BINARY, dir.path("d.inprof").c_str(), "-o",
            dir.path("p.json").c_str(), "--open", "--no-browser", static_cast<char*>(nullptr));
      _exit(127);
    }
    close(out_pipe[1]);
    std::string line = first_line(out_pipe[0]);
    close(out_pipe[0]);
    std::string environ = read_file("/proc/" + std::to_string(pid) + "/environ");
    std::string smaps = read_file("/proc/" + std::to_string(pid) + "/smaps");
    kill(pid, SIGINT);
    int status = 0;
    for (int i = 0; i < 600 && waitpid(pid, &status, WNOHANG) == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    std::replace(environ.begin(), environ.end(), '\0', '\n');
    // Each [heap] mapping's VmFlags line, after the environment.
    std::string heap_flags;
    for (size_t at = smaps.find("[heap]"); at != std::string::npos;
         at = smaps.find("[heap]", at + 1)) {
      const size_t flags = smaps.find("VmFlags:", at);
      if (flags != std::string::npos) {
        heap_flags += "\nheap " + smaps.substr(flags, smaps.find('\n', flags) - flags);
      }
    }
    return line.empty() ? "no address printed" : "\n" + environ + heap_flags;
  };
  std::string plain = environment_of_server(nullptr);
  EXPECT_EQ(plain.find("GLIBC_TUNABLES"), std::string::npos) << plain;
  EXPECT_EQ(plain.find("INPROF_SYMBOLICATE_RESTARTED"), std::string::npos) << plain;
  const size_t heap = plain.find("\nheap VmFlags:");
  ASSERT_NE(heap, std::string::npos) << plain;
  EXPECT_NE(plain.find(" hg", heap), std::string::npos) << plain;
  // The user's own tunables are left as they were, passed on, and obeyed: no advice.
  std::string own = environment_of_server("glibc.malloc.hugetlb=0");
  EXPECT_NE(own.find("\nGLIBC_TUNABLES=glibc.malloc.hugetlb=0\n"), std::string::npos) << own;
  const size_t own_heap = own.find("\nheap VmFlags:");
  ASSERT_NE(own_heap, std::string::npos) << own;
  EXPECT_EQ(own.find(" hg", own_heap), std::string::npos) << own;
}

}  // namespace
