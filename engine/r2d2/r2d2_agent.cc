// R2D2 behind engine/learner/agent.h: a thin adapter over R2d2Core (engine/r2d2/r2d2_core.h),
// which keeps each env slot's LSTM state and epsilon, records sequences into
// the prioritized replay and learns from it. This file maps the experiment's
// config onto the core, adds the waits the learner's threads loop on, and
// writes the checkpoint: online and target nets with the optimizer in the
// model file, the replay beside it (PATH.replay), written before the model file.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "base/mutex.h"
#include "base/text.h"
#include "base/log.h"
#include "engine/learner/weights_hash.h"
#include "engine/learner/agent.h"
#include "engine/learner/agent_registry.h"
#include "engine/r2d2/config/r2d2_config.h"
#include "engine/r2d2/r2d2_core.h"
#include "models/q_net.h"

namespace moonseed::engine {
namespace {

constexpr std::chrono::milliseconds kWaitSlice{100};  // how often a wait looks at close()

R2d2CoreConfig core_config(const ExperimentConfig& config) {
  const R2d2Config& r = config.section<R2d2Config>();
  R2d2CoreConfig c;
  c.trainer.burn_in = r.burn_in;
  c.trainer.trace = r.trace;
  c.trainer.n_step.n = r.n_step;
  c.trainer.n_step.gamma = r.gamma;
  c.trainer.n_step.eps = r.rescale_eps;
  c.trainer.eta = r.eta;
  c.trainer.target_period = r.target_period;
  c.trainer.max_grad_norm = config.optimizer.max_grad_norm;
  c.replay.capacity = r.capacity;
  c.replay.period = r.period;
  c.replay.priority_exponent = r.priority_exponent;
  c.replay.importance_exponent = r.importance_exponent;
  c.replay.seed = config.seed;
  c.limiter.samples_per_insert = r.samples_per_insert;
  c.limiter.min_size_to_sample = r.min_fill;
  // Sampling asks for a whole batch at once, so the limiter must let it run
  // that far ahead; twice that keeps both sides from waiting on every step.
  c.limiter.error_buffer = 2.0 * std::max<double>(r.batch, std::ceil(r.samples_per_insert));
  c.batch = r.batch;
  c.net = r2d2_net_spec(config);
  c.optimizer = config.optimizer;
  c.epsilon_base = r.epsilon_base;
  c.epsilon_alpha = r.epsilon_alpha;
  c.eval_slots = evaluation_slots(config);
  c.eval_epsilon = r.eval_epsilon;
  c.acting_priorities = r.insert_priorities != "learner";
  c.seed = config.seed;
  return c;
}

// The two nets one checkpoint holds, as one module: "online.*" and "target.*".
struct NetPair : torch::nn::Module {
  NetPair(models::QNet online, models::QNet target) {
    register_module("online", std::move(online));
    register_module("target", std::move(target));
  }
};

// Evaluation envs: their own LSTM states, acting with the online net.
class R2d2EvalPolicy : public EvalPolicy {
 public:
  R2d2EvalPolicy(R2d2Core& core, int n, double epsilon, torch::Device device, uint64_t seed)
      : core_(core),
        device_(device),
        acting_(std::vector<double>(static_cast<size_t>(n), epsilon), core.online()->state_size(), device, seed),
        slots_(static_cast<size_t>(n)),
        prev_action_(torch::full({n}, -1, torch::kInt64)) {
    for (int i = 0; i < n; ++i) slots_[static_cast<size_t>(i)] = i;
  }

  torch::Tensor act(const torch::Tensor& obs, const std::vector<float>& rewards, bool first) override {
    const int64_t n = static_cast<int64_t>(slots_.size());
    torch::Tensor prev_reward = torch::from_blob(const_cast<float*>(rewards.data()), {n}, torch::kFloat32).clone();
    if (first) {
      prev_action_.fill_(-1);
      prev_reward.zero_();
    }
    const torch::Tensor reset = torch::full({n}, first ? 1 : 0, torch::kUInt8);
    ActingDecision d;
    {
      base::ReaderMutexLock weights(core_.weights_mutex());
      d = acting_.act(*core_.online(), slots_, obs.to(device_), prev_action_, prev_reward, reset);
    }
    prev_action_ = d.actions.clone();
    return d.actions.to(torch::kInt32).contiguous();
  }

 private:
  R2d2Core& core_;
  torch::Device device_;
  RecurrentActing acting_;
  std::vector<int64_t> slots_;
  torch::Tensor prev_action_;  // [n] int64, -1 before an episode's first action
};

class R2d2Agent : public Agent {
 public:
  R2d2Agent(const ExperimentConfig& config, const envs::EnvSpec& spec, torch::Device device)
      : device_(device),
        spec_(spec),
        eval_slot_(evaluation_slots(config)),
        record_length_(config.section<R2d2Config>().period),
        eval_epsilon_(config.section<R2d2Config>().eval_epsilon),
        trace_(config.section<R2d2Config>().trace),
        batch_(config.section<R2d2Config>().batch),
        core_(core_config(config), spec, config.topology.actors * config.topology.envs_per_actor, device),
        exploration_{config.section<R2d2Config>().epsilon_base, config.section<R2d2Config>().epsilon_alpha} {}

  ~R2d2Agent() override { close(); }

  bool wait_for_room() override {
    while (!core_.wait_for_room(kWaitSlice)) {
      if (closed_.load()) return false;
    }
    return true;
  }

  void observe(int slot, const uint8_t* obs, float reward, uint8_t flags, uint64_t config_version,
               float env_reward) override {
    core_.observe(slot, obs, reward, flags, env_reward);
    if (record_store_ && !eval_slot_[static_cast<size_t>(slot)]) {
      // A full recorder queue under "backpressure" holds the inference thread here.
      if (UnrollPtr done = record_store_->observe(slot, obs, reward, flags, config_version, env_reward)) {
        recorder_->offer(std::move(done));
      }
    }
  }

  torch::Tensor act(const std::vector<int64_t>& slots, const torch::Tensor& obs, int64_t version) override {
    if (exploration_changed_.exchange(false)) {
      base::MutexLock lock(exploration_mu_);
      core_.set_exploration(exploration_[0], exploration_[1]);
    }
    if (!record_store_) return core_.act(slots, obs);
    torch::Tensor actions = core_.act(slots, obs, &logp_);
    const int64_t* a = actions.data_ptr<int64_t>();
    for (size_t i = 0; i < slots.size(); ++i) {
      const int slot = static_cast<int>(slots[i]);
      if (!eval_slot_[static_cast<size_t>(slot)]) record_store_->act(slot, a + i, logp_[i], version);
    }
    return actions;
  }

  void reset_slot(int slot) override {
    core_.reset_slot(slot);
    if (record_store_) record_store_->reset_slot(slot);
  }

  void take_finished_episodes(std::vector<EpisodeResult>& out) override { core_.take_finished_episodes(out); }

  bool await_batch() override {
    while (!core_.ready_to_learn(kWaitSlice)) {
      if (closed_.load()) return false;
    }
    return !closed_.load();
  }

  TrainReport train(const ExperimentConfig& config, double lr, int64_t) override {
    core_.set_learning_rate(lr);
    core_.set_hot(config.section<R2d2Config>().gamma, config.optimizer.max_grad_norm);
    // Exploration is hot (a reload or a schedule): the inference thread takes
    // it at its next batch.
    {
      base::MutexLock lock(exploration_mu_);
      if (exploration_[0] != config.section<R2d2Config>().epsilon_base || exploration_[1] != config.section<R2d2Config>().epsilon_alpha) {
        exploration_[0] = config.section<R2d2Config>().epsilon_base;
        exploration_[1] = config.section<R2d2Config>().epsilon_alpha;
        exploration_changed_.store(true);
      }
    }
    const R2d2StepStats step = core_.learn();
    TrainReport report;
    report.grad_norm = step.grad_norm;
    if (step.skipped) return report;
    report.applied = true;
    report.frames = static_cast<int64_t>(config.section<R2d2Config>().batch) * trace_;
    report.loss_total = step.loss;
    report.metrics = {{"mean_q", step.mean_q}, {"mean_priority", step.mean_priority}};
    return report;
  }

  int64_t unroll_length() const override { return record_length_; }

  void close() override {
    closed_.store(true);
    core_.close();
  }

  void set_gradient_hook(GradientHook hook) override { core_.trainer().set_gradient_hook(std::move(hook)); }

  bool await_batch_for(std::chrono::milliseconds wait) override {
    const auto until = std::chrono::steady_clock::now() + wait;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
      if (closed_.load()) return false;
      if (core_.ready_to_learn(std::clamp(left, std::chrono::milliseconds(0), kWaitSlice))) return !closed_.load();
      if (left.count() <= 0) return false;
    }
  }

  bool closed() const override { return closed_.load(); }

  TrainReport train_without_batch(const ExperimentConfig& config, double lr) override {
    core_.set_learning_rate(lr);
    core_.set_hot(config.section<R2d2Config>().gamma, config.optimizer.max_grad_norm);
    const R2d2StepStats step = core_.learn_without_batch();
    TrainReport report;
    report.grad_norm = step.grad_norm;
    report.applied = !step.skipped;
    return report;
  }

  uint64_t weights_hash() override {
    base::ReaderMutexLock weights(core_.weights_mutex());
    std::vector<torch::Tensor> all = core_.online()->parameters();
    for (const torch::Tensor& t : core_.target()->parameters()) all.push_back(t);
    return tensors_hash(all);
  }

  bool weights_finite() override {
    torch::NoGradGuard no_grad;
    base::ReaderMutexLock weights(core_.weights_mutex());
    return all_finite(core_.online()->parameters());
  }

  AgentStats stats() const override {
    const R2d2CoreStats c = core_.stats();
    AgentStats s;
    s.queue_size = c.sequences_queued - c.sequences_inserted - c.sequences_rejected;
    // The training thread's time in the replay against its time in the nets, since the start.
    const double busy = c.replay_seconds + c.network_seconds;
    s.metrics = {{"replay_size", static_cast<double>(c.replay_size)},
                 {"explored_actions", static_cast<double>(c.explored_actions)},
                 {"replay_time_share", busy > 0 ? c.replay_seconds / busy : 0.0}};
    return s;
  }

  std::unique_ptr<EvalPolicy> evaluation_policy(int n, bool greedy, uint64_t seed) override {
    return std::make_unique<R2d2EvalPolicy>(core_, n, greedy ? 0.0 : eval_epsilon_, device_, seed);
  }

  void set_recorder(ExperienceRecorder* recorder, int64_t next_episode_id) override {
    if (!recorder) return;
    record_store_ = std::make_unique<UnrollStore>(
        static_cast<int>(eval_slot_.size()), UnrollPool::create(UnrollShape::from_spec(spec_, record_length_)));
    record_store_->set_next_episode_id(next_episode_id);
    recorder_ = recorder;
  }

  WarmStartReport warm_start(LogUnrolls& log, const ExperimentConfig&,
                             const std::function<void(const WarmStartReport&)>& progress) override {
    // Each of the log's streams (actor, env) replays into a training slot;
    // a slot that changes stream starts afresh.
    std::vector<int> training;
    for (size_t s = 0; s < eval_slot_.size(); ++s) {
      if (!eval_slot_[s]) training.push_back(static_cast<int>(s));
    }
    std::vector<int> stream_of(eval_slot_.size(), -1);
    std::vector<float> prev_reward(eval_slot_.size(), 0.f);
    const UnrollShape shape = UnrollShape::from_spec(spec_, record_length_);
    const int64_t obs_bytes = shape.observation_bytes();
    const int64_t action_bytes = shape.action_bytes();  // int64 indices
    WarmStartReport report;
    report.steps_planned = 0;  // no training: the replay is filled
    if (progress) progress(report);
    while (UnrollPtr u = log.next()) {
      const int slot = training[static_cast<size_t>(u->slot) % training.size()];
      if (stream_of[static_cast<size_t>(slot)] != u->slot) {
        if (stream_of[static_cast<size_t>(slot)] >= 0) core_.reset_slot(slot);
        stream_of[static_cast<size_t>(slot)] = u->slot;
        prev_reward[static_cast<size_t>(slot)] = 0.f;
      }
      int64_t queued = 0;
      for (int64_t t = 0; t < shape.unroll_length; ++t) {
        int64_t action = 0;
        std::memcpy(&action, u->actions.data() + t * action_bytes, sizeof action);
        queued = core_.prefill(slot, u->observations.data() + t * obs_bytes, prev_reward[static_cast<size_t>(slot)],
                               u->obs_flags[static_cast<size_t>(t)], action);
        prev_reward[static_cast<size_t>(slot)] = u->rewards[static_cast<size_t>(t)];
      }
      ++report.unrolls;
      // Inserted a batch at a time (one forward pass for their priorities), long
      // before the ring could overwrite their blocks.
      if (queued >= batch_) report.sequences = core_.insert_prefilled();
      if (progress) progress(report);
    }
    report.sequences = core_.insert_prefilled();
    // The log's episodes are not this run's: they do not count in its statistics.
    std::vector<EpisodeResult> logged;
    core_.take_finished_episodes(logged);
    // Acting starts every slot afresh.
    for (int slot : training) {
      if (stream_of[static_cast<size_t>(slot)] >= 0) core_.reset_slot(slot);
    }
    if (report.unrolls == 0) {
      throw std::invalid_argument("warm start: " + log.directory() + " holds no whole unroll of " +
                                  std::to_string(record_length_) + " steps");
    }
    return report;
  }

  void save(const std::string& path, const Counters& counters) override {
    // The replay first: the model file is the checkpoint's last file, so
    // --resume never finds it without its replay (RunDirectory::newest_checkpoint).
    const std::string replay_file = replay_path(path);
    core_.replay().save(replay_file);
    try {
      NetPair nets(core_.online(), core_.target());
      save_checkpoint(path, nets, core_.optimizer(), counters);
    } catch (const CheckpointError&) {
      // A replay without its model is of no use and takes the room a retry needs.
      // Beside a model file saved earlier at the same step, it stays: both hold that step.
      std::error_code ec;
      if (!std::filesystem::exists(path, ec)) std::filesystem::remove(replay_file, ec);
      throw;
    }
  }

  void save_companions(const std::string& base) override { core_.replay().save(replay_path(base)); }

  Counters restore(const std::string& path, const std::string& companions) override {
    NetPair nets(core_.online(), core_.target());
    // The replay first, the file most likely to be refused (columns of another
    // model). A restore that fails aborts the resume, so whatever it loaded
    // before failing is never trained on.
    const std::string replay_file = replay_path(companions);
    std::error_code ec;
    const bool have_replay = std::filesystem::is_regular_file(replay_file, ec);
    if (have_replay) core_.replay().load(replay_file);
    Counters c = load_checkpoint(path, nets, core_.optimizer());
    core_.set_learning_steps(c.optimizer_steps);
    if (!have_replay) {
      base::log_warning((companions == path ? "no replay beside " + path : "no replay for " + path) + " (" +
                        replay_file + " is missing); R2D2 resumes with an empty replay");
    }
    return c;
  }

  Counters restore_weights(const std::string& path) override {
    NetPair nets(core_.online(), core_.target());
    Counters c = load_checkpoint_model(path, nets);
    core_.set_learning_steps(c.optimizer_steps);
    return c;
  }

  std::vector<std::string> checkpoint_companions() const override { return {kReplaySuffix}; }

 private:
  static constexpr const char* kReplaySuffix = ".replay";
  static std::string replay_path(const std::string& checkpoint) { return checkpoint + kReplaySuffix; }

  const torch::Device device_;
  const envs::EnvSpec spec_;
  const std::vector<bool> eval_slot_;
  const int64_t record_length_;  // steps per recorded unroll
  const double eval_epsilon_;
  const int64_t trace_;
  const int64_t batch_;
  R2d2Core core_;
  std::atomic<bool> closed_{false};
  base::Mutex exploration_mu_;
  double exploration_[2] GUARDED_BY(exploration_mu_);  // epsilon_base, epsilon_alpha the actors should use
  std::atomic<bool> exploration_changed_{false};
  // Recording (set_recorder), inference thread only: the training envs' steps as unrolls.
  std::unique_ptr<UnrollStore> record_store_;
  ExperienceRecorder* recorder_ = nullptr;
  std::vector<float> logp_;
};

std::unique_ptr<Agent> make(const ExperimentConfig& config, const envs::EnvSpec& spec, torch::Device device) {
  return std::make_unique<R2d2Agent>(config, spec, device);
}

std::string check_model(const ExperimentConfig& config, const envs::EnvSpec& spec) {
  try {
    models::QNet net(r2d2_net_spec(config), spec);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

models::Exported export_net(const ExperimentConfig& config, const envs::EnvSpec& spec, const std::string& checkpoint,
                            models::ExportOrigin& origin) {
  models::QNet net(r2d2_net_spec(config), spec);
  origin.step = load_checkpoint_model(checkpoint, *net, "online").optimizer_steps;
  return models::export_q_net(*net, spec, origin);
}

// Epsilon-greedy with r2d2.eval_epsilon.
EvalActing eval_acting(const ExperimentConfig& config) {
  return EvalActing{false, "epsilon " + base::number_text(config.section<R2d2Config>().eval_epsilon)};
}

const AgentRegistration kRegistration("r2d2", {&make, &check_model, &export_net,
                                               "forward(obs, prev_action, prev_reward, (h, c)) -> (q_values, (h, c))",
                                               &eval_acting,
                                               {{"mean_q", "value (h-space)", "mean Q of the last step's taken actions"},
                                                {"mean_priority", "priority", "mean new priority of the last step's sequences"},
                                                {"replay_size", "sequences", "sequences in the replay"},
                                                {"explored_actions", "actions", "epsilon-random actions so far"},
                                                {"replay_time_share", "fraction (0 to 1)",
                                                 "of the training thread's busy time since the start, the part spent in "
                                                 "the replay ([r2d2.md](r2d2.md#metrics))"}}});

}  // namespace
}  // namespace moonseed::engine
