#include "rpc/control_socket.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

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
