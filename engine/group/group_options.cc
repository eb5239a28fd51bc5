#include "engine/group/group_options.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <stdexcept>

namespace moonseed::engine {

Rendezvous parse_rendezvous(const std::string& text) {
  Rendezvous r;
  if (text.rfind("file:", 0) == 0 && text.size() > 5) {
    r.path = text.substr(5);
    return r;
  }
  const std::string expected = "rendezvous \"" + text + "\": expected tcp:HOST:PORT (e.g. tcp:node001:29500)";
  if (text.rfind("tcp:", 0) != 0) throw std::invalid_argument(expected);
  const size_t colon = text.rfind(':');
  if (colon <= 4 || colon + 1 >= text.size()) throw std::invalid_argument(expected);
  r.tcp = true;
  r.host = text.substr(4, colon - 4);
  if (r.host.size() > 2 && r.host.front() == '[' && r.host.back() == ']') r.host = r.host.substr(1, r.host.size() - 2);
  for (size_t i = colon + 1; i < text.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(text[i])) || r.port > 65535) throw std::invalid_argument(expected);
    r.port = r.port * 10 + (text[i] - '0');
  }
  if (r.port < 1 || r.port > 65535) throw std::invalid_argument(expected + ": the port must be in 1..65535");
  return r;
}

std::string local_address_towards(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) return "";
  std::string out;
  for (addrinfo* a = found; a != nullptr && out.empty(); a = a->ai_next) {
    const int fd = ::socket(a->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    sockaddr_storage local{};
    socklen_t len = sizeof local;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0) {
      char text[INET6_ADDRSTRLEN] = {};
      const void* addr = local.ss_family == AF_INET
                             ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&local)->sin_addr)
                             : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr);
      if (::inet_ntop(local.ss_family, addr, text, sizeof text) != nullptr) out = text;
    }
    ::close(fd);
  }
  ::freeaddrinfo(found);
  return out;
}

bool loopback_host(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

}  // namespace moonseed::engine
