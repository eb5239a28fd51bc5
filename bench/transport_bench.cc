// What the Moonseed transport costs over the socket it runs on, measured side
// by side in one run, for CartPole-sized messages of N envs:
//   raw:      blocking write/read on a Unix socket of exactly the bytes of a
//             framed StepBatch (4 float32 obs + reward + flags per env), and a
//             reply of exactly the bytes of a framed ActionBatch (N int32);
//   moonseed: rpc::Client -> rpc::Server -> a service that replies at once ->
//             rpc::Client, over a Unix socket.
// The two paths alternate in short slices so machine noise hits both alike.
// Usage: transport_bench [total_seconds=2]
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "rpc/client.h"
#include "rpc/codec.h"
#include "rpc/server.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace rpc = moonseed::rpc;

constexpr uint32_t kCartPoleObsBytes = 4 * sizeof(float);
constexpr int kSlices = 4;  // alternations of raw and moonseed per N

rpc::StepBatch cartpole_batch(uint32_t envs) {
  rpc::StepBatch batch;
  batch.count = envs;
  batch.observations.assign(size_t{envs} * kCartPoleObsBytes, 0x3c);
  batch.rewards.assign(envs, 1.0f);
  batch.flags.assign(envs, 0);
  return batch;
}

// The inference batcher goes here later; for now the reply is immediate.
class ImmediateReplyService : public rpc::ActorService {
 public:
  rpc::Admission on_hello(const rpc::Hello&) override {
    rpc::Admission admission;
    admission.accepted = true;
    admission.welcome.actor_id = 0;
    return admission;
  }
  void on_connect(std::shared_ptr<rpc::ActorLink>) override {}
  void on_steps(const std::shared_ptr<rpc::ActorLink>& link, rpc::StepBatch&& batch) override {
    rpc::ActionBatch reply;
    reply.seq = batch.seq;
    reply.actions.assign(size_t{batch.count} * sizeof(int32_t), 0);
    link->send_actions(std::move(reply));
  }
  void on_disconnect(int32_t, const std::string&) override {}
};

void must(bool ok, const char* what) {
  if (!ok) {
    std::perror(what);
    std::exit(1);
  }
}

void write_exactly(int fd, const uint8_t* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    must(n > 0, "raw send");
    data += n;
    size -= static_cast<size_t>(n);
  }
}

bool read_exactly(int fd, uint8_t* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::recv(fd, data, size, 0);
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

int unix_socket_to(const std::string& path, bool listen) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  must(fd >= 0, "socket");
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::strncpy(sa.sun_path, path.c_str(), sizeof sa.sun_path - 1);
  if (listen) {
    must(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0, "bind");
    must(::listen(fd, 1) == 0, "listen");
  } else {
    must(::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0, "connect");
  }
  return fd;
}

// A raw ping-pong peer: reads `request` bytes, writes `reply` bytes, until EOF.
class RawPingPong {
 public:
  RawPingPong(const std::string& path, size_t request, size_t reply)
      : request_(request), reply_(reply, 0x11), answer_(reply, 0) {
    ::unlink(path.c_str());
    const int listener = unix_socket_to(path, true);
    echo_ = std::thread([this, listener] {
      const int fd = ::accept(listener, nullptr, nullptr);
      ::close(listener);
      std::vector<uint8_t> in(request_);
      while (read_exactly(fd, in.data(), in.size())) {
        write_exactly(fd, reply_.data(), reply_.size());
      }
      ::close(fd);
    });
    fd_ = unix_socket_to(path, false);
    ::unlink(path.c_str());
  }
  ~RawPingPong() {
    ::shutdown(fd_, SHUT_RDWR);
    echo_.join();
    ::close(fd_);
  }
  void round_trip(const std::vector<uint8_t>& request) {
    write_exactly(fd_, request.data(), request.size());
    must(read_exactly(fd_, answer_.data(), answer_.size()), "raw reply");
  }

 private:
  size_t request_;
  std::vector<uint8_t> reply_;
  std::vector<uint8_t> answer_;
  std::thread echo_;
  int fd_ = -1;
};

// Runs `round_trip` for `seconds`; returns {round trips, elapsed seconds}.
template <typename F>
std::pair<long, double> run_for(double seconds, F&& round_trip) {
  const auto start = Clock::now();
  const auto stop = start + std::chrono::duration<double>(seconds);
  long count = 0;
  auto now = start;
  while (now < stop) {
    for (int i = 0; i < 64; ++i) round_trip();
    count += 64;
    now = Clock::now();
  }
  return {count, std::chrono::duration<double>(now - start).count()};
}

}  // namespace

int main(int argc, char** argv) {
  const double total_seconds = argc > 1 ? std::atof(argv[1]) : 2.0;
  const std::vector<uint32_t> env_counts = {1, 16, 64};
  const double slice = total_seconds / (env_counts.size() * 2 * kSlices);

  char dir_template[] = "/tmp/moonseed-bench-XXXXXX";
  must(::mkdtemp(dir_template) != nullptr, "mkdtemp");
  const std::string dir = dir_template;

  ImmediateReplyService service;
  rpc::Server server(service);
  const rpc::Address address = server.listen("unix:" + dir + "/learner.sock");
  server.start();
  rpc::Client client = rpc::Client::connect(address, std::chrono::seconds(5));
  client.hello(rpc::Hello{});

  std::printf("transport_bench: CartPole round trips over a Unix socket, %.1f s in total\n",
              total_seconds);
  std::printf("%5s %12s %12s %12s %15s %7s\n", "envs", "step bytes", "reply bytes",
              "raw us/rt", "moonseed us/rt", "ratio");
  for (uint32_t envs : env_counts) {
    rpc::StepBatch batch = cartpole_batch(envs);
    const std::vector<uint8_t> step_frame = rpc::encode(batch);
    rpc::ActionBatch reply_shape;
    reply_shape.actions.assign(size_t{envs} * sizeof(int32_t), 0);
    const size_t reply_bytes = rpc::encode(reply_shape).size();

    RawPingPong raw(dir + "/raw.sock", step_frame.size(), reply_bytes);
    rpc::Incoming incoming;
    auto raw_round_trip = [&] { raw.round_trip(step_frame); };
    auto moonseed_round_trip = [&] {
      ++batch.seq;
      client.send(batch);
      client.receive_into(incoming, std::chrono::seconds(5));
      if (!std::holds_alternative<rpc::ActionBatch>(incoming) ||
          std::get<rpc::ActionBatch>(incoming).seq != batch.seq) {
        std::fprintf(stderr, "transport_bench: bad reply (variant index %zu)\n",
                     incoming.index());
        std::exit(1);
      }
    };
    run_for(slice / 4, raw_round_trip);  // warm-up: page faults, buffer growth, caches
    run_for(slice / 4, moonseed_round_trip);

    long raw_count = 0, moonseed_count = 0;
    double raw_seconds = 0, moonseed_seconds = 0;
    for (int s = 0; s < kSlices; ++s) {
      auto [rc, rs] = run_for(slice, raw_round_trip);
      auto [mc, ms] = run_for(slice, moonseed_round_trip);
      raw_count += rc;
      raw_seconds += rs;
      moonseed_count += mc;
      moonseed_seconds += ms;
    }
    const double raw_us = 1e6 * raw_seconds / static_cast<double>(raw_count);
    const double moonseed_us = 1e6 * moonseed_seconds / static_cast<double>(moonseed_count);
    std::printf("%5u %12zu %12zu %12.2f %15.2f %7.2f\n", envs, step_frame.size(), reply_bytes,
                raw_us, moonseed_us, moonseed_us / raw_us);
  }
  client.close();
  server.stop();
  std::filesystem::remove_all(dir);
  return 0;
}
