// TCP ports that nothing listens on now, for tests that must name a port before
// the process that serves it starts (c10d's TCPStore, a launch's --actor-port).
// Header-only.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace moonseed::testing {

// The first of `count` consecutive ports free on every interface (0.0.0.0), for
// ranks that listen on base + rank. Taken below the kernel's ephemeral range
// (32768 and up), where the outgoing connections of tests running beside this
// one never land, so base + 1 cannot be taken by some other test's client.
inline int free_port_run(int count) {
  std::random_device seed;
  std::mt19937 rng(seed());
  std::uniform_int_distribution<int> pick(20000, 32000 - count);
  for (int attempt = 0; attempt < 200; ++attempt) {
    const int base = pick(rng);
    std::vector<int> held;
    bool all = true;
    for (int p = base; p < base + count && all; ++p) {
      const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_ANY);
      a.sin_port = htons(static_cast<uint16_t>(p));
      if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
        held.push_back(fd);
      } else {
        ::close(fd);
        all = false;
      }
    }
    for (const int fd : held) ::close(fd);
    if (all) return base;
  }
  throw std::runtime_error("free_port_run: no " + std::to_string(count) + " consecutive free ports in 20000..32000");
}

// One port free on every interface, below the kernel's ephemeral range. Not the
// kernel's own choice for port 0: that comes from the ephemeral range, where
// another test's outgoing connection can take it before this test's server binds
// it (CI saw c10d's TCPStore and slurmctld fail so, "Address already in use").
inline int free_port() { return free_port_run(1); }

}  // namespace moonseed::testing
