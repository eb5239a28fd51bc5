#include "engine/group/c10d_group.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <stdexcept>

#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef USE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include "base/thread_name.h"
#include "base/log.h"
#include "base/text.h"

namespace moonseed::engine {
namespace {

std::vector<uint8_t> bytes(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }
std::string text(const std::vector<uint8_t>& b) { return std::string(b.begin(), b.end()); }

std::string this_host() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

std::string key(const char* what, int rank) { return std::string(what) + "/" + std::to_string(rank); }

std::string seconds_text(std::chrono::milliseconds ms) {
  return base::number_text(static_cast<double>(ms.count()) / 1000.0);
}

// A process of this host that has ended: none with that pid, or a zombie
// nobody has reaped yet (a rank is not its parent's to reap).
bool process_gone(int64_t pid) {
  if (::kill(static_cast<pid_t>(pid), 0) != 0) return errno == ESRCH;
  std::FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (f == nullptr) return true;
  char state = '?';
  const int read = std::fscanf(f, "%*d (%*[^)]) %c", &state);
  std::fclose(f);
  return read == 1 && (state == 'Z' || state == 'X');
}

// The first line of a c10d/Gloo error (the rest is a C++ backtrace).
std::string first_line(const std::string& what) { return what.substr(0, what.find('\n')); }

}  // namespace

std::string GroupMember::text() const {
  return "rank " + std::to_string(rank) + " (host " + host + ", pid " + std::to_string(pid) + ")";
}

struct C10dGroup::Watch {
  // Set before the thread starts, then read-only.
  std::function<c10::intrusive_ptr<c10d::Store>()> connect;
  int rank = 0;
  std::vector<GroupMember> members;
  std::string rendezvous;
  std::chrono::milliseconds timeout{0}, beat{0};

  std::atomic<bool> leaving{false};
  std::atomic<bool> done{false};
  base::Mutex mu;
  std::vector<std::chrono::steady_clock::time_point> last_beat GUARDED_BY(mu);
  std::vector<int64_t> beats GUARDED_BY(mu);
  std::chrono::steady_clock::time_point store_answered GUARDED_BY(mu);
  std::string failure GUARDED_BY(mu);
  std::optional<std::string> report GUARDED_BY(mu);           // to publish at the next beat
  std::vector<std::optional<std::string>> reports GUARDED_BY(mu);  // every rank's, as last read
};

C10dGroup::C10dGroup(GroupOptions options)
    : options_(std::move(options)),
      rendezvous_(parse_rendezvous(options_.rendezvous)),
      timeout_(std::chrono::milliseconds(static_cast<int64_t>(std::max(0.1, options_.timeout_s) * 1000))),
      beat_(std::chrono::milliseconds(std::clamp<int64_t>(timeout_.count() / 10, 100, 1000))) {
  if (options_.world_size < 1 || options_.rank < 0 || options_.rank >= options_.world_size) {
    throw std::invalid_argument("learner group: rank " + std::to_string(options_.rank) + " is not in a world of " +
                                std::to_string(options_.world_size));
  }
  const int n = options_.world_size;
  const int64_t pid = options_.pid > 0 ? options_.pid : static_cast<int64_t>(::getpid());
  const std::string where = rendezvous_.tcp ? options_.rendezvous : "the store file " + rendezvous_.path;
  try {
    store_ = connect_store(options_.rank == 0);
  } catch (const std::exception& e) {
    throw GroupError("learner group: rank " + std::to_string(options_.rank) + " cannot " +
                     (options_.rank == 0 && rendezvous_.tcp ? "serve" : "reach") + " the rendezvous at " + where +
                     ": " + first_line(e.what()));
  }
  base::MutexLock lock(store_mu_);
  store_->set(key("member", options_.rank), bytes(this_host() + "\n" + std::to_string(pid)));
  std::vector<std::string> all;
  for (int r = 0; r < n; ++r) all.push_back(key("member", r));
  try {
    store_->wait(all, timeout_);
  } catch (const std::exception&) {
    std::string missing;
    for (int r = 0; r < n; ++r) {
      if (!store_->check({key("member", r)})) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    }
    throw GroupError("learner group: rank(s) " + missing + " of " + std::to_string(n) + " did not join at " + where +
                     " within " + seconds_text(timeout_) + " s (topology.group_timeout_s)");
  }
  for (int r = 0; r < n; ++r) {
    const std::string v = text(store_->get(key("member", r)));
    const size_t nl = v.find('\n');
    members_.push_back(GroupMember{r, v.substr(0, nl), nl == std::string::npos ? 0 : std::stoll(v.substr(nl + 1))});
  }

  std::string bind = options_.bind_host;
  if (bind.empty() && (!rendezvous_.tcp || loopback_host(rendezvous_.host))) bind = "127.0.0.1";
  if (bind.empty()) bind = local_address_towards(rendezvous_.host, rendezvous_.port);
  if (bind.empty()) bind = this_host();
  try {
    gloo_store_ = connect_store(false);
#ifdef USE_C10D_NCCL
    if (options_.device == "cuda") {
      auto nccl = c10d::ProcessGroupNCCL::Options::create();
      nccl->timeout = timeout_;
      process_group_ = c10::make_intrusive<c10d::ProcessGroupNCCL>(
          c10::make_intrusive<c10d::PrefixStore>("nccl", gloo_store_), options_.rank, n, nccl);
    }
#endif
    if (!process_group_) {
      auto gloo = c10d::ProcessGroupGloo::Options::create(timeout_);
      gloo->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(bind));
      gloo->threads = 1;
      process_group_ = c10::make_intrusive<c10d::ProcessGroupGloo>(
          c10::make_intrusive<c10d::PrefixStore>("gloo", gloo_store_), options_.rank, n, gloo);
    }
  } catch (const std::exception& e) {
    throw GroupError("learner group: rank " + std::to_string(options_.rank) + " could not connect to the others (" +
                     bind + "): " + first_line(e.what()));
  }
  watch_ = std::make_shared<Watch>();
  watch_->connect = [rendezvous = rendezvous_, timeout = timeout_] {
    if (!rendezvous.tcp) {
      return c10::intrusive_ptr<c10d::Store>(
          c10::make_intrusive<c10d::FileStore>(rendezvous.path, std::numeric_limits<int>::max()));
    }
    c10d::TCPStoreOptions o;
    o.port = static_cast<uint16_t>(rendezvous.port);
    o.isServer = false;
    o.waitWorkers = false;
    o.timeout = timeout;
    return c10::intrusive_ptr<c10d::Store>(c10::make_intrusive<c10d::TCPStore>(rendezvous.host, o));
  };
  watch_->rank = options_.rank;
  watch_->members = members_;
  watch_->rendezvous = options_.rendezvous;
  watch_->timeout = timeout_;
  watch_->beat = beat_;
  {
    base::MutexLock watch_lock(watch_->mu);
    watch_->last_beat.assign(static_cast<size_t>(n), std::chrono::steady_clock::now());
    watch_->beats.assign(static_cast<size_t>(n), -1);
    watch_->store_answered = std::chrono::steady_clock::now();
    watch_->reports.assign(static_cast<size_t>(n), std::nullopt);
  }
  watchdog_ = std::thread([w = watch_] {
    base::set_thread_name("ms-group-watch");
    watch(w);
  });
}

C10dGroup::~C10dGroup() { leave(/*wait_for_others=*/false); }

c10::intrusive_ptr<c10d::Store> C10dGroup::connect_store(bool serve) const {
  // FileStore unlinks its file once "numWorkers" of its instances have been
  // destroyed, whichever they were; a rank holds several (one per thread), so
  // the count is never reached (the next start of the run replaces the file).
  if (!rendezvous_.tcp) return c10::make_intrusive<c10d::FileStore>(rendezvous_.path, std::numeric_limits<int>::max());
  c10d::TCPStoreOptions o;
  o.port = static_cast<uint16_t>(rendezvous_.port);
  o.isServer = serve;
  o.numWorkers = c10::nullopt;
  o.waitWorkers = false;
  o.timeout = timeout_;
  return c10::make_intrusive<c10d::TCPStore>(rendezvous_.host, o);
}

StepAgreement C10dGroup::agree(const StepProposal& p) {
  std::vector<at::Tensor> t{torch::tensor({static_cast<double>(p.frames), p.stop ? 1.0 : 0.0, p.paused ? 1.0 : 0.0,
                                           static_cast<double>(p.config_version), p.has_batch ? 1.0 : 0.0,
                                           p.checkpoint ? 1.0 : 0.0},
                                          torch::kFloat64)
                               .to(collective_device())};
  try {
    process_group_->allreduce(t)->wait(timeout_);
  } catch (const std::exception& e) {
    throw GroupError(blame(e.what()));
  }
  const torch::Tensor sums = t[0].to(torch::kCPU);
  const double* v = sums.data_ptr<double>();
  StepAgreement a;
  a.group_frames = static_cast<int64_t>(std::llround(v[0]));
  a.stop = v[1] > 0;
  a.paused = v[2] > 0;
  a.config_version = static_cast<uint64_t>(std::llround(v[3]));
  a.batches = static_cast<int>(std::llround(v[4]));
  a.checkpoint = v[5] > 0;
  batches_ = a.batches;
  return a;
}

void C10dGroup::average_gradients(const std::vector<at::Tensor>& params) {
  if (params.empty()) return;
  torch::NoGradGuard no_grad;
  int64_t total = 0;
  for (const at::Tensor& p : params) {
    if (!p.grad().defined()) const_cast<at::Tensor&>(p).mutable_grad() = torch::zeros_like(p);
    if (p.scalar_type() != params.front().scalar_type()) {
      throw std::invalid_argument("learner group: parameters of different dtypes (" +
                                  std::string(c10::toString(p.scalar_type())) + ", " +
                                  c10::toString(params.front().scalar_type()) + ") cannot be averaged in one buffer");
    }
    total += p.numel();
  }
  if (!flat_.defined() || flat_.numel() != total || flat_.device() != params.front().device()) {
    flat_ = torch::empty({total}, params.front().options());
  }
  int64_t offset = 0;
  for (const at::Tensor& p : params) {
    flat_.narrow(0, offset, p.numel()).copy_(p.grad().reshape({-1}));
    offset += p.numel();
  }
  std::vector<at::Tensor> t{flat_};
  try {
    process_group_->allreduce(t)->wait(timeout_);
  } catch (const std::exception& e) {
    throw GroupError(blame(e.what()));
  }
  // The mean over the ranks that brought a batch; the others brought zeros.
  flat_.div_(static_cast<double>(std::max(1, batches_)));
  offset = 0;
  for (const at::Tensor& p : params) {
    p.grad().copy_(flat_.narrow(0, offset, p.numel()).view_as(p.grad()));
    offset += p.numel();
  }
}

void C10dGroup::after_step(int64_t step, uint64_t weights_hash) {
  if (options_.check_every <= 0 || step % options_.check_every != 0) return;
  const int n = options_.world_size;
  const torch::Device device = collective_device();
  std::vector<at::Tensor> in{torch::tensor({static_cast<int64_t>(weights_hash)}, torch::kInt64).to(device)};
  std::vector<std::vector<at::Tensor>> out(1);
  for (int r = 0; r < n; ++r) out[0].push_back(torch::empty({1}, torch::TensorOptions(torch::kInt64).device(device)));
  try {
    process_group_->allgather(out, in)->wait(timeout_);
  } catch (const std::exception& e) {
    throw GroupError(blame(e.what()));
  }
  const int64_t reference = out[0][0].item<int64_t>();
  std::string differ;
  for (int r = 1; r < n; ++r) {
    if (out[0][static_cast<size_t>(r)].item<int64_t>() != reference) {
      differ += (differ.empty() ? "" : ", ") + members_[static_cast<size_t>(r)].text();
    }
  }
  if (!differ.empty()) {
    throw GroupError("learner group: the weights of " + differ + " differ from rank 0's at optimizer step " +
                     std::to_string(step) + " (their hashes differ): the ranks no longer train one model");
  }
}

torch::Device C10dGroup::collective_device() const {
#ifdef USE_C10D_NCCL
  if (options_.device == "cuda") return torch::Device(torch::kCUDA);  // NCCL's collectives take CUDA tensors
#endif
  return torch::Device(torch::kCPU);
}

void C10dGroup::broadcast_from_rank0(std::string& bytes) {
  const torch::Device device = collective_device();
  c10d::BroadcastOptions from_rank0;
  from_rank0.rootRank = 0;
  try {
    std::vector<at::Tensor> size{torch::tensor({static_cast<int64_t>(bytes.size())}, torch::kInt64).to(device)};
    process_group_->broadcast(size, from_rank0)->wait(timeout_);
    const int64_t n = size[0].item<int64_t>();
    if (n == 0) {
      bytes.clear();
      return;
    }
    at::Tensor data = torch::empty({n}, torch::kUInt8);
    if (rank() == 0) std::memcpy(data.data_ptr<uint8_t>(), bytes.data(), static_cast<size_t>(n));
    std::vector<at::Tensor> payload{data.to(device)};
    process_group_->broadcast(payload, from_rank0)->wait(timeout_);
    if (rank() != 0) {
      data = payload[0].to(torch::kCPU);
      bytes.assign(reinterpret_cast<const char*>(data.data_ptr<uint8_t>()), static_cast<size_t>(n));
    }
  } catch (const GroupError&) {
    throw;
  } catch (const std::exception& e) {
    throw GroupError(blame(e.what()));
  }
}

void C10dGroup::put(const std::string& k, const std::string& value) {
  base::MutexLock lock(store_mu_);
  store_->set(k, bytes(value));
}

std::string C10dGroup::get(const std::string& k) {
  base::MutexLock lock(store_mu_);
  try {
    store_->wait({k}, timeout_);
    return text(store_->get(k));
  } catch (const std::exception& e) {
    throw GroupError("learner group: rank " + std::to_string(options_.rank) + " could not read \"" + k +
                     "\" from the rendezvous store within " + seconds_text(timeout_) + " s: " + first_line(e.what()));
  }
}

void C10dGroup::publish_report(const std::string& json) {
  base::MutexLock lock(watch_->mu);
  watch_->report = json;
}

std::vector<std::optional<std::string>> C10dGroup::reports() {
  base::MutexLock lock(watch_->mu);
  return watch_->reports;
}

std::string C10dGroup::failure() const {
  base::MutexLock lock(watch_->mu);
  if (watch_->failure.empty() && !watch_->leaving.load() &&
      std::chrono::steady_clock::now() - watch_->store_answered > timeout_ + beat_) {
    watch_->failure = options_.rank == 0 && rendezvous_.tcp
                          ? "learner group: rank 0's own rendezvous store has not answered for " +
                                seconds_text(timeout_) + " s"
                          : "learner group: rank " + std::to_string(options_.rank) + " has had no answer from the "
                                "rendezvous store at " + options_.rendezvous + " (" + members_[0].text() +
                                ") for " + seconds_text(timeout_) + " s (topology.group_timeout_s): cut off";
  }
  return watch_->failure;
}

void C10dGroup::leave(bool wait_for_others) {
  if (left_) return;
  left_ = true;
  watch_->leaving.store(true);
  // A watchdog stuck in a store call that never returns is left behind: it owns only its state.
  const auto give_up = std::chrono::steady_clock::now() + beat_ * 3;
  while (!watch_->done.load() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  bool store_answers = false;
  {
    base::MutexLock lock(watch_->mu);
    store_answers = std::chrono::steady_clock::now() - watch_->store_answered < timeout_;
  }
  if (watch_->done.load()) {
    watchdog_.join();
  } else {
    watchdog_.detach();
  }
  if (!store_answers) return;  // saying goodbye to a store that does not answer would block
  base::MutexLock lock(store_mu_);
  try {
    store_->set(key("left", options_.rank), bytes("1"));
    if (options_.rank == 0 && rendezvous_.tcp && wait_for_others) {
      // The store lives in this process: the others read it until they leave.
      std::vector<std::string> all;
      for (int r = 1; r < options_.world_size; ++r) all.push_back(key("left", r));
      if (!all.empty()) store_->wait(all, timeout_);
    }
  } catch (const std::exception& e) {
    base::log_warning("learner group: rank " + std::to_string(options_.rank) +
                      " left without hearing from every rank: " + first_line(e.what()));
  }
}

void C10dGroup::watch(std::shared_ptr<Watch> w) {
  c10::intrusive_ptr<c10d::Store> client;
  const int n = static_cast<int>(w->members.size());
  while (!w->leaving.load()) {
    try {
      if (!client) client = w->connect();
      std::optional<std::string> report;
      {
        base::MutexLock lock(w->mu);
        report.swap(w->report);
      }
      if (report) client->set(key("report", w->rank), bytes(*report));
      client->add(key("beat", w->rank), 1);
      std::vector<std::optional<std::string>> reports(static_cast<size_t>(n));
      for (int r = 0; r < n; ++r) {
        if (client->check({key("report", r)})) reports[static_cast<size_t>(r)] = text(client->get(key("report", r)));
        if (r == w->rank) continue;
        const int64_t beats = client->add(key("beat", r), 0);
        const auto now = std::chrono::steady_clock::now();
        const size_t i = static_cast<size_t>(r);
        base::MutexLock lock(w->mu);
        if (beats != w->beats[i]) {
          w->beats[i] = beats;
          w->last_beat[i] = now;
        } else if (now - w->last_beat[i] > w->timeout && w->failure.empty()) {
          lock.unlock();
          const bool left = client->check({key("left", r)});
          lock.lock();
          if (!left && w->failure.empty()) {
            w->failure = "learner group: " + w->members[i].text() + " has not answered for " +
                         seconds_text(w->timeout) + " s (topology.group_timeout_s): killed, stopped or cut off";
          }
        }
      }
      base::MutexLock lock(w->mu);
      w->store_answered = std::chrono::steady_clock::now();
      w->reports = std::move(reports);
    } catch (const std::exception& e) {
      if (w->leaving.load()) break;
      base::MutexLock lock(w->mu);
      if (w->failure.empty()) {
        w->failure = w->rank == 0 ? "learner group: rank 0 lost its own rendezvous store: " + first_line(e.what())
                                  : "learner group: lost the rendezvous store that " + w->members[0].text() +
                                        " serves at " + w->rendezvous + ": " + first_line(e.what());
      }
      client.reset();
    }
    // Sleeps one beat, a little at a time, so that leave() does not wait for it.
    for (auto slept = std::chrono::milliseconds(0); slept < w->beat && !w->leaving.load();
         slept += std::chrono::milliseconds(20)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  w->done.store(true);
}

std::string C10dGroup::blame(const std::string& what) {
  const GroupMember& self = members_[static_cast<size_t>(options_.rank)];
  std::string gone;
  for (const GroupMember& m : members_) {
    if (m.rank == self.rank || m.host != self.host || m.pid <= 0) continue;
    if (process_gone(m.pid)) gone += (gone.empty() ? "" : ", ") + m.text();
  }
  if (!gone.empty()) {
    return "learner group: " + gone + " is gone (its process exited or was killed); rank " +
           std::to_string(options_.rank) + "'s round failed: " + first_line(what);
  }
  // Elsewhere: whose heartbeat stops in the next few beats.
  const auto asked = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(beat_ * 3);
  std::string silent;
  {
    base::MutexLock lock(watch_->mu);
    if (!watch_->failure.empty()) return watch_->failure + " (" + first_line(what) + ")";
    for (const GroupMember& m : members_) {
      if (m.rank != self.rank && watch_->last_beat[static_cast<size_t>(m.rank)] < asked) {
        silent += (silent.empty() ? "" : ", ") + m.text();
      }
    }
  }
  if (!silent.empty()) {
    return "learner group: " + silent + " stopped answering; rank " + std::to_string(options_.rank) +
           "'s round failed: " + first_line(what);
  }
  return "learner group: a round of rank " + std::to_string(options_.rank) + " failed: " + first_line(what);
}

}  // namespace moonseed::engine
