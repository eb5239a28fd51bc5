// A bare socket to a Server, for tests that must send what rpc::Client never
// would (garbage, frames out of order) and read exactly what comes back.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "rpc/address.h"
#include "rpc/codec.h"
#include "rpc/frame_reader.h"

namespace moonseed::rpc::testing {

class RawPeer {
 public:
  // Fails the test when it cannot connect. `source`: the IPv4 address a TCP
  // connection comes from ("": the system's choice; any of 127/8 works).
  explicit RawPeer(const Address& address, const std::string& source = "");
  ~RawPeer();
  RawPeer(const RawPeer&) = delete;
  RawPeer& operator=(const RawPeer&) = delete;

  void write(const std::vector<uint8_t>& bytes);
  // The next decoded message, or nullopt when the stream ends, turns bad or
  // 10 s pass.
  std::optional<Message> read_message();
  // True when the server ended the stream (EOF or reset) within 10 s; frames
  // arriving before the end are skipped.
  bool wait_closed();

 private:
  // Reads once; returns false on EOF, error or timeout.
  bool fill();

  int fd_ = -1;
  FrameReader reader_{FrameLimits{}};
};

}  // namespace moonseed::rpc::testing
