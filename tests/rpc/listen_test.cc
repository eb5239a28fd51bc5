// Server::listen on real Unix socket files and TCP ports.
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "rpc/client.h"
#include "rpc/server.h"
#include "tests/rpc/echo_service.h"
#include "tests/rpc/sample_messages.h"

namespace moonseed::rpc {
namespace {

namespace fs = std::filesystem;

class Listen : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "moonseed-listen-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    socket_path_ = dir_ + "/learner.sock";
  }
  void TearDown() override { fs::remove_all(dir_); }

  testing::EchoService service_;
  std::string dir_;
  std::string socket_path_;
};

// Leaves a socket file behind with nobody accepting on it, as a crashed learner would.
void make_stale_socket(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::strncpy(sa.sun_path, path.c_str(), sizeof sa.sun_path - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0) << std::strerror(errno);
  ::close(fd);
}

TEST_F(Listen, UnixSocketFileIsCreatedReadableAndWritableByItsOwnerOnly) {
  Server server(service_);
  server.listen("unix:" + socket_path_);
  struct stat st {};
  ASSERT_EQ(::stat(socket_path_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(Listen, StaleUnixSocketFileIsReplaced) {
  make_stale_socket(socket_path_);
  ASSERT_TRUE(fs::exists(socket_path_));
  Server server(service_);
  server.listen("unix:" + socket_path_);
  server.start();
  Client client = Client::connect("unix:" + socket_path_, std::chrono::seconds(10));
  EXPECT_EQ(client.hello(testing::sample_hello(), std::chrono::seconds(10)).actor_id, 100);
}

TEST_F(Listen, UnixPathWhereAnotherServerAcceptsIsRefusedAsInUse) {
  Server first(service_);
  first.listen("unix:" + socket_path_);
  Server second(service_);
  try {
    second.listen("unix:" + socket_path_);
    FAIL() << "second listen succeeded";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), std::errc::address_in_use);
    EXPECT_NE(std::string(e.what()).find(socket_path_), std::string::npos) << e.what();
  }
}

TEST_F(Listen, RegularFileAtTheSocketPathIsNeverRemoved) {
  std::ofstream(socket_path_) << "precious";
  Server server(service_);
  EXPECT_THROW(server.listen("unix:" + socket_path_), std::system_error);
  std::ifstream in(socket_path_);
  std::string content;
  in >> content;
  EXPECT_EQ(content, "precious");
}

TEST_F(Listen, StopRemovesTheUnixSocketFile) {
  Server server(service_);
  server.listen("unix:" + socket_path_);
  server.start();
  server.stop();
  EXPECT_FALSE(fs::exists(socket_path_));
}

TEST_F(Listen, TcpPortZeroReturnsThePortTheSystemChose) {
  Server server(service_);
  const Address bound = server.listen("tcp:127.0.0.1:0");
  server.start();
  EXPECT_EQ(bound.host, "127.0.0.1");
  ASSERT_NE(bound.port, 0);
  Client client = Client::connect(bound, std::chrono::seconds(10));
  EXPECT_EQ(client.hello(testing::sample_hello(), std::chrono::seconds(10)).actor_id, 100);
}

TEST_F(Listen, MalformedAddressTextIsRefusedBeforeAnySocketIsMade) {
  Server server(service_);
  EXPECT_THROW(server.listen("tcp:127.0.0.1"), std::invalid_argument);
}

TEST_F(Listen, ConnectingWhereNobodyListensFailsWithConnectionError) {
  EXPECT_THROW(Client::connect("unix:" + socket_path_, std::chrono::seconds(1)), ConnectionError);
}

}  // namespace
}  // namespace moonseed::rpc
