// Where one rank of a learner group is and how it meets the others
// (docs/distributed-design.md), as plain values: no LibTorch.
#pragma once

#include <cstdint>
#include <string>

namespace moonseed::engine {

struct GroupOptions {
  int rank = 0;
  int world_size = 1;
  // "tcp:HOST:PORT": rank 0 serves c10d's TCPStore on PORT, the others connect
  // to HOST:PORT. "file:PATH": a c10d FileStore at PATH (ranks on one host).
  std::string rendezvous;
  // The address this rank's Gloo connections bind to and the others reach it
  // at. "" = 127.0.0.1 for a file or loopback rendezvous, else the address
  // this host reaches the rendezvous host from (local_address_towards), which
  // is on the network the ranks share.
  std::string bind_host;
  double timeout_s = 60;     // a collective, a store call or a heartbeat silent this long fails the group
  int64_t check_every = 100;  // optimizer steps between weight comparisons; 0 = never
  std::string device = "cpu";  // the weights' device: "cuda" uses NCCL where LibTorch has it
  int64_t pid = 0;             // this process (messages name it); 0 = getpid()
};

// The rendezvous's parts. Throws std::invalid_argument for text that is
// neither tcp:HOST:PORT (port 1..65535) nor file:PATH.
struct Rendezvous {
  bool tcp = false;
  std::string host;  // tcp
  int port = 0;      // tcp
  std::string path;  // file
};
Rendezvous parse_rendezvous(const std::string& text);

// The local address the kernel would send from to reach HOST:PORT (a UDP
// socket connected there: nothing is sent), or "" when HOST does not resolve
// or has no route.
std::string local_address_towards(const std::string& host, int port);

// True for a loopback host (127.0.0.0/8, ::1, localhost): only this host can
// reach a store served there.
bool loopback_host(const std::string& host);

}  // namespace moonseed::engine
