// Learner addresses as written on command lines and in scripts:
//   unix:/path/to/learner.sock
//   tcp:HOST:PORT   HOST = IPv4 literal, [IPv6 literal] or a host name; PORT 0..65535
//                   (0 = any free port, for listening).
//
// Parsing is pure (no name resolution): a host name is checked for its
// characters only. Failure is an expected outcome for user input: it comes
// back as std::nullopt plus a message that quotes the text and says what was
// expected. require_address() is for text the program wrote itself and throws
// std::invalid_argument with the same message.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace moonseed::rpc {

struct Address {
  enum class Kind { kUnix, kTcp };
  Kind kind = Kind::kUnix;
  std::string path;  // kUnix: filesystem path of the socket
  std::string host;  // kTcp: without brackets, e.g. "::1", "127.0.0.1", "learner.lan"
  uint16_t port = 0;

  // The canonical text form, which parse_address() reads back unchanged.
  std::string to_string() const;
  bool operator==(const Address& o) const;
  bool operator!=(const Address& o) const { return !(*this == o); }
};

std::optional<Address> parse_address(std::string_view text, std::string* error = nullptr);

Address require_address(std::string_view text);

// True when only this host can connect to `address`: a Unix socket, or TCP on
// a loopback address (127.0.0.0/8, ::1, "localhost"). A host name other than
// localhost counts as reachable from elsewhere: it may resolve to anything.
bool only_this_host(const Address& address);

}  // namespace moonseed::rpc
