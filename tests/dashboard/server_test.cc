#include "dashboard/server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/text.h"
#include "curves/runs.h"

namespace moonseed::dashboard {
namespace {

namespace fs = std::filesystem;

// A run directory with the files the dashboard reads.
std::string make_run(const std::string& name, const std::string& metrics) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("dashboard-" + std::to_string(::getpid())) / name;
  fs::create_directories(dir);
  std::ofstream(dir / "metrics.jsonl", std::ios::trunc) << metrics;
  std::ofstream(dir / "config.lua", std::ios::trunc) << "return {\n  name = \"cartpole\",\n}\n";
  return dir.string();
}

void append(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::app) << text; }

int port_of(const std::string& url) { return std::atoi(url.substr(url.rfind(':') + 1).c_str()); }

// Sends `request` as is over a fresh TCP connection to 127.0.0.1:port and
// returns everything the server wrote until it closed the connection (each
// request says "Connection: close", or is one the server closes on).
std::string http_exchange(int port, const std::string& request) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    throw std::runtime_error("cannot connect");
  }
  for (size_t sent = 0; sent < request.size();) {
    const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server may close early on a request it refuses
    sent += static_cast<size_t>(n);
  }
  if (request.empty()) ::shutdown(fd, SHUT_WR);  // said nothing: the server sees the end at once
  std::string reply;
  char buf[65536];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) reply.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return reply;
}

std::string get(int port, const std::string& target, const std::string& headers = "") {
  return http_exchange(port, "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                            "\r\nConnection: close\r\n" + headers + "\r\n");
}

int status_of(const std::string& reply) {
  return reply.rfind("HTTP/1.1 ", 0) == 0 ? std::atoi(reply.c_str() + 9) : -1;
}

std::string body_of(const std::string& reply) {
  const size_t at = reply.find("\r\n\r\n");
  return at == std::string::npos ? "" : reply.substr(at + 4);
}

const std::string kRow1 = "{\"time_s\": 1.0, \"frames\": 100, \"return_mean\": 12.5}\n";
const std::string kEvent = "{\"time_s\": 1.5, \"event\": \"reload\", \"config_version\": 1}\n";
const std::string kRow2 = "{\"time_s\": 2.0, \"frames\": 200, \"return_mean\": 20}\n";

TEST(DashboardServer, ServesThePageItsScriptsAndTheChartLibraryBuiltIn) {
  Server server({make_run("page", "")}, "");
  const int port = port_of(server.start("127.0.0.1:0"));
  const std::string page = get(port, "/");
  EXPECT_EQ(status_of(page), 200) << page;
  EXPECT_NE(page.find("<script src=\"dashboard.js\">"), std::string::npos);
  EXPECT_EQ(status_of(get(port, "/dashboard.js")), 200);
  EXPECT_NE(get(port, "/dashboard.js").find("text/javascript"), std::string::npos);
  EXPECT_EQ(status_of(get(port, "/dashboard.css")), 200);
  const std::string uplot = get(port, "/uPlot.iife.min.js");
  EXPECT_EQ(status_of(uplot), 200) << "the build has no chart library: was npm reachable when cmake ran?";
  EXPECT_NE(uplot.find("uPlot"), std::string::npos);
  EXPECT_EQ(status_of(get(port, "/nothing.js")), 404);
  EXPECT_EQ(status_of(get(port, "/api/nothing")), 404);
}

TEST(DashboardServer, RowsComeAsWholeLinesFromWhereThePageLeftOff) {
  const size_t torn = 20;  // the next row, being written
  const std::string dir = make_run("rows", kRow1 + kEvent + kRow2.substr(0, torn));
  Server server({dir}, "");
  const int port = port_of(server.start("127.0.0.1:0"));
  const std::string first = body_of(get(port, "/api/rows?run=0&from=0"));
  const size_t whole = kRow1.size() + kEvent.size();
  EXPECT_EQ(first, "{\"from\": 0, \"next\": " + std::to_string(whole) + ", \"size\": " +
                       std::to_string(whole + torn) + ", \"rows\": [" + kRow1.substr(0, kRow1.size() - 1) + ",\n" +
                       kEvent.substr(0, kEvent.size() - 1) + "], \"points\": [true, false]}");
  append(dir + "/metrics.jsonl", kRow2.substr(torn));
  const std::string second = body_of(get(port, "/api/rows?run=0&from=" + std::to_string(whole)));
  EXPECT_NE(second.find("\"rows\": [" + kRow2.substr(0, kRow2.size() - 1) + "]"), std::string::npos) << second;
  const std::string end = std::to_string(whole + kRow2.size());
  EXPECT_NE(second.find("\"next\": " + end), std::string::npos) << second;
  EXPECT_NE(body_of(get(port, "/api/rows?run=0&from=" + end)).find("\"rows\": []"), std::string::npos);
  EXPECT_EQ(body_of(get(port, "/api/runs")),
            "[{\"run\": 0, \"name\": \"rows\", \"group\": 0, \"group_label\": \"cartpole\"}]");
  EXPECT_EQ(body_of(get(port, "/api/config?run=0")), "return {\n  name = \"cartpole\",\n}\n");
}

TEST(DashboardServer, TheStopRowMarkedWithCountersIsAPointOtherEventsAreNot) {
  // The rule of curves::is_point: "resume" has frames too, but is no point; the marked stop row is.
  const std::string resume = "{\"time_s\": 0.5, \"event\": \"resume\", \"frames\": 50}\n";
  const std::string stop =
      "{\"time_s\": 3, \"frames\": 300, \"return_mean\": 30, \"event\": \"stop\", \"counters\": true, \"reason\": \"r\"}\n";
  Server server({make_run("points", resume + kRow1 + kEvent + kRow2 + stop)}, "");
  const int port = port_of(server.start("127.0.0.1:0"));
  const std::string rows = body_of(get(port, "/api/rows?run=0&from=0"));
  EXPECT_NE(rows.find("\"points\": [false, true, false, true, true]}"), std::string::npos) << rows;
}

TEST(DashboardServer, ALineThatIsNoJsonObjectIsLeftOutSoTheReplyStaysJson) {
  // metrics.jsonl edited by hand: a line of text and a cut-off row between whole ones.
  Server server({make_run("damaged", kRow1 + "not json\n{\"time_s\": 1, \"frames\"\n" + kRow2)}, "");
  const int port = port_of(server.start("127.0.0.1:0"));
  const std::string rows = body_of(get(port, "/api/rows?run=0&from=0"));
  EXPECT_EQ(rows.find("not json"), std::string::npos) << rows;
  EXPECT_NE(rows.find("\"rows\": [" + kRow1.substr(0, kRow1.size() - 1) + ",\n" + kRow2.substr(0, kRow2.size() - 1) +
                      "], \"points\": [true, true]}"),
            std::string::npos)
      << rows;
}

// A run directory whose config.lua is that of experiment `name` with `seed`
// and learning rate `lr`, as the engine writes it (seed and runs_dir lines).
std::string make_seeded_run(const std::string& dir_name, const std::string& name, int seed, const std::string& lr,
                            const std::string& metrics) {
  const std::string dir = make_run(dir_name, metrics);
  std::ofstream(dir + "/config.lua", std::ios::trunc)
      << "return {\n  name = \"" << name << "\",\n  seed = " << seed << ",\n  runs_dir = \"runs\",\n"
      << "  optimizer = {\n    lr = " << lr << ",\n  },\n}\n";
  return dir;
}

TEST(DashboardServer, RunsOfOneConfigWithOtherSeedsAreOneGroupAndTheBandIsCurvesBand) {
  const std::string a = make_seeded_run("g-a", "cartpole", 1, "0.001",
                                        "{\"time_s\": 1, \"frames\": 100, \"return_mean\": 10}\n"
                                        "{\"time_s\": 2, \"frames\": 250, \"return_mean\": 16.5}\n"
                                        "{\"time_s\": 3, \"frames\": 400, \"return_mean\": 21}\n");
  const std::string b = make_seeded_run("g-b", "cartpole", 2, "0.001",
                                        "{\"time_s\": 1.2, \"frames\": 150, \"return_mean\": 8}\n"
                                        "{\"time_s\": 2.4, \"frames\": 300, \"return_mean\": 13}\n"
                                        "{\"time_s\": 3.1, \"frames\": 380, \"return_mean\": 9.25, "
                                        "\"event\": \"stop\", \"counters\": true}\n");
  // The same name, another learning rate: another recipe, whatever its name says.
  const std::string c = make_seeded_run("g-c", "cartpole", 1, "0.0005",
                                        "{\"time_s\": 1, \"frames\": 100, \"return_mean\": 50}\n");
  Server server({a, b, c}, "");
  const int port = port_of(server.start("127.0.0.1:0"));
  EXPECT_EQ(body_of(get(port, "/api/runs")),
            "[{\"run\": 0, \"name\": \"g-a\", \"group\": 0, \"group_label\": \"cartpole (2 seeds)\"}, "
            "{\"run\": 1, \"name\": \"g-b\", \"group\": 0, \"group_label\": \"cartpole (2 seeds)\"}, "
            "{\"run\": 2, \"name\": \"g-c\", \"group\": 1, \"group_label\": \"cartpole #2\"}]");

  for (const curves::XAxis x : {curves::XAxis::kFrames, curves::XAxis::kTime}) {
    const curves::Band expected = curves::band(
        {curves::series(curves::read_run(a), "return_mean", x), curves::series(curves::read_run(b), "return_mean", x)},
        Server::kMaxBandPoints);
    ASSERT_GE(expected.x.size(), 2u);
    const auto list = [](const std::vector<double>& v) {
      std::string out;
      for (const double d : v) out += (out.empty() ? "" : ", ") + base::number_text(d);
      return "[" + out + "]";
    };
    const std::string xk = curves::x_key(x);
    EXPECT_EQ(body_of(get(port, "/api/band?group=0&metric=return_mean&x=" + xk)),
              "{\"group\": 0, \"label\": \"cartpole (2 seeds)\", \"metric\": \"return_mean\", \"x_axis\": \"" + xk +
                  "\", \"runs\": [0, 1], \"x\": " + list(expected.x) + ", \"mean\": " + list(expected.mean) +
                  ", \"low\": " + list(expected.low) + ", \"high\": " + list(expected.high) + "}");
  }
  // A group of one; a metric no run has; bad parameters.
  EXPECT_NE(body_of(get(port, "/api/band?group=1&metric=return_mean&x=frames")).find("\"runs\": [2], \"x\": [100]"),
            std::string::npos);
  EXPECT_NE(body_of(get(port, "/api/band?group=0&metric=nothing&x=frames")).find("\"runs\": [], \"x\": []"),
            std::string::npos);
  const std::vector<std::string> bad = {"/api/band?group=2&metric=return_mean", "/api/band?metric=return_mean",
                                        "/api/band?group=0", "/api/band?group=0&metric=return_mean&x=steps",
                                        "/api/band?group=0&metric=" + std::string(Server::kMaxMetricName + 1, 'm')};
  for (const std::string& target : bad) {
    EXPECT_EQ(status_of(get(port, target)), 400) << target;
  }
}

// Descriptors this process has open (the listing's own is in every count alike).
size_t open_fds() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

// A TCP connection to 127.0.0.1:port that sends nothing, once the kernel has
// made it (the server may not have accepted it yet).
int silent_connection(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << std::strerror(errno);
  return fd;
}

// True once `done` holds; false after 30 s (a test's timeout, not a measure).
bool within_30s(const std::function<bool()>& done) {
  for (int i = 0; i < 3000 && !done(); ++i) ::usleep(10000);
  return done();
}

// Whether the server has ended `fd`: EOF or a reset, after any answer it wrote
// (appended to `answer`).
bool ended_by_server(int fd, std::string& answer) {
  pollfd p{fd, POLLIN, 0};
  while (::poll(&p, 1, 0) == 1) {
    char buf[512];
    const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return true;
    if (n > 0) answer.append(buf, static_cast<size_t>(n));
  }
  return false;
}

TEST(DashboardServer, AFloodOfSilentConnectionsIsHeldToItsBoundThenAFreshRequestIsAnswered) {
  Server server({make_run("flood", kRow1)}, "");
  const int port = port_of(server.start("127.0.0.1:0"));
  const size_t before = open_fds();
  EXPECT_EQ(status_of(get(port, "/api/status")), 200);  // the server's threads are up
  // The server closes its side just after the client has read the reply.
  ASSERT_TRUE(within_30s([&] { return open_fds() == before; }));
  // More silent connections than the gate keeps: the oldest are closed to make room.
  const size_t flood = Server::kMaxPending + 20;
  std::vector<int> fds;
  for (size_t i = 0; i < flood; ++i) fds.push_back(silent_connection(port));
  size_t most = 0;
  const auto held = [&] {  // the server's descriptors for the flood
    const size_t open = open_fds();
    const size_t n = open > before + flood ? open - before - flood : 0;
    most = std::max(most, n);
    return n;
  };
  std::vector<bool> ended(flood, false);
  std::vector<std::string> answers(flood);
  const auto count_ended = [&] {
    held();
    size_t n = 0;
    for (size_t i = 0; i < flood; ++i) {
      if (!ended[i]) ended[i] = ended_by_server(fds[i], answers[i]);
      n += ended[i] ? 1 : 0;
    }
    return n;
  };
  EXPECT_TRUE(within_30s([&] { return count_ended() >= 20; }));
  // A fresh request is answered, while the flood is still open or being dropped.
  EXPECT_EQ(status_of(get(port, "/api/status")), 200);
  // At their deadline the server closes the rest, without a word (they said nothing).
  EXPECT_TRUE(within_30s([&] { return count_ended() == flood; }));
  EXPECT_LE(most, Server::kMaxPending + 1) << "descriptors the server held for " << flood << " silent connections";
  for (size_t i = 0; i < flood; ++i) EXPECT_EQ(answers[i], "") << i;
  for (const int fd : fds) ::close(fd);
  EXPECT_TRUE(within_30s([&] { return open_fds() == before; })) << open_fds() << " open, " << before << " before";
}

// 100 clients that send their headers a byte at a time and never finish
// (slowloris): a real request is answered while they are open, and each of them
// is closed with 408 at its deadline.
TEST(DashboardServer, ClientsThatSendTheirHeadersSlowlyHoldNoThreadAndAreClosedAtTheirDeadline) {
  Server server({make_run("slow", kRow1)}, "");
  const int port = port_of(server.start("127.0.0.1:0"));
  constexpr size_t kSlow = 100;
  std::vector<int> slow;
  for (size_t i = 0; i < kSlow; ++i) {
    slow.push_back(silent_connection(port));
    const std::string start = "GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
    ASSERT_EQ(::send(slow.back(), start.data(), start.size(), MSG_NOSIGNAL), static_cast<ssize_t>(start.size()));
  }
  std::vector<bool> ended(kSlow, false);
  std::vector<std::string> answers(kSlow);
  std::atomic<bool> done{false};
  // A byte every half second on each: a per-read timeout would never fire.
  std::thread trickle([&] {
    while (!done) {
      for (size_t i = 0; i < kSlow; ++i) {
        [[maybe_unused]] const ssize_t n = ::send(slow[i], "a", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      }
      for (int i = 0; i < 50 && !done; ++i) ::usleep(10000);
    }
  });
  const auto count_ended = [&] {
    size_t n = 0;
    for (size_t i = 0; i < kSlow; ++i) {
      if (!ended[i]) ended[i] = ended_by_server(slow[i], answers[i]);
      n += ended[i] ? 1 : 0;
    }
    return n;
  };
  // Real requests, with a receive timeout as the test's own deadline only.
  const auto real_get = [&](const std::string& target) {
    const int fd = silent_connection(port);
    timeval timeout{20, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    const std::string request = "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    EXPECT_EQ(::send(fd, request.data(), request.size(), MSG_NOSIGNAL), static_cast<ssize_t>(request.size()));
    std::string reply;
    char buf[4096];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) reply.append(buf, static_cast<size_t>(n));
    ::close(fd);
    return reply;
  };
  const std::string page = real_get("/");
  const size_t ended_by_page = count_ended();
  const std::string runs = real_get("/api/runs");
  EXPECT_EQ(status_of(page), 200) << "no answer while " << kSlow << " slow clients were open";
  EXPECT_NE(body_of(runs).find("\"name\": \"slow\""), std::string::npos) << runs;
  std::cerr << "slow clients the server had closed when the page was answered: " << ended_by_page << "\n";
  // Each slow client is closed at its deadline, told why.
  EXPECT_TRUE(within_30s([&] { return count_ended() == kSlow; })) << count_ended() << " of " << kSlow;
  done = true;
  trickle.join();
  size_t told = 0;
  for (const std::string& answer : answers) told += status_of(answer) == 408 ? 1 : 0;
  // A byte sent after the close can reset the connection before the 408 is read: most are told.
  EXPECT_GT(told, 0u);
  for (const int fd : slow) ::close(fd);
}

TEST(DashboardServer, StatusIsWhatTheRunHandedItLast) {
  Server server({make_run("status", "")}, "");
  const int port = port_of(server.start("127.0.0.1:0"));
  EXPECT_EQ(body_of(get(port, "/api/status")), "null");
  server.set_status("{\"ok\": true, \"result\": {\"actors_connected\": 2}}");
  EXPECT_EQ(body_of(get(port, "/api/status")), "{\"ok\": true, \"result\": {\"actors_connected\": 2}}");
}

TEST(DashboardServer, MalformedRequestsGet400AndTheServerGoesOn) {
  Server server({make_run("bad", kRow1)}, "");
  const int port = port_of(server.start("127.0.0.1:0"));
  for (const std::string target : {"/api/rows", "/api/rows?run=0", "/api/rows?run=1&from=0", "/api/rows?run=x&from=0",
                                   "/api/rows?run=0&from=-1", "/api/rows?run=0&from=99999999999999999999999",
                                   "/api/config", "/api/config?run=7"}) {
    EXPECT_EQ(status_of(get(port, target)), 400) << target;
  }
  EXPECT_EQ(status_of(http_exchange(port, "NONSENSE\r\n\r\n")), 400);
  EXPECT_EQ(status_of(http_exchange(port, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX: " + std::string(20000, 'a') +
                                         "\r\n\r\n")),
            400);
  EXPECT_EQ(status_of(http_exchange(port, "GET /" + std::string(20000, 'a') + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")),
            414);
  EXPECT_EQ(http_exchange(port, ""), "");  // connected, said nothing, left
  // A large far offset reads nothing and says where the file ends.
  EXPECT_NE(body_of(get(port, "/api/rows?run=0&from=123456789")).find("\"rows\": []"), std::string::npos);
  EXPECT_EQ(status_of(get(port, "/api/rows?run=0&from=0")), 200);
}

TEST(DashboardServer, OnLoopbackARequestForAnotherHostIsRefused) {
  Server server({make_run("rebind", kRow1)}, "");
  const int port = port_of(server.start("127.0.0.1:0"));
  const std::string foreign = http_exchange(port, "GET /api/rows?run=0&from=0 HTTP/1.1\r\nHost: attacker.example:" +
                                                 std::to_string(port) + "\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(status_of(foreign), 403) << foreign;
  EXPECT_EQ(body_of(foreign).find("frames"), std::string::npos);
  for (const std::string host : {"localhost", "127.0.0.1", "[::1]", "127.1.2.3"}) {
    EXPECT_EQ(status_of(http_exchange(port, "GET / HTTP/1.1\r\nHost: " + host + ":" + std::to_string(port) +
                                           "\r\nConnection: close\r\n\r\n")),
              200)
        << host;
  }
  // Names that only start like a loopback address are other hosts' (DNS rebinding), and so is
  // anything after the port.
  for (const std::string& host : std::vector<std::string>{"127.attacker.example:" + std::to_string(port), "127.0.0.1.nip.io",
                                 "[::1].attacker.example", "localhost.attacker.example", "127.0.0.1:80x",
                                 "127.0.0.256", "[::1"}) {
    const std::string reply = http_exchange(port, "GET /api/config HTTP/1.1\r\nHost: " + host +
                                                      "\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(status_of(reply), 403) << host << "\n" << reply;
  }
}

TEST(DashboardServer, BeyondLoopbackItNeedsTheToken) {
  Server refused({make_run("tokenless", "")}, "");
  EXPECT_THROW(refused.start("0.0.0.0:0"), std::invalid_argument);
  EXPECT_THROW(refused.start("nonsense"), std::invalid_argument);

  const std::string token = "0123456789abcdef0123456789abcdef";
  ServerOptions options;
  options.auth.free_failures = 100;  // the throttle has tests of its own
  Server server({make_run("token", kRow1)}, token, options);
  const int port = port_of(server.start("0.0.0.0:0"));
  EXPECT_EQ(status_of(get(port, "/")), 401);
  EXPECT_EQ(status_of(get(port, "/api/rows?run=0&from=0")), 401);
  EXPECT_EQ(status_of(get(port, "/?token=" + token.substr(1))), 401);
  EXPECT_EQ(status_of(get(port, "/?token=")), 401);
  EXPECT_EQ(status_of(get(port, "/", "Cookie: moonseed_token=wrong\r\n")), 401);
  EXPECT_EQ(status_of(get(port, "/", "Authorization: Bearer " + token + "x\r\n")), 401);

  const std::string opened = get(port, "/?token=" + token);
  EXPECT_EQ(status_of(opened), 200);
  EXPECT_NE(opened.find("Set-Cookie: moonseed_token=" + token + "; Path=/; HttpOnly; SameSite=Strict"),
            std::string::npos)
      << opened;
  EXPECT_EQ(status_of(get(port, "/api/rows?run=0&from=0", "Cookie: a=b; moonseed_token=" + token + "\r\n")), 200);
  EXPECT_EQ(status_of(get(port, "/api/rows?run=0&from=0", "Authorization: Bearer " + token + "\r\n")), 200);
}

TEST(DashboardServer, WrongTokensAreThrottledWith429AndSummedUpInTheLog) {
  const std::string token = "0123456789abcdef0123456789abcdef";
  ServerOptions options;
  options.auth.free_failures = 2;
  options.auth.block_first = std::chrono::seconds(60);  // longer than the test
  Server server({make_run("throttled", kRow1)}, token, options);
  const int port = port_of(server.start("0.0.0.0:0"));
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(status_of(get(port, "/", "Authorization: Bearer guess-1\r\n")), 401);
  EXPECT_EQ(status_of(get(port, "/", "Authorization: Bearer guess-2\r\n")), 401);
  // Now not even the right token is looked at, from this address.
  const std::string refused = get(port, "/api/runs", "Authorization: Bearer " + token + "\r\n");
  EXPECT_EQ(status_of(refused), 429) << refused;
  EXPECT_NE(refused.find("Retry-After: "), std::string::npos) << refused;
  for (int i = 0; i < 50; ++i) EXPECT_EQ(status_of(get(port, "/", "Authorization: Bearer guess\r\n")), 429);
  server.stop();
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_LE(std::count(log.begin(), log.end(), '\n'), 2) << log;
  EXPECT_NE(log.find("dashboard requests from 1 address"), std::string::npos) << log;
}

TEST(DashboardServer, OnLoopbackTheConfiguredHostNamesAreServedToo) {
  ServerOptions options;
  options.hosts = {"myhost.lab", "Other.Example"};
  Server server({make_run("hosts", kRow1)}, "", options);
  const int port = port_of(server.start("127.0.0.1:0"));
  const auto status_for = [&](const std::string& host) {
    return status_of(http_exchange(port, "GET /api/runs HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n"));
  };
  EXPECT_EQ(status_for("myhost.lab"), 200);
  EXPECT_EQ(status_for("myhost.lab:" + std::to_string(port)), 200);
  EXPECT_EQ(status_for("MYHOST.lab"), 200);
  EXPECT_EQ(status_for("other.example:8080"), 200);
  EXPECT_EQ(status_for("127.0.0.1"), 200);
  EXPECT_EQ(status_for("notmyhost.lab"), 403);
  EXPECT_EQ(status_for("myhost.lab.attacker.example"), 403);
  EXPECT_EQ(status_for("127.attacker.example"), 403);
  EXPECT_EQ(status_for("myhost.lab:80x"), 403);
}

TEST(DashboardServer, ListenIsLoopbackOnlyForLoopbackAddresses) {
  EXPECT_TRUE(listen_is_loopback("127.0.0.1:0"));
  EXPECT_TRUE(listen_is_loopback("[::1]:8080"));
  EXPECT_TRUE(listen_is_loopback("localhost:8080"));
  EXPECT_FALSE(listen_is_loopback("0.0.0.0:8080"));
  EXPECT_FALSE(listen_is_loopback("192.168.1.5:8080"));
  EXPECT_THROW(listen_is_loopback("127.0.0.1"), std::invalid_argument);
  EXPECT_THROW(listen_is_loopback("127.0.0.1:99999"), std::invalid_argument);
}

}  // namespace
}  // namespace moonseed::dashboard
