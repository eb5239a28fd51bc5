// What the Moonseed transport costs over the socket it runs on, measured side
// by side in one run, for CartPole-sized messages of N envs:
//   raw:      blocking write/read on a Unix socket of exactly the bytes of a
//             framed StepBatch (4 float32 obs + reward + flags per env), and a
//             reply of exactly the bytes of a framed ActionBatch (N int32);
//   rpc:      rpc::Client -> rpc::Server -> a service that replies at once on
//             the io thread -> rpc::Client, over a Unix socket;
//   moonseed: the real learner path: rpc::Client -> rpc::Server -> the
//             engine's InferenceBatcher -> an inference thread running a
//             trivial policy (action = obs[0] > 0) -> reply -> rpc::Client.
//             max_batch is the message's env count, so a batch closes at once;
//   moonseed-rtc: the same, but the server has no io thread: the inference
//             thread runs the sockets while it waits (inference.io_threads = 0).
// The paths alternate in short slices so machine noise hits them alike.
// Usage: transport_bench [total_seconds=4] [raw|rpc|moonseed|moonseed-rtc]
// With a path named, only that path runs (for profiling it: perf, strace).
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_util.h"
#include "rpc/client.h"
#include "rpc/codec.h"
#include "rpc/server.h"
#include "engine/runtime/clock.h"
#include "engine/runtime/inference_batcher.h"

namespace {

namespace rpc = moonseed::rpc;
using moonseed::bench::time_calls;
using moonseed::bench::Timing;

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
  void on_disconnect(const std::shared_ptr<rpc::ActorLink>&, const std::string&) override {}
};

// The learner's shape without the network: requests go through the engine's
// batcher to an inference thread, which replies through the link.
class BatchedPolicyService : public ImmediateReplyService {
 public:
  BatchedPolicyService(int max_batch, int spin_us)
      : batcher_(max_batch, std::chrono::milliseconds(1), clock_, std::chrono::microseconds(spin_us)) {}
  ~BatchedPolicyService() override { stop(); }
  // Before the pumped server goes away.
  void stop() {
    if (!thread_.joinable()) return;  // closing again would wake a server that is gone
    batcher_.close();
    thread_.join();
  }
  // With a server: run-to-completion, the inference thread pumps its sockets.
  void start(rpc::Server* pumped) {
    if (pumped) {
      batcher_.set_pump([pumped](std::chrono::nanoseconds wait) { pumped->run_for(wait); },
                        [pumped] { pumped->wake(); });
    }
    thread_ = std::thread([this] { infer(); });
  }
  void on_steps(const std::shared_ptr<rpc::ActorLink>& link, rpc::StepBatch&& batch) override {
    const int envs = static_cast<int>(batch.count);
    batcher_.submit(Request{link, std::move(batch)}, envs);
  }

 private:
  struct Request {
    std::shared_ptr<rpc::ActorLink> link;
    rpc::StepBatch batch;
  };
  void infer() {
    std::vector<Request> requests;
    while (batcher_.next_batch(requests)) {
      for (Request& r : requests) {
        rpc::ActionBatch reply;
        reply.seq = r.batch.seq;
        reply.actions.resize(size_t{r.batch.count} * sizeof(int32_t));
        for (uint32_t i = 0; i < r.batch.count; ++i) {
          float x0;
          std::memcpy(&x0, &r.batch.observations[i * kCartPoleObsBytes], sizeof x0);
          const int32_t action = x0 > 0 ? 1 : 0;
          std::memcpy(&reply.actions[i * sizeof action], &action, sizeof action);
        }
        r.link->send_actions(std::move(reply));
      }
    }
  }
  moonseed::engine::SteadyClock clock_;
  moonseed::engine::InferenceBatcher<Request> batcher_;
  std::thread thread_;
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

// A connected client of a server running `service`.
struct Endpoint {
  Endpoint(rpc::ActorService& service, const std::string& path, int io_threads = 1)
      : server(service, options(io_threads)) {
    address = server.listen("unix:" + path);
    server.start();
  }
  static rpc::ServerOptions options(int io_threads) {
    rpc::ServerOptions o;
    o.io_threads = io_threads;
    return o;
  }
  void connect() {
    client.emplace(rpc::Client::connect(address, std::chrono::seconds(5)));
    client->hello(rpc::Hello{});
  }
  ~Endpoint() {
    client->close();
    server.stop();
  }
  void round_trip(rpc::StepBatch& batch, rpc::Incoming& incoming) {
    ++batch.seq;
    client->send(batch);
    client->receive_into(incoming, std::chrono::seconds(5));
    if (!std::holds_alternative<rpc::ActionBatch>(incoming) ||
        std::get<rpc::ActionBatch>(incoming).seq != batch.seq) {
      std::fprintf(stderr, "transport_bench: bad reply (variant index %zu)\n", incoming.index());
      std::exit(1);
    }
  }
  rpc::Server server;
  rpc::Address address;
  std::optional<rpc::Client> client;
};

}  // namespace

int main(int argc, char** argv) {
  const double total_seconds = argc > 1 ? std::atof(argv[1]) : 4.0;
  const std::string only = argc > 2 ? argv[2] : "";
  const char* kNames[] = {"raw", "rpc", "moonseed", "moonseed-rtc"};
  if (!only.empty() && std::find(std::begin(kNames), std::end(kNames), only) == std::end(kNames)) {
    std::fprintf(stderr, "transport_bench: unknown path '%s' (raw, rpc, moonseed, moonseed-rtc)\n", only.c_str());
    return 2;
  }

  const std::vector<uint32_t> env_counts = {1, 16, 64};
  constexpr int kPaths = 4;
  const double slice = total_seconds / (env_counts.size() * kPaths * kSlices);

  char dir_template[] = "/tmp/moonseed-bench-XXXXXX";
  must(::mkdtemp(dir_template) != nullptr, "mkdtemp");
  const std::string dir = dir_template;

  std::printf("transport_bench: CartPole round trips over a Unix socket, %.1f s in total\n",
              total_seconds);
  std::printf("us per round trip; ratios against raw. moonseed: io thread + inference thread;\n"
              "moonseed-rtc: the inference thread runs the sockets too (inference.io_threads = 0)\n");
  std::printf("%5s %6s %6s %8s %8s %10s %13s %8s %13s %17s\n", "envs", "step B", "reply B", "raw",
              "rpc", "moonseed", "moonseed-rtc", "rpc/raw", "moonseed/raw", "moonseed-rtc/raw");
  for (uint32_t envs : env_counts) {
    rpc::StepBatch batch = cartpole_batch(envs);
    const std::vector<uint8_t> step_frame = rpc::encode(batch);
    rpc::ActionBatch reply_shape;
    reply_shape.actions.assign(size_t{envs} * sizeof(int32_t), 0);
    const size_t reply_bytes = rpc::encode(reply_shape).size();

    RawPingPong raw(dir + "/raw.sock", step_frame.size(), reply_bytes);
    ImmediateReplyService immediate;
    BatchedPolicyService batched(static_cast<int>(envs), 0);
    BatchedPolicyService pumping(static_cast<int>(envs), 0);
    Endpoint rpc_only(immediate, dir + "/rpc.sock");
    Endpoint full(batched, dir + "/full.sock");
    Endpoint full_rtc(pumping, dir + "/rtc.sock", /*io_threads=*/0);
    batched.start(nullptr);
    pumping.start(&full_rtc.server);
    rpc_only.connect();
    full.connect();
    full_rtc.connect();
    rpc::Incoming incoming;
    std::function<void()> paths[kPaths] = {
        [&] { raw.round_trip(step_frame); },
        [&] { rpc_only.round_trip(batch, incoming); },
        [&] { full.round_trip(batch, incoming); },
        [&] { full_rtc.round_trip(batch, incoming); },
    };
    auto runs = [&](int k) { return only.empty() || only == kNames[k]; };
    for (int k = 0; k < kPaths; ++k) {
      if (runs(k)) time_calls(slice / 4, 64, paths[k]);  // warm-up: page faults, buffers, caches
    }

    int64_t counts[kPaths] = {};
    double seconds[kPaths] = {};
    for (int s = 0; s < kSlices; ++s) {
      for (int k = 0; k < kPaths; ++k) {
        if (!runs(k)) continue;
        const Timing t = time_calls(only.empty() ? slice : slice * kPaths, 64, paths[k]);
        counts[k] += t.calls;
        seconds[k] += t.seconds;
      }
    }
    double us[kPaths];
    for (int k = 0; k < kPaths; ++k) us[k] = counts[k] ? 1e6 * seconds[k] / static_cast<double>(counts[k]) : 0;
    batched.stop();
    pumping.stop();
    std::printf("%5u %6zu %6zu %8.2f %8.2f %10.2f %13.2f %8.2f %13.2f %17.2f\n", envs,
                step_frame.size(), reply_bytes, us[0], us[1], us[2], us[3], us[1] / us[0],
                us[2] / us[0], us[3] / us[0]);
  }
  std::filesystem::remove_all(dir);
  return 0;
}
