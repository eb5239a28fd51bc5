#include "rpc/address.h"

#include <arpa/inet.h>
#include <sys/un.h>

#include <cctype>
#include <stdexcept>

namespace moonseed::rpc {
namespace {

constexpr std::string_view kUnixPrefix = "unix:";
constexpr std::string_view kTcpPrefix = "tcp:";
constexpr std::string_view kExpected = "expected unix:PATH or tcp:HOST:PORT";

std::optional<Address> fail(std::string* error, std::string_view text, const std::string& why) {
  if (error) *error = "bad address '" + std::string(text) + "': " + why;
  return std::nullopt;
}

bool is_ipv6_literal(const std::string& host) {
  in6_addr parsed;
  return inet_pton(AF_INET6, host.c_str(), &parsed) == 1;
}

// RFC 1123 host names: letters, digits, '-' and '.', labels not starting with '-'.
bool is_host_name(std::string_view host) {
  if (host.empty() || host.size() > 253) return false;
  bool label_start = true;
  for (char c : host) {
    const bool alnum = std::isalnum(static_cast<unsigned char>(c)) != 0;
    if (c == '.') {
      if (label_start) return false;  // empty label
      label_start = true;
      continue;
    }
    if (!alnum && !(c == '-' && !label_start) && c != '_') return false;
    label_start = false;
  }
  return true;
}

}  // namespace

bool only_this_host(const Address& address) {
  if (address.kind == Address::Kind::kUnix) return true;
  if (address.host == "localhost") return true;
  in_addr v4;
  if (inet_pton(AF_INET, address.host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6;
  if (inet_pton(AF_INET6, address.host.c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    // ::ffff:127.x.y.z, an IPv4 loopback address written as IPv6.
    return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
  }
  return false;
}

std::string Address::to_string() const {
  if (kind == Kind::kUnix) return std::string(kUnixPrefix) + path;
  const bool bracket = host.find(':') != std::string::npos;
  return std::string(kTcpPrefix) + (bracket ? "[" + host + "]" : host) + ":" +
         std::to_string(port);
}

bool Address::operator==(const Address& o) const {
  return kind == o.kind && path == o.path && host == o.host && port == o.port;
}

std::optional<Address> parse_address(std::string_view text, std::string* error) {
  Address address;
  if (text.substr(0, kUnixPrefix.size()) == kUnixPrefix) {
    address.kind = Address::Kind::kUnix;
    address.path = std::string(text.substr(kUnixPrefix.size()));
    if (address.path.empty()) return fail(error, text, "empty socket path");
    if (address.path.find('\0') != std::string::npos) {
      return fail(error, text, "socket path contains a NUL byte");
    }
    const size_t max_path = sizeof(sockaddr_un{}.sun_path) - 1;
    if (address.path.size() > max_path) {
      return fail(error, text,
                  "socket path is " + std::to_string(address.path.size()) +
                      " bytes, the system allows at most " + std::to_string(max_path));
    }
    return address;
  }
  if (text.substr(0, kTcpPrefix.size()) != kTcpPrefix) {
    return fail(error, text, std::string(kExpected));
  }
  address.kind = Address::Kind::kTcp;
  const std::string_view rest = text.substr(kTcpPrefix.size());
  const size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos) return fail(error, text, "missing ':PORT' after the host");
  std::string_view host = rest.substr(0, colon);
  const std::string_view port = rest.substr(colon + 1);

  if (port.empty() || port.size() > 5) {
    return fail(error, text, "port '" + std::string(port) + "' is not a number in 0..65535");
  }
  uint32_t port_value = 0;
  for (char c : port) {
    if (c < '0' || c > '9') {
      return fail(error, text, "port '" + std::string(port) + "' is not a number in 0..65535");
    }
    port_value = port_value * 10 + static_cast<uint32_t>(c - '0');
  }
  if (port_value > 65535) {
    return fail(error, text, "port " + std::string(port) + " is above 65535");
  }
  address.port = static_cast<uint16_t>(port_value);

  if (host.empty()) return fail(error, text, "empty host (use 0.0.0.0 or [::] for any)");
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') {
      return fail(error, text, "unbalanced brackets around the IPv6 host");
    }
    address.host = std::string(host.substr(1, host.size() - 2));
    if (!is_ipv6_literal(address.host)) {
      return fail(error, text, "'" + address.host + "' in brackets is not an IPv6 address");
    }
    return address;
  }
  address.host = std::string(host);
  if (address.host.find(':') != std::string::npos) {
    return fail(error, text, "an IPv6 host must be written in brackets, e.g. tcp:[::1]:7000");
  }
  if (address.host.find_first_not_of("0123456789.") == std::string::npos) {
    in_addr parsed;
    if (inet_pton(AF_INET, address.host.c_str(), &parsed) != 1) {
      return fail(error, text, "'" + address.host + "' is not a valid IPv4 address");
    }
    return address;
  }
  if (!is_host_name(address.host)) {
    return fail(error, text, "'" + address.host + "' is neither an IPv4 address nor a host name");
  }
  return address;
}

Address require_address(std::string_view text) {
  std::string error;
  auto address = parse_address(text, &error);
  if (!address) throw std::invalid_argument(error);
  return *address;
}

}  // namespace moonseed::rpc
