#include "actor/actor_loop.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>
#include <variant>
#include <vector>

#include "base/log.h"
#include "base/text.h"
#include "envs/env.h"
#include "envs/env_set.h"
#include "envs/wrappers/wrappers.h"
#include "rpc/client.h"
#include "rpc/messages.h"

namespace moonseed::actor {
namespace {

using Clock = std::chrono::steady_clock;

std::unique_ptr<envs::EnvSet> make_builtin_envs(const rpc::Welcome& welcome) {
  std::vector<std::unique_ptr<envs::Env>> envs;
  for (uint32_t i = 0; i < welcome.num_envs; ++i) {
    envs.push_back(envs::make_env(welcome.env_id, welcome.env_options, welcome.env_files));
  }
  return std::make_unique<envs::EnvArray>(std::move(envs));
}

// One group of consecutive envs with its reusable outgoing message.
struct EnvGroup {
  uint32_t begin = 0;
  uint32_t count = 0;
  uint64_t sent = 0;            // messages sent, for seq numbers
  uint64_t steps = 0;           // observations of this connection: 0 is the reset one
  uint64_t config_version = 0;  // the config this group runs, stamped on its batches
  bool configured = false;      // config_version was applied (hook told)
  rpc::StepBatch batch;         // reused: no allocation per step
  std::vector<uint8_t> ended;   // per env: the last observation sent was final
};

class Actor {
 public:
  Actor(const ActorOptions& options, const std::atomic<bool>& stop) : options_(options), stop_(stop) {}

  ActorExit run() {
    auto give_up_at = Clock::now() + seconds(options_.reconnect_for_s);
    double backoff_s = 0.1;
    while (!stop_) {
      std::optional<rpc::Client> client;
      try {
        client.emplace(rpc::Client::connect(
            address(), std::chrono::duration_cast<std::chrono::milliseconds>(seconds(options_.connect_timeout_s))));
      } catch (const std::exception& e) {
        if (!placed_at_.empty()) {
          // The rank the group placed this actor on is gone: the group places it again.
          log("rank at " + placed_at_ + " unreachable (" + e.what() + "), back to " + options_.address);
          placed_at_.clear();
        }
        if (Clock::now() >= give_up_at) {
          log("learner at " + options_.address + " unreachable, giving up: " + e.what());
          return ActorExit::kUnreachable;
        }
        std::this_thread::sleep_for(seconds(backoff_s));
        backoff_s = std::min(backoff_s * 2, 2.0);
        continue;
      }
      std::optional<ActorExit> exit = serve(*client);
      if (exit) return *exit;
      if (handshake_ == Handshake::kRedirected) continue;  // to the rank it was sent to, at once
      if (handshake_ == Handshake::kWelcomed) {
        // A learner that served this actor: the next one gets the whole time again.
        backoff_s = 0.1;
        give_up_at = Clock::now() + seconds(options_.reconnect_for_s);
        continue;
      }
      // Connected but never welcomed (a proxy whose learner is gone accepts and drops every
      // connection; a busy learner): the same backoff and time limit as a refused connect.
      if (Clock::now() >= give_up_at) {
        log("no learner at " + options_.address + " welcomed this actor, giving up");
        return ActorExit::kUnreachable;
      }
      std::this_thread::sleep_for(seconds(backoff_s));
      backoff_s = std::min(backoff_s * 2, 2.0);
    }
    return ActorExit::kStopped;
  }

 private:
  static Clock::duration seconds(double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  }

  // Where to connect: the rank a learner group placed this actor on, else the address given.
  const std::string& address() const { return placed_at_.empty() ? options_.address : placed_at_; }

  // Lines carry the learner's words (a Bye's reason, a refusal): printed safe for a terminal.
  void log(const std::string& line) const {
    if (options_.verbose) base::log(base::Severity::kInfo, "actor " + std::to_string(actor_id_), base::printable(line));
  }

  // One connection's life. Returns an exit when the actor should stop, nullopt
  // to reconnect.
  std::optional<ActorExit> serve(rpc::Client& client) {
    rpc::Hello hello;
    hello.actor_id = actor_id_ >= 0 ? actor_id_ : options_.actor_id;
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    hello.host = host;
    hello.pid = static_cast<int32_t>(::getpid());
    hello.auth_token = options_.auth_token;
    // Placed once: the rank it was sent to keeps it (a Hello there asks for no placement).
    hello.any_rank = options_.any_rank && placed_at_.empty();
    rpc::Welcome welcome;
    handshake_ = Handshake::kFailed;
    try {
      welcome = client.hello(hello);
    } catch (const rpc::Redirected& e) {
      std::string why;
      if (!hello.any_rank || !rpc::parse_address(e.address(), &why)) {
        log("the learner sent this actor to " + e.address().substr(0, 200) + ", which it does not take: " +
            (hello.any_rank ? why : "it asked for no placement"));
        return std::nullopt;
      }
      placed_at_ = e.address();
      handshake_ = Handshake::kRedirected;
      log(e.what());
      return std::nullopt;
    } catch (const rpc::HandshakeRefused& e) {
      if (!placed_at_.empty()) {
        // The rank it was sent to filled up meanwhile: the group places it again.
        log("refused by the rank at " + placed_at_ + " (" + e.reason() + "), back to " + options_.address);
        placed_at_.clear();
        return std::nullopt;
      }
      log("refused by the learner: " + e.reason());
      return ActorExit::kRefused;
    } catch (const std::exception& e) {
      log(std::string("handshake failed: ") + e.what());
      return std::nullopt;
    }
    actor_id_ = welcome.actor_id;
    handshake_ = Handshake::kWelcomed;
    try {
      return serve_welcomed(client, welcome);
    } catch (const std::exception& e) {
      // Fatal here (a spec that differs from the learner's, a reset that failed): the learner's
      // log says why before the actor exits with the message.
      client.close(e.what());
      throw;
    }
  }

  std::optional<ActorExit> serve_welcomed(rpc::Client& client, const rpc::Welcome& welcome) {
    prepare(welcome);
    log("connected to " + address() + " (run " + welcome.run_id + ", " +
        std::to_string(set_->size()) + " envs of " + welcome.env_id + ")");

    // Every connection starts every env afresh: the learner dropped whatever
    // partial unrolls it held for us.
    std::optional<ActorExit> over;  // how the connection ends when a send fails
    for (auto& group : groups_) {
      start_group(group);
      if (!send(client, group, over)) return over;
    }
    while (!stop_) {
      rpc::Incoming incoming = client.receive(std::chrono::milliseconds(200));
      if (auto* actions = std::get_if<rpc::ActionBatch>(&incoming)) {
        EnvGroup* group = group_of(actions->seq);
        if (!group) {
          log("action batch with unknown seq " + std::to_string(actions->seq) + ", reconnecting");
          return std::nullopt;
        }
        if (!step_group(*group, *actions)) return std::nullopt;
        if (!send(client, *group, over)) return over;
      } else if (auto* bye = std::get_if<rpc::Bye>(&incoming)) {
        return on_bye(*bye);
      } else if (auto* update = std::get_if<rpc::ConfigUpdate>(&incoming)) {
        // Taken by each group at its next unroll boundary; a repeat is ignored.
        if (update->config_version > latest_version_) {
          latest_version_ = update->config_version;
          latest_payload_.swap(update->payload);
        }
      } else if (std::holds_alternative<rpc::Closed>(incoming)) {
        log("connection lost: " + std::get<rpc::Closed>(incoming).reason);
        return std::nullopt;
      }
      // rpc::Timeout: loop to check `stop_`.
    }
    client.close();
    return ActorExit::kStopped;
  }

  // Creates the envs on the first Welcome and checks later ones describe the same run.
  void prepare(const rpc::Welcome& welcome) {
    if (set_) {
      if (welcome.env_id != welcome_.env_id || welcome.num_envs != welcome_.num_envs ||
          welcome.env_spec != welcome_.env_spec || welcome.env_files != welcome_.env_files ||
          welcome.env_wrappers != welcome_.env_wrappers) {
        set_.reset();  // a different run: start over
      } else {
        welcome_ = welcome;
        take_config(welcome);
        return;
      }
    }
    welcome_ = welcome;
    take_config(welcome);
    if (welcome.num_envs == 0) throw std::runtime_error("learner assigned 0 envs");
    set_ = options_.make_envs ? options_.make_envs(welcome) : make_builtin_envs(welcome);
    if (!set_ || set_->size() != welcome.num_envs) {
      throw std::runtime_error("the actor's env factory made " + std::to_string(set_ ? set_->size() : 0) +
                               " envs, the learner assigned " + std::to_string(welcome.num_envs));
    }
    // env.wrappers, for every source of envs (docs/env-wrappers.md); the Welcome's spec is the wrapped one.
    try {
      set_ = envs::wrap(std::move(set_), envs::parse_wrapper_list(welcome.env_wrappers), welcome.seed);
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(std::string("cannot apply the learner's env wrappers: ") + e.what());
    }
    if (set_->spec() != welcome.env_spec) {
      throw std::runtime_error("env spec mismatch: this actor builds " + set_->spec().describe() +
                               " but the learner expects " + welcome.env_spec.describe());
    }
    seeded_ = false;
    obs_bytes_ = static_cast<size_t>(welcome.env_spec.observation.byte_size());
    action_bytes_ = static_cast<size_t>(welcome.env_spec.action.byte_size());
    uint32_t num_groups = std::max<uint32_t>(1, std::min(welcome.num_groups, welcome.num_envs));
    groups_.assign(num_groups, EnvGroup{});
    for (uint32_t g = 0, begin = 0; g < num_groups; ++g) {
      uint32_t count = welcome.num_envs / num_groups + (g < welcome.num_envs % num_groups ? 1 : 0);
      EnvGroup& group = groups_[g];
      group.begin = begin;
      group.count = count;
      group.batch.env_begin = begin;
      group.batch.count = count;
      group.batch.observations.resize(count * obs_bytes_);
      group.batch.rewards.resize(count);
      group.batch.flags.resize(count);
      group.ended.assign(count, 0);
      begin += count;
    }
    if (options_.hook) options_.hook->start(welcome.env_spec, num_groups);
  }

  // The Welcome's config is the newest: every group takes it when it starts.
  void take_config(const rpc::Welcome& welcome) {
    unroll_length_ = welcome.unroll_length;
    latest_version_ = welcome.config_version;
    latest_payload_ = welcome.payload;
  }

  uint32_t index_of(const EnvGroup& group) const { return static_cast<uint32_t>(&group - groups_.data()); }

  // The group runs the newest config from its next step on.
  void configure(EnvGroup& group) {
    group.config_version = latest_version_;
    group.configured = true;
    if (options_.hook) report(group, options_.hook->apply_config(index_of(group), latest_version_, latest_payload_));
  }

  // A hook's problem: logged here, sent to the learner before the group's next batch.
  void report(const EnvGroup& group, std::string problem) {
    if (problem.empty()) return;
    log(problem);
    notices_.push_back(rpc::ActorNotice{group.config_version, std::move(problem)});
  }

  // Resets every env of the group; the first connection seeds them.
  void start_group(EnvGroup& group) {
    ops_.assign(group.count, envs::EnvOp::kReset);
    seeds_.clear();
    if (!seeded_) {
      for (uint32_t i = 0; i < group.count; ++i) seeds_.push_back(welcome_.seed + group.begin + i);
    }
    run_envs(group, nullptr);
    group.batch.env_rewards.clear();
    if (&group == &groups_.back()) seeded_ = true;
    // A connection starts the learner's unrolls afresh: a boundary.
    group.steps = 0;
    if (!group.configured || group.config_version != latest_version_) configure(group);
    // The hook sees every observation, these too (their rewards are 0 and unused),
    // so it knows each env's observation before its first action.
    hook_step(group);
  }

  // The hook's turn at the group's step, before its batch goes out.
  void hook_step(EnvGroup& group) {
    rpc::StepBatch& b = group.batch;
    b.env_rewards.clear();
    if (options_.hook) {
      const uint32_t first_env = static_cast<uint32_t>(actor_id_) * welcome_.num_envs + group.begin;
      report(group, options_.hook->on_step(index_of(group), group.count, first_env, b.rewards.data(),
                                           b.observations.data(), b.flags.data()));
    }
    // The env's own rewards (run_envs) go along only when shaping or a wrapper changed one of them
    // (compared bit for bit: an env's NaN, which the learner refuses anyway, is not a change).
    if (std::memcmp(env_rewards_.data(), b.rewards.data(), b.rewards.size() * sizeof(float)) != 0) {
      b.env_rewards.swap(env_rewards_);
    }
  }

  // Runs ops_ (and seeds_, when set) on the group's envs into its batch. A step that failed
  // ends that env's episode (sent as truncated, the env resets at its next turn), and the
  // learner's operator hears why.
  void run_envs(EnvGroup& group, const uint8_t* actions) {
    rpc::StepBatch& b = group.batch;
    envs::EnvSetCall call;
    call.begin = group.begin;
    call.count = group.count;
    call.ops = ops_.data();
    call.actions = actions;
    call.seeds = seeds_.empty() ? nullptr : seeds_.data();
    call.observations = b.observations.data();
    call.rewards = b.rewards.data();
    call.flags = b.flags.data();
    env_rewards_.assign(group.count, std::nanf(""));  // a wrapper that clips rewards keeps the env's here
    call.env_rewards = env_rewards_.data();
    errors_.clear();
    set_->run(call, errors_);
    for (uint32_t i = 0; i < group.count; ++i) {
      if (std::isnan(env_rewards_[i])) env_rewards_[i] = b.rewards[i];
    }
    for (uint32_t i = 0; i < group.count; ++i) group.ended[i] = (b.flags[i] & (envs::kTerminated | envs::kTruncated)) != 0;
    for (const envs::EnvError& error : errors_) {
      report(group, "env " + std::to_string(error.env) + ": step failed: " + error.message +
                        " (its episode ends as truncated; the env resets)");
    }
  }

  bool step_group(EnvGroup& group, const rpc::ActionBatch& actions) {
    if (actions.actions.size() != group.count * action_bytes_) {
      log("action batch has " + std::to_string(actions.actions.size()) + " bytes, expected " +
          std::to_string(group.count * action_bytes_) + ", reconnecting");
      return false;
    }
    // An env whose last observation was final starts its next episode; the action for it is ignored.
    ops_.resize(group.count);
    for (uint32_t i = 0; i < group.count; ++i) ops_[i] = group.ended[i] ? envs::EnvOp::kReset : envs::EnvOp::kStep;
    seeds_.clear();
    run_envs(group, actions.actions.data());
    ++group.steps;
    hook_step(group);
    // These rewards close the previous unroll; the new config shapes the next one.
    if (group.config_version != latest_version_ && (unroll_length_ == 0 || group.steps % unroll_length_ == 0)) {
      configure(group);
    }
    return true;
  }

  // The connection ends on the learner's Bye: nullopt (connect again) when it asks to reconnect.
  std::optional<ActorExit> on_bye(const rpc::Bye& bye) {
    if (bye.reconnect) {
      // The learner let this connection go (it took us for hung): start afresh.
      log("learner closed this connection (" + bye.reason + "), reconnecting");
      return std::nullopt;
    }
    log("learner said bye: " + bye.reason);
    return ActorExit::kBye;
  }

  // Sends the notices waiting and the group's batch. False when the connection is over; `over`
  // then says how serve_welcomed ends.
  bool send(rpc::Client& client, EnvGroup& group, std::optional<ActorExit>& over) {
    group.batch.seq = (group.sent++ << 8) | index_of(group);
    group.batch.config_version = group.config_version;
    try {
      for (const rpc::ActorNotice& notice : notices_) client.send(notice);
      notices_.clear();
      client.send(group.batch);
      return true;
    } catch (const std::exception& e) {
      // The learner may have said Bye and closed first: at the end of a run, a proxy between us
      // that closes both ways once the learner has (or a learner whose close grace ran out)
      // resets a connection the actor still sends on, and the reset fails this send while the
      // Bye waits unread. That Bye is honoured as if read in turn, so a run's end is not taken for a lost
      // learner (reconnecting for --reconnect-for, then exiting "unreachable").
      if (std::optional<rpc::Bye> bye = client.unread_bye()) {
        over = on_bye(*bye);
      } else {
        log(std::string("send failed: ") + e.what());
        over = std::nullopt;
      }
      return false;
    }
  }

  EnvGroup* group_of(uint64_t seq) {
    uint64_t g = seq & 0xff;
    return g < groups_.size() ? &groups_[g] : nullptr;
  }

  const ActorOptions& options_;
  std::string placed_at_;  // the rank of a learner group this actor was sent to ("": none)
  // How the last connection's handshake went: run() paces its reconnects by it.
  enum class Handshake { kFailed, kRedirected, kWelcomed };
  Handshake handshake_ = Handshake::kFailed;
  const std::atomic<bool>& stop_;
  int32_t actor_id_ = -1;
  rpc::Welcome welcome_;
  // The newest config heard of (Welcome or ConfigUpdate); groups take it at boundaries.
  uint64_t latest_version_ = 0;
  std::string latest_payload_;
  uint32_t unroll_length_ = 0;
  std::vector<rpc::ActorNotice> notices_;  // waiting to be sent
  std::vector<float> env_rewards_;         // the env's own rewards of a step, before wrappers and the hook
  std::unique_ptr<envs::EnvSet> set_;
  std::vector<envs::EnvOp> ops_;       // per env of the group being run
  std::vector<uint64_t> seeds_;        // empty, or the seeds of a first connection's resets
  std::vector<envs::EnvError> errors_;
  std::vector<EnvGroup> groups_;
  size_t obs_bytes_ = 0;
  size_t action_bytes_ = 0;
  bool seeded_ = false;
};

}  // namespace

ActorExit run_actor(const ActorOptions& options, const std::atomic<bool>& stop) {
  return Actor(options, stop).run();
}

const char* to_string(ActorExit exit) {
  switch (exit) {
    case ActorExit::kBye: return "bye";
    case ActorExit::kStopped: return "stopped";
    case ActorExit::kUnreachable: return "unreachable";
    case ActorExit::kRefused: return "refused";
  }
  return "?";
}

}  // namespace moonseed::actor
