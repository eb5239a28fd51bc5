#include "rpc/control_socket.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "rpc/unix_socket.h"

namespace moonseed::rpc {
namespace {

using std::chrono::milliseconds;

std::string temp_path(const std::string& name) {
  char dir[] = "/tmp/moonseed-control-XXXXXX";
  if (::mkdtemp(dir) == nullptr) throw std::runtime_error("mkdtemp");
  return std::string(dir) + "/" + name;
}

// A raw connection whose reads give up after 5 s, so a missing reply fails the test.
int raw_connection(const std::string& path) {
  const int fd = connect_unix(path);
  timeval five{5, 0};
  if (fd >= 0) ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &five, sizeof five);
  return fd;
}

// A server whose owner thread polls it, answering "echo: LINE" (and counting requests).
class ServedControl {
 public:
  explicit ServedControl(const std::string& path) : server_(path) {
    thread_ = std::thread([this] {
      while (!stop_) {
        std::vector<pollfd> fds;
        server_.add_poll_fds(fds);
        if (::poll(fds.data(), fds.size(), 20) > 0) {
          server_.serve(fds, [this](const std::string& line) {
            ++requests_;
            return "{\"echo\": \"" + line + "\"}";
          });
        }
      }
    });
  }
  ~ServedControl() {
    stop_ = true;
    thread_.join();
  }
  int requests() const { return requests_; }

 private:
  ControlServer server_;
  std::atomic<bool> stop_{false};
  std::atomic<int> requests_{0};
  std::thread thread_;
};

TEST(ControlSocket, RepliesToEachRequestLineInOrder) {
  const std::string path = temp_path("control.sock");
  ServedControl served(path);
  ControlClient client(path);
  EXPECT_EQ(client.request("status", milliseconds(5000)), "{\"echo\": \"status\"}");
  EXPECT_EQ(client.request("set optimizer.lr 3e-4", milliseconds(5000)),
            "{\"echo\": \"set optimizer.lr 3e-4\"}");
}

TEST(ControlSocket, ServesSeveralClientsAtOnce) {
  const std::string path = temp_path("control.sock");
  ServedControl served(path);
  ControlClient a(path);
  ControlClient b(path);
  EXPECT_EQ(b.request("from b", milliseconds(5000)), "{\"echo\": \"from b\"}");
  EXPECT_EQ(a.request("from a", milliseconds(5000)), "{\"echo\": \"from a\"}");
}

TEST(ControlSocket, RequestsPipelinedInOneWriteAreAllAnswered) {
  const std::string path = temp_path("control.sock");
  ServedControl served(path);
  const int fd = raw_connection(path);
  ASSERT_GE(fd, 0);
  const std::string two = "one\r\ntwo\n";
  ASSERT_EQ(::send(fd, two.data(), two.size(), 0), static_cast<ssize_t>(two.size()));
  std::string got;
  char buf[256];
  while (got.size() < 32) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    ASSERT_GT(n, 0);
    got.append(buf, static_cast<size_t>(n));
  }
  EXPECT_EQ(got, "{\"echo\": \"one\"}\n{\"echo\": \"two\"}\n");
  ::close(fd);
}

TEST(ControlSocket, AnOverlongLineClosesOnlyThatClient) {
  const std::string path = temp_path("control.sock");
  ServedControl served(path);
  ControlClient good(path);
  const int fd = raw_connection(path);
  ASSERT_GE(fd, 0);
  const std::string junk(kMaxControlLine + 10, 'x');
  ASSERT_EQ(::send(fd, junk.data(), junk.size(), MSG_NOSIGNAL), static_cast<ssize_t>(junk.size()));
  std::string got;
  char buf[4096];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) got.append(buf, static_cast<size_t>(n));
  EXPECT_EQ(n, 0);  // closed by the server
  EXPECT_NE(got.find("longer than"), std::string::npos) << got;
  ::close(fd);
  EXPECT_EQ(good.request("still here", milliseconds(5000)), "{\"echo\": \"still here\"}");
}

// A client that sends requests and never reads the replies grew the run by hundreds of MiB:
// the server stops reading it once kMaxControlReplies bytes of replies wait, so the client's
// own sends block; once it reads, every request it sent is answered, in order.
TEST(ControlSocket, AClientThatDoesNotReadItsRepliesIsHeldToABound) {
  const std::string path = temp_path("control.sock");
  ServedControl served(path);
  const int fd = raw_connection(path);
  ASSERT_GE(fd, 0);
  const std::string line = std::string(1000, 'r') + "\n";
  const size_t reply = std::string("{\"echo\": \"\"}\n").size() + 1000;
  size_t sent = 0;  // whole lines
  size_t partial = 0;  // bytes of the next line already sent
  int stuck = 0;
  while (sent < 64 * 1024 && stuck < 100) {  // up to 64 MiB of requests; 2 s without progress ends it
    const ssize_t n = ::send(fd, line.data() + partial, line.size() - partial, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      partial += static_cast<size_t>(n);
      if (partial == line.size()) {
        ++sent;
        partial = 0;
      }
      stuck = 0;
      continue;
    }
    ASSERT_TRUE(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) << std::strerror(errno);
    ++stuck;
    std::this_thread::sleep_for(milliseconds(20));
  }
  // The server stopped reading long before 64 MiB, and holds about a bound's worth of replies
  // (plus what the two sockets' buffers hold).
  EXPECT_LT(sent, 16u * 1024) << "the server kept reading a client that reads nothing";
  EXPECT_LE(static_cast<size_t>(served.requests()) * reply, kMaxControlReplies + 4 * 1024 * 1024);
  // Reading now, every whole line it sent is answered (a line cut short by the full socket is not
  // a request yet).
  const size_t expected = sent;
  size_t replies = 0;
  char buf[65536];
  while (replies < expected) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    ASSERT_GT(n, 0) << replies << " of " << expected << " replies";
    for (ssize_t i = 0; i < n; ++i) replies += buf[i] == '\n';
  }
  EXPECT_EQ(replies, expected);
  ::close(fd);
}

TEST(ControlSocket, ClientsBeyondTheBoundAreToldSoAndClosedWhileTheOthersAreServed) {
  const std::string path = temp_path("control.sock");
  ServedControl served(path);
  std::vector<ControlClient> clients;
  for (size_t i = 0; i < kMaxControlClients; ++i) {
    clients.emplace_back(path);
    // Answered: the server has taken this client before the next connects.
    ASSERT_EQ(clients.back().request("hi", milliseconds(5000)), "{\"echo\": \"hi\"}");
  }
  const int fd = raw_connection(path);
  ASSERT_GE(fd, 0);
  std::string got;
  char buf[512];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) got.append(buf, static_cast<size_t>(n));
  EXPECT_EQ(n, 0);  // closed by the server
  EXPECT_NE(got.find("control clients are connected already"), std::string::npos) << got;
  ::close(fd);
  EXPECT_EQ(clients.front().request("still", milliseconds(5000)), "{\"echo\": \"still\"}");
}

TEST(ControlSocket, TheSocketIsPrivateToItsOwner) {
  const std::string path = temp_path("control.sock");
  ServedControl served(path);
  struct stat st {};
  ASSERT_EQ(::lstat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(ControlSocket, AStaleSocketIsReplacedAndALiveOneIsNot) {
  const std::string path = temp_path("control.sock");
  { ControlServer first(path); }  // removed on destruction
  EXPECT_FALSE(std::filesystem::exists(path));
  // A socket file left by a process that died (bound, never accepting).
  const int stale = listen_unix_private(path);
  ::close(stale);
  ASSERT_TRUE(std::filesystem::exists(path));
  ServedControl served(path);
  ControlClient client(path);
  EXPECT_EQ(client.request("hi", milliseconds(5000)), "{\"echo\": \"hi\"}");
  EXPECT_THROW(ControlServer second(path), std::system_error);
}

TEST(ControlSocket, AClientOfNoRunSaysSo) {
  const std::string path = temp_path("control.sock");
  try {
    ControlClient client(path);
    FAIL() << "connected to nothing";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

TEST(ControlSocket, ARequestThatGetsNoReplyTimesOut) {
  const std::string path = temp_path("control.sock");
  ControlServer silent(path);  // never served
  ControlClient client(path);
  EXPECT_THROW(client.request("status", milliseconds(100)), std::runtime_error);
}

}  // namespace
}  // namespace moonseed::rpc
