#include "tests/rpc/raw_peer.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>

namespace moonseed::rpc::testing {

RawPeer::RawPeer(const Address& address, const std::string& source) {
  if (address.kind == Address::Kind::kUnix) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::strncpy(sa.sun_path, address.path.c_str(), sizeof sa.sun_path - 1);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
      ADD_FAILURE() << "connect " << address.to_string() << ": " << std::strerror(errno);
    }
    return;
  }
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(address.port);
  if (inet_pton(AF_INET, address.host.c_str(), &sa.sin_addr) != 1) {
    ADD_FAILURE() << "RawPeer takes IPv4 literals only, got " << address.host;
  }
  if (!source.empty()) {
    sockaddr_in from{};
    from.sin_family = AF_INET;
    if (inet_pton(AF_INET, source.c_str(), &from.sin_addr) != 1 ||
        ::bind(fd_, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0) {
      ADD_FAILURE() << "bind to " << source << ": " << std::strerror(errno);
    }
  }
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    ADD_FAILURE() << "connect " << address.to_string() << ": " << std::strerror(errno);
  }
}

RawPeer::~RawPeer() {
  if (fd_ >= 0) ::close(fd_);
}

void RawPeer::write(const std::vector<uint8_t>& bytes) {
  size_t at = 0;
  while (at < bytes.size()) {
    const ssize_t n = ::send(fd_, bytes.data() + at, bytes.size() - at, MSG_NOSIGNAL);
    if (n < 0) {
      ADD_FAILURE() << "send: " << std::strerror(errno);
      return;
    }
    at += static_cast<size_t>(n);
  }
}

bool RawPeer::fill() {
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, 10000) != 1) return false;
  const ssize_t n = ::recv(fd_, reader_.write_ptr(), reader_.writable(), 0);
  if (n <= 0) return false;
  reader_.commit(static_cast<size_t>(n));
  return true;
}

std::optional<Message> RawPeer::read_message() {
  for (;;) {
    FrameReader::Next next = reader_.next();
    if (next.status == FrameReader::Next::Status::kFrame) {
      Message message;
      DecodeError error;
      if (!decode_into(next.data, next.size, FrameLimits{}, message, error)) return std::nullopt;
      return message;
    }
    if (next.status == FrameReader::Next::Status::kInvalid || !fill()) return std::nullopt;
  }
}

bool RawPeer::wait_closed() {
  for (;;) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 10000) != 1) return false;
    const ssize_t n = ::recv(fd_, reader_.write_ptr(), reader_.writable(), 0);
    if (n == 0 || (n < 0 && errno == ECONNRESET)) return true;
    if (n < 0) return false;
    reader_.commit(static_cast<size_t>(n));
    while (reader_.next().status == FrameReader::Next::Status::kFrame) {
    }
  }
}

}  // namespace moonseed::rpc::testing
