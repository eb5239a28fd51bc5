#include "rpc/address.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace moonseed::rpc {
namespace {

std::string error_of(std::string_view text) {
  std::string error;
  EXPECT_FALSE(parse_address(text, &error).has_value()) << text;
  return error;
}

TEST(Address, UnixAddressKeepsItsPath) {
  const auto address = parse_address("unix:/tmp/run/learner.sock");
  ASSERT_TRUE(address.has_value());
  EXPECT_EQ(address->kind, Address::Kind::kUnix);
  EXPECT_EQ(address->path, "/tmp/run/learner.sock");
}

TEST(Address, UnixAddressWithoutPathIsRefused) {
  EXPECT_NE(error_of("unix:").find("empty socket path"), std::string::npos);
}

TEST(Address, UnixPathLongerThanTheSystemAllowsIsRefusedWithItsLength) {
  const std::string error = error_of("unix:/" + std::string(200, 'a'));
  EXPECT_NE(error.find("201 bytes"), std::string::npos) << error;
}

TEST(Address, TcpAddressWithIpv4LiteralParses) {
  const auto address = parse_address("tcp:127.0.0.1:7000");
  ASSERT_TRUE(address.has_value());
  EXPECT_EQ(address->kind, Address::Kind::kTcp);
  EXPECT_EQ(address->host, "127.0.0.1");
  EXPECT_EQ(address->port, 7000);
}

TEST(Address, TcpAddressWithBracketedIpv6LiteralParsesWithoutBrackets) {
  const auto address = parse_address("tcp:[::1]:65535");
  ASSERT_TRUE(address.has_value());
  EXPECT_EQ(address->host, "::1");
  EXPECT_EQ(address->port, 65535);
}

TEST(Address, TcpAddressWithHostNameAndPortZeroParses) {
  const auto address = parse_address("tcp:learner-1.cluster.local:0");
  ASSERT_TRUE(address.has_value());
  EXPECT_EQ(address->host, "learner-1.cluster.local");
  EXPECT_EQ(address->port, 0);
}

TEST(Address, CanonicalTextParsesBackToTheSameAddress) {
  for (const char* text : {"unix:/a/b.sock", "tcp:10.0.0.2:80", "tcp:[fe80::1]:9", "tcp:host:1"}) {
    const auto address = parse_address(text);
    ASSERT_TRUE(address.has_value()) << text;
    EXPECT_EQ(address->to_string(), text);
    EXPECT_EQ(parse_address(address->to_string()), address);
  }
}

TEST(Address, UnknownSchemeIsRefusedNamingTheAcceptedForms) {
  const std::string error = error_of("http://learner:80");
  EXPECT_NE(error.find("expected unix:PATH or tcp:HOST:PORT"), std::string::npos) << error;
  EXPECT_NE(error.find("http://learner:80"), std::string::npos) << error;
}

TEST(Address, TcpAddressWithoutPortIsRefused) {
  EXPECT_NE(error_of("tcp:learner").find("missing ':PORT'"), std::string::npos);
}

TEST(Address, PortAbove65535IsRefused) {
  EXPECT_NE(error_of("tcp:learner:65536").find("above 65535"), std::string::npos);
}

TEST(Address, NonNumericPortIsRefused) {
  EXPECT_NE(error_of("tcp:learner:http").find("not a number"), std::string::npos);
  EXPECT_NE(error_of("tcp:learner:").find("not a number"), std::string::npos);
  EXPECT_NE(error_of("tcp:learner:-1").find("not a number"), std::string::npos);
}

TEST(Address, UnbracketedIpv6LiteralIsRefusedWithTheBracketedForm) {
  EXPECT_NE(error_of("tcp:::1:7000").find("tcp:[::1]:7000"), std::string::npos);
}

TEST(Address, BracketsAroundSomethingOtherThanIpv6AreRefused) {
  EXPECT_NE(error_of("tcp:[learner]:7000").find("not an IPv6 address"), std::string::npos);
}

TEST(Address, MalformedIpv4LiteralIsRefused) {
  EXPECT_NE(error_of("tcp:300.1.1.1:7000").find("not a valid IPv4"), std::string::npos);
}

TEST(Address, HostWithForbiddenCharactersIsRefused) {
  EXPECT_NE(error_of("tcp:lear ner:7000").find("neither"), std::string::npos);
  EXPECT_NE(error_of("tcp:a..b:7000").find("neither"), std::string::npos);
}

TEST(Address, EmptyTcpHostIsRefused) {
  EXPECT_NE(error_of("tcp::7000").find("empty host"), std::string::npos);
}

TEST(Address, RequireAddressThrowsInvalidArgumentWithTheSameMessage) {
  try {
    require_address("tcp:learner");
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), error_of("tcp:learner"));
  }
}

}  // namespace
TEST(Address, OnlyUnixSocketsAndLoopbackAddressesAreReachableOnlyFromThisHost) {
  for (const char* local : {"unix:/tmp/l.sock", "tcp:127.0.0.1:5000", "tcp:127.8.9.10:1", "tcp:[::1]:5000",
                            "tcp:localhost:5000", "tcp:[::ffff:127.0.0.1]:5000"}) {
    EXPECT_TRUE(only_this_host(require_address(local))) << local;
  }
  for (const char* open : {"tcp:0.0.0.0:5000", "tcp:[::]:5000", "tcp:10.0.0.7:5000", "tcp:learner.lan:5000",
                           "tcp:128.0.0.1:5000", "tcp:[::ffff:10.0.0.1]:5000"}) {
    EXPECT_FALSE(only_this_host(require_address(open))) << open;
  }
}

}  // namespace moonseed::rpc
