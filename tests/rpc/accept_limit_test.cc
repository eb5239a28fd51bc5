// accept() out of descriptors: the server must neither spin nor flood its
// log, and must serve again once descriptors are free. The server runs in a
// child process (tests/rpc/accept_limit_server.cc) with a low RLIMIT_NOFILE.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "rpc/client.h"
#include "tests/rpc/raw_peer.h"
#include "tests/rpc/sample_messages.h"

extern char** environ;

namespace moonseed::rpc {
namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(AcceptLimit, OutOfDescriptorsTheServerBacksOffLogsOnceAndRecovers) {
  const std::string log_path =
      (std::filesystem::temp_directory_path() / ("moonseed-accept-" + std::to_string(::getpid()) + ".log")).string();
  int to_child[2], from_child[2];
  ASSERT_EQ(::pipe(to_child), 0);
  ASSERT_EQ(::pipe(from_child), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, to_child[0], 0);
  posix_spawn_file_actions_adddup2(&actions, from_child[1], 1);
  posix_spawn_file_actions_addopen(&actions, 2, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addclose(&actions, to_child[1]);
  posix_spawn_file_actions_addclose(&actions, from_child[0]);
  char* argv[] = {const_cast<char*>(MOONSEED_ACCEPT_LIMIT_SERVER), nullptr};
  pid_t pid = -1;
  ASSERT_EQ(posix_spawn(&pid, argv[0], &actions, nullptr, argv, environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  ::close(to_child[0]);
  ::close(from_child[1]);
  FILE* out = ::fdopen(from_child[0], "r");
  int port = 0;
  ASSERT_EQ(std::fscanf(out, "port %d", &port), 1) << read_all(log_path);

  Address address;
  address.kind = Address::Kind::kTcp;
  address.host = "127.0.0.1";
  address.port = static_cast<uint16_t>(port);
  {
    // Two are accepted; the rest wait in the backlog while accept() fails.
    std::vector<std::unique_ptr<testing::RawPeer>> peers;
    for (int i = 0; i < 10; ++i) peers.push_back(std::make_unique<testing::RawPeer>(address));
    bool failed = false;
    for (int i = 0; i < 1000 && !failed; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      failed = read_all(log_path).find("accept on tcp failed") != std::string::npos;
    }
    ASSERT_TRUE(failed) << read_all(log_path);
    // Long enough for a spinning loop to fail a great many times.
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  }  // every peer closes: the server's descriptors come free

  // Served again: a whole handshake (the backoff is at most 1 s).
  Client client = Client::connect(address, std::chrono::seconds(10));
  EXPECT_GE(client.hello(testing::sample_hello(), std::chrono::seconds(10)).actor_id, 0);
  client.close();

  ::close(to_child[1]);  // the server stops
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  std::fclose(out);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  const std::string log = read_all(log_path);
  std::filesystem::remove(log_path);
  EXPECT_EQ(count(log, "accept on tcp failed: Too many open files"), 1u) << log.substr(0, 2000);
  EXPECT_EQ(count(log, "accept on tcp works again after"), 1u) << log.substr(0, 2000);
}

}  // namespace
}  // namespace moonseed::rpc
