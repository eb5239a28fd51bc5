// A Server on tcp:127.0.0.1:0 serving an EchoService in a process whose
// descriptor limit leaves room for two more connections: a test connects more
// and accept() fails with EMFILE. Prints "port N" once listening; runs until
// its standard input ends.
#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "rpc/server.h"
#include "tests/rpc/echo_service.h"

namespace {

int open_descriptors() {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  int count = 0;
  while (::readdir(dir) != nullptr) ++count;
  ::closedir(dir);
  return count - 3;  // ".", ".." and the directory's own
}

}  // namespace

int main() {
  using namespace moonseed::rpc;
  testing::EchoService service;
  ServerOptions options;
  options.hello_timeout = std::chrono::seconds(600);  // the accepted ones hold their descriptors
  options.log_interval = std::chrono::seconds(600);   // one line for the whole test
  Server server(service, options);
  const Address address = server.listen("tcp:127.0.0.1:0");
  server.start();
  const int open = open_descriptors();
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = static_cast<rlim_t>(open + 2);
  if (open < 0 || ::setrlimit(RLIMIT_NOFILE, &limit) != 0) {
    std::perror("setrlimit");
    return 1;
  }
  std::printf("port %d\n", address.port);
  std::fflush(stdout);
  char byte;
  while (::read(0, &byte, 1) > 0) {
  }
  server.stop();
  return 0;
}
