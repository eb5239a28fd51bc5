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
  // at: its own host name or address. "" = 127.0.0.1 for a file or loopback
  // rendezvous, else this host's name.
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

// True for a loopback host (127.0.0.0/8, ::1, localhost): only this host can
// reach a store served there.
bool loopback_host(const std::string& host);

}  // namespace moonseed::engine
