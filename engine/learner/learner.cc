#include "engine/learner/learner.h"

#include <algorithm>
#include <condition_variable>
#include <cmath>
#include <cstring>
#include <deque>
#include <iterator>
#include <limits>
#include <optional>

#include <torch/torch.h>

#include "base/log.h"
#include "base/text.h"
#include "engine/config/actor_config.h"
#include "engine/config/config_problems.h"
#include "engine/learner/agent.h"
#include "engine/learner/agent_registry.h"
#include "engine/runtime/clock.h"
#include "engine/runtime/inference_batcher.h"
#include "engine/config/schedule.h"
#include "envs/env.h"
#include "models/device.h"

namespace moonseed::engine {
namespace {

// One StepBatch waiting for inference, with where to reply and which slots it fills.
struct StepRequest {
  std::shared_ptr<rpc::ActorLink> link;
  int64_t slot_begin = 0;
  rpc::StepBatch batch;
};

constexpr size_t kReturnWindow = 100;
constexpr size_t kMaxNotices = 256;       // kept between two take_notices()
constexpr size_t kMaxNoticeBytes = 2000;  // an actor's text beyond this is cut

// The env's spec, once the config has passed the rules the loader checks
// (engine/config/config_problems.h): a config built in C++ skips the loader.
envs::EnvSpec checked_spec(const ExperimentConfig& config) {
  check_config(config);
  return envs::make_env(config.env.id, config.env.options)->spec();
}

// Deterministic per (run seed, actor, connection): a restarted actor plays new episodes.
uint64_t actor_seed(uint64_t run_seed, int actor_id, uint64_t connection) {
  uint64_t x = run_seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(actor_id) * 0xBF58476D1CE4E5B9ull +
               connection * 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x & 0xFFFFFFFFull;  // numpy-style seeds are small non-negative integers
}

// Compares in time independent of where the first difference is, so a
// remote peer cannot learn the token a byte at a time.
bool tokens_match(const std::string& expected, const std::string& given) {
  if (expected.empty()) return true;
  unsigned char diff = expected.size() == given.size() ? 0 : 1;
  for (size_t i = 0; i < expected.size(); ++i) {
    diff |= static_cast<unsigned char>(expected[i] ^ (i < given.size() ? given[i] : 0));
  }
  return diff == 0;
}

}  // namespace

struct Learner::Impl {
  Impl(const ExperimentConfig& config, std::string id, const envs::EnvSpec& env_spec)
      : cfg(config),
        train_cfg(config),
        run_id(std::move(id)),
        spec(env_spec),
        device(models::choose_device(config.inference.device)),
        agent(make_agent(config, env_spec, device)),
        batcher(config.inference.max_batch, std::chrono::microseconds(config.inference.deadline_us),
                clock, std::chrono::microseconds(config.inference.idle_spin_us)),
        actor_connected(config.topology.actors, false),
        actor_connections(config.topology.actors, 0),
        actor_links(config.topology.actors),
        welcomed_version(config.topology.actors, 0),
        actor_payload(encode_actor_config(actor_config_of(config))) {}

  const ExperimentConfig cfg;
  ExperimentConfig train_cfg;  // training thread only: cfg with the newest hot fields
  const std::string run_id;
  const envs::EnvSpec spec;
  const torch::Device device;
  // Experience log (record_to). Declared before the agent, which hands it
  // unrolls until it is closed or destroyed.
  std::unique_ptr<ExperienceRecorder> recorder;
  // The algorithm (engine/learner/agent.h): nets, optimizer, and the path from acting
  // to learning. It guards its own weights; lock order: train_mu before them.
  const std::unique_ptr<Agent> agent;
  std::mutex train_mu;  // held for one whole training step; checkpoints take it

  SteadyClock clock;
  InferenceBatcher<StepRequest> batcher;
  std::thread inference_thread;
  std::thread training_thread;
  bool started = false;
  bool stopped = false;

  std::string auth_token;  // set before start(), then read-only

  mutable std::mutex actors_mu;
  std::vector<bool> actor_connected;         // GUARDED_BY(actors_mu)
  std::vector<uint64_t> actor_connections;   // GUARDED_BY(actors_mu)
  std::vector<std::weak_ptr<rpc::ActorLink>> actor_links;  // GUARDED_BY(actors_mu)
  std::vector<uint64_t> welcomed_version;    // GUARDED_BY(actors_mu): config version of the last Welcome

  // Hot reload: set_hot_config -> the training thread, at its next step.
  // Lock order: actors_mu before hot_mu.
  std::mutex hot_mu;
  std::optional<ExperimentConfig> pending_hot;  // GUARDED_BY(hot_mu)
  std::atomic<bool> hot_pending{false};
  std::atomic<uint64_t> config_version{0};
  std::atomic<uint64_t> applied_config_version{0};
  std::string actor_payload;  // GUARDED_BY(hot_mu): boundary fields of config_version
  void take_hot_config();

  std::mutex notices_mu;
  std::deque<std::string> notices;  // GUARDED_BY(notices_mu)

  // Pause (set_paused): the training thread waits between steps.
  mutable std::mutex pause_mu;
  std::condition_variable pause_cv;
  bool paused = false;    // GUARDED_BY(pause_mu)
  bool stopping = false;  // GUARDED_BY(pause_mu)
  void wait_while_paused() {
    std::unique_lock<std::mutex> lock(pause_mu);
    pause_cv.wait(lock, [&] { return !paused || stopping; });
  }

  std::atomic<int64_t> frames{0};
  std::atomic<int64_t> episodes{0};
  std::atomic<int64_t> optimizer_steps{0};
  std::atomic<int64_t> trained_frames{0};
  std::atomic<int64_t> inference_envs{0};
  std::atomic<int64_t> inference_batches{0};
  int64_t skipped_steps = 0;  // training thread only: non-finite gradients

  mutable std::mutex stats_mu;
  std::deque<double> returns;  // GUARDED_BY(stats_mu), last kReturnWindow episodes
  std::deque<double> lengths;  // GUARDED_BY(stats_mu)
  std::deque<double> eval_returns;  // GUARDED_BY(stats_mu): evaluation envs' episodes
  const std::vector<bool> eval_slot = evaluation_slots(cfg);
  std::atomic<int64_t> eval_episodes{0};
  LearnerStats last_step;      // GUARDED_BY(stats_mu), loss fields only

  void inference_loop();
  void training_loop();
  void reply(const std::vector<StepRequest>& requests, const torch::Tensor& actions);
};

void Learner::Impl::inference_loop() {
  at::set_num_threads(1);  // batches of tens of envs: more threads only add overhead
  std::vector<StepRequest> requests;
  const int64_t obs_bytes = spec.observation.byte_size();
  const bool uint8_obs = spec.observation.dtype == envs::DType::kUInt8;
  std::vector<int64_t> obs_shape = {0};
  obs_shape.insert(obs_shape.end(), spec.observation.shape.begin(), spec.observation.shape.end());
  torch::Tensor obs_buffer;  // [capacity, obs...], grown only when a batch is larger
  std::vector<int64_t> slots;
  std::vector<EpisodeResult> finished;

  // wait_for_room: the agent's backpressure (R2D2: the replay is ahead of learning).
  while (agent->wait_for_room() && batcher.next_batch(requests)) {
    int64_t n = 0;
    for (const auto& r : requests) n += r.batch.count;
    if (!obs_buffer.defined() || obs_buffer.size(0) < n) {
      obs_shape[0] = std::max<int64_t>(n, cfg.inference.max_batch);
      obs_buffer = torch::empty(obs_shape, torch::TensorOptions()
                                               .dtype(uint8_obs ? torch::kUInt8 : torch::kFloat32)
                                               .pinned_memory(device.is_cuda()));
    }
    auto* dst = static_cast<uint8_t*>(obs_buffer.data_ptr());
    int64_t stepped = 0;
    slots.clear();
    for (const auto& r : requests) {
      const rpc::StepBatch& b = r.batch;
      std::memcpy(dst, b.observations.data(), b.observations.size());
      for (uint32_t i = 0; i < b.count; ++i) {
        if (!(b.flags[i] & envs::kFirst)) ++stepped;
        const int slot = static_cast<int>(r.slot_begin + i);
        slots.push_back(slot);
        // May block (V-trace: the FIFO is full): that holds every actor back.
        agent->observe(slot, dst + i * obs_bytes, b.rewards[i], b.flags[i], b.config_version);
      }
      dst += b.observations.size();
    }
    frames += stepped;

    const torch::Tensor actions = agent->act(slots, obs_buffer.narrow(0, 0, n), optimizer_steps.load());
    reply(requests, actions);

    agent->take_finished_episodes(finished);
    if (!finished.empty()) {
      std::lock_guard<std::mutex> lock(stats_mu);
      for (const auto& e : finished) {
        if (eval_slot[static_cast<size_t>(e.slot)]) {
          eval_returns.push_back(e.episode_return);
          if (eval_returns.size() > kReturnWindow) eval_returns.pop_front();
          eval_episodes += 1;
          continue;
        }
        returns.push_back(e.episode_return);
        lengths.push_back(static_cast<double>(e.length));
        if (returns.size() > kReturnWindow) returns.pop_front();
        if (lengths.size() > kReturnWindow) lengths.pop_front();
        episodes += 1;
      }
      finished.clear();
    }
    inference_envs += n;
    inference_batches += 1;
  }
}

// Sends each request its slice of the actions, in the wire format: int32 for
// discrete spaces, float32[A] for boxes.
void Learner::Impl::reply(const std::vector<StepRequest>& requests, const torch::Tensor& actions) {
  const bool discrete = spec.action.kind == envs::SpaceKind::kDiscrete;
  const int64_t wire_bytes = spec.action.byte_size();
  int64_t k = 0;
  for (const auto& r : requests) {
    rpc::ActionBatch out;
    out.seq = r.batch.seq;
    out.actions.resize(static_cast<size_t>(r.batch.count * wire_bytes));
    if (discrete) {
      const int64_t* a = actions.data_ptr<int64_t>() + k;
      for (uint32_t i = 0; i < r.batch.count; ++i) {
        int32_t v = static_cast<int32_t>(a[i]);
        std::memcpy(&out.actions[i * sizeof v], &v, sizeof v);
      }
    } else {
      std::memcpy(out.actions.data(), actions.data_ptr<float>() + k * spec.action.numel(),
                  out.actions.size());
    }
    k += r.batch.count;
    r.link->send_actions(std::move(out));
  }
}

void Learner::Impl::training_loop() {
  // Intra-op thread counts belong to the thread that sets them (OpenMP), so
  // each engine thread sets its own.
  at::set_num_threads(std::max(1, cfg.learner.torch_threads));
  while (agent->await_batch()) {
    wait_while_paused();
    std::lock_guard<std::mutex> train(train_mu);
    if (hot_pending.load(std::memory_order_acquire)) take_hot_config();
    // Schedules were validated at load time (scripts/lua_schedules.h).
    if (!train_cfg.schedules.empty()) apply_schedules(train_cfg, static_cast<double>(frames.load()));
    const OptimizerConfig& opt = train_cfg.optimizer;
    double lr = opt.lr;
    if (opt.lr_decay_frames > 0) {
      lr *= std::max(0.0, 1.0 - static_cast<double>(frames.load()) / opt.lr_decay_frames);
    }
    const TrainReport step = agent->train(train_cfg, lr, optimizer_steps.load());
    if (!step.applied) {
      // One bad batch must not poison the weights: the agent dropped it; say so once in a while.
      if (skipped_steps++ % 100 == 0) {
        base::log_warning("gradient norm is " + base::number_text(step.grad_norm) + "; skipped " +
                          std::to_string(skipped_steps) + " training step(s) so far");
      }
      continue;
    }
    optimizer_steps += 1;
    trained_frames += step.frames;
    if (recorder) {
      recorder->set_learner_step(optimizer_steps.load());
      recorder->set_config_version(applied_config_version.load());
    }
    std::lock_guard<std::mutex> lock(stats_mu);
    last_step.loss_total = step.loss_total;
    last_step.loss_policy = step.loss_policy;
    last_step.loss_baseline = step.loss_baseline;
    last_step.loss_entropy = step.loss_entropy;
    last_step.grad_norm = step.grad_norm;
    last_step.mean_rho = step.mean_rho;
    last_step.learning_rate = lr;
    last_step.entropy_cost = train_cfg.vtrace.entropy_cost;
    last_step.policy_lag = step.policy_lag;
    last_step.mean_q = step.mean_q;
    last_step.mean_priority = step.mean_priority;
  }
}

void Learner::Impl::take_hot_config() {
  std::lock_guard<std::mutex> lock(hot_mu);
  hot_pending.store(false, std::memory_order_relaxed);
  if (!pending_hot) return;
  // Only what the training step reads; the rest is restart-only or read by
  // the control loop.
  train_cfg.vtrace = pending_hot->vtrace;
  train_cfg.r2d2 = pending_hot->r2d2;
  train_cfg.optimizer.lr = pending_hot->optimizer.lr;
  train_cfg.optimizer.max_grad_norm = pending_hot->optimizer.max_grad_norm;
  train_cfg.optimizer.lr_decay_frames = pending_hot->optimizer.lr_decay_frames;
  train_cfg.schedules = pending_hot->schedules;
  pending_hot.reset();
  applied_config_version.store(config_version.load());
}

Learner::Learner(const ExperimentConfig& config, std::string run_id) : spec_(checked_spec(config)) {
  torch::manual_seed(config.seed);
  impl_ = std::make_unique<Impl>(config, std::move(run_id), spec_);
}

Learner::~Learner() { stop(); }

void Learner::set_io_pump(std::function<void(std::chrono::nanoseconds)> pump, std::function<void()> wake) {
  if (impl_->started) throw std::logic_error("Learner::set_io_pump must come before start()");
  impl_->batcher.set_pump(std::move(pump), std::move(wake));
}

void Learner::set_auth_token(std::string token) {
  if (impl_->started) throw std::logic_error("Learner::set_auth_token must come before start()");
  impl_->auth_token = std::move(token);
}

Counters Learner::restore(const std::string& checkpoint_path) {
  if (impl_->started) throw std::logic_error("Learner::restore must come before start()");
  Counters c = impl_->agent->restore(checkpoint_path);
  impl_->optimizer_steps = c.optimizer_steps;
  impl_->frames = c.frames;
  impl_->episodes = c.episodes;
  return c;
}

void Learner::start() {
  Impl& m = *impl_;
  if (m.started) return;
  m.started = true;
  m.inference_thread = std::thread([&m] { m.inference_loop(); });
  m.training_thread = std::thread([&m] { m.training_loop(); });
}

void Learner::stop() {
  Impl& m = *impl_;
  if (!m.started || m.stopped) return;
  m.stopped = true;
  {
    std::lock_guard<std::mutex> lock(m.pause_mu);
    m.stopping = true;
  }
  m.pause_cv.notify_all();
  m.batcher.close();
  m.agent->close();  // unblocks both threads wherever the agent holds them
  if (m.inference_thread.joinable()) m.inference_thread.join();
  if (m.training_thread.joinable()) m.training_thread.join();
  // Last: the agent's closing handed over what it still held.
  if (m.recorder) m.recorder->close();
}

WarmStartReport Learner::warm_start(const std::function<void(const WarmStartReport&)>& progress) {
  Impl& m = *impl_;
  if (m.started) throw std::logic_error("Learner::warm_start must come before start()");
  LogUnrolls log(m.cfg.warm_start.log, m.spec, m.agent->unroll_length());
  at::set_num_threads(std::max(1, m.cfg.learner.torch_threads));
  return m.agent->warm_start(log, m.cfg, progress);
}

void Learner::record_to(const std::string& directory) {
  Impl& m = *impl_;
  if (m.started) throw std::logic_error("Learner::record_to must come before start()");
  if (m.recorder) throw std::logic_error("Learner::record_to: already recording to " +
                                         m.recorder->stats().directory);
  const int64_t next_episode_id = ExperienceRecorder::next_episode_id(directory);  // before a new segment opens
  m.recorder = std::make_unique<ExperienceRecorder>(m.cfg.record, directory, m.run_id, m.spec,
                                                    UnrollShape::from_spec(m.spec, m.agent->unroll_length()),
                                                    m.cfg.topology.envs_per_actor);
  m.recorder->set_learner_step(m.optimizer_steps.load());
  m.agent->set_recorder(m.recorder.get(), next_episode_id);
}

void Learner::set_hot_config(const ExperimentConfig& config, uint64_t version) {
  Impl& m = *impl_;
  std::string payload;
  {
    std::lock_guard<std::mutex> lock(m.hot_mu);
    if (version <= m.config_version.load()) {
      throw std::invalid_argument("Learner::set_hot_config: version " + std::to_string(version) +
                                  " is not newer than " + std::to_string(m.config_version.load()));
    }
    m.pending_hot = config;
    m.config_version.store(version);
    m.actor_payload = encode_actor_config(actor_config_of(config));
    m.hot_pending.store(true, std::memory_order_release);
    payload = m.actor_payload;
  }
  std::vector<std::shared_ptr<rpc::ActorLink>> links;
  {
    std::lock_guard<std::mutex> lock(m.actors_mu);
    for (const auto& weak : m.actor_links) {
      if (auto link = weak.lock()) links.push_back(std::move(link));
    }
  }
  for (const auto& link : links) link->send_config(rpc::ConfigUpdate{version, payload});
}

void Learner::set_paused(bool paused) {
  Impl& m = *impl_;
  {
    std::lock_guard<std::mutex> lock(m.pause_mu);
    m.paused = paused;
  }
  m.pause_cv.notify_all();
}

Evaluation Learner::evaluate(int episodes, uint64_t seed, bool greedy, int64_t max_steps) {
  if (episodes < 1 || episodes > 10000) {
    throw std::invalid_argument("evaluate: episodes must be in [1, 10000], got " + std::to_string(episodes));
  }
  Impl& m = *impl_;
  const size_t n = static_cast<size_t>(episodes);
  std::vector<std::unique_ptr<envs::Env>> env(n);
  const bool uint8_obs = m.spec.observation.dtype == envs::DType::kUInt8;
  std::vector<int64_t> shape = {episodes};
  shape.insert(shape.end(), m.spec.observation.shape.begin(), m.spec.observation.shape.end());
  torch::Tensor obs = torch::zeros(shape, uint8_obs ? torch::kUInt8 : torch::kFloat32);
  const int64_t obs_bytes = m.spec.observation.byte_size();
  auto* obs_data = static_cast<uint8_t*>(obs.data_ptr());
  for (size_t i = 0; i < n; ++i) {
    env[i] = envs::make_env(m.cfg.env.id, m.cfg.env.options);
    env[i]->reset(seed + i, obs_data + static_cast<int64_t>(i) * obs_bytes);
  }
  Evaluation out;
  out.returns.assign(n, 0.0);
  out.lengths.assign(n, 0);
  out.truncated.assign(n, false);
  std::vector<bool> done(n, false);
  size_t running = n;
  const int64_t action_bytes = m.spec.action.byte_size();
  std::unique_ptr<EvalPolicy> policy = m.agent->evaluation_policy(episodes, greedy, seed);
  std::vector<float> rewards(n, 0.f);  // of each env's previous action
  for (bool first = true; running > 0; first = false) {
    const torch::Tensor actions = policy->act(obs, rewards, first);
    const auto* action_data = static_cast<const uint8_t*>(actions.data_ptr());
    for (size_t i = 0; i < n; ++i) {
      if (done[i]) continue;
      envs::StepResult r = env[i]->step(action_data + static_cast<int64_t>(i) * action_bytes,
                                        obs_data + static_cast<int64_t>(i) * obs_bytes);
      rewards[i] = r.reward;
      out.returns[i] += r.reward;
      out.lengths[i] += 1;
      if (r.terminated || r.truncated || out.lengths[i] >= max_steps) {
        done[i] = true;
        out.truncated[i] = !r.terminated;
        --running;
      }
    }
  }
  return out;
}

LearnerStats Learner::stats() const {
  const Impl& m = *impl_;
  LearnerStats s;
  {
    std::lock_guard<std::mutex> lock(m.stats_mu);
    s = m.last_step;
    auto mean = [](const std::deque<double>& d) {
      if (d.empty()) return std::numeric_limits<double>::quiet_NaN();
      double sum = 0;
      for (double v : d) sum += v;
      return sum / static_cast<double>(d.size());
    };
    s.return_mean = mean(m.returns);
    s.length_mean = mean(m.lengths);
    s.eval_return_mean = mean(m.eval_returns);
  }
  s.frames = m.frames.load();
  s.config_version = m.config_version.load();
  s.applied_config_version = m.applied_config_version.load();
  {
    std::lock_guard<std::mutex> lock(m.pause_mu);
    s.paused = m.paused;
  }
  s.episodes = m.episodes.load();
  s.eval_episodes = m.eval_episodes.load();
  s.optimizer_steps = m.optimizer_steps.load();
  s.trained_frames = m.trained_frames.load();
  const AgentStats agent = m.agent->stats();
  s.queue_size = agent.queue_size;
  s.replay_size = agent.replay_size;
  s.explored_actions = agent.explored_actions;
  s.replay_seconds = agent.replay_seconds;
  s.network_seconds = agent.network_seconds;
  if (m.recorder) s.record = m.recorder->stats();
  s.inference_batches = m.inference_batches.load();
  s.mean_batch_envs = s.inference_batches ? static_cast<double>(m.inference_envs.load()) /
                                                static_cast<double>(s.inference_batches)
                                          : 0.0;
  {
    std::lock_guard<std::mutex> lock(m.actors_mu);
    s.actors_connected = static_cast<int>(std::count(m.actor_connected.begin(), m.actor_connected.end(), true));
  }
  return s;
}

void Learner::save_checkpoint(const std::string& path, double elapsed_s) {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> train(m.train_mu);
  Counters c;
  c.optimizer_steps = m.optimizer_steps.load();
  c.frames = m.frames.load();
  c.episodes = m.episodes.load();
  c.elapsed_s = elapsed_s;
  m.agent->save(path, c);
}

rpc::Admission Learner::on_hello(const rpc::Hello& hello) {
  Impl& m = *impl_;
  rpc::Admission admission;
  if (!tokens_match(m.auth_token, hello.auth_token)) {
    admission.reason = "wrong auth token (set MOONSEED_AUTH_TOKEN or --auth-token to the learner's)";
    return admission;
  }
  std::lock_guard<std::mutex> lock(m.actors_mu);
  const int actors = m.cfg.topology.actors;
  int id = -1;
  if (hello.actor_id >= 0) {
    if (hello.actor_id >= actors) {
      admission.reason = "actor id " + std::to_string(hello.actor_id) + " is out of range: this run has " +
                         std::to_string(actors) + " actor slots (0.." + std::to_string(actors - 1) + ")";
      return admission;
    }
    if (m.actor_connected[hello.actor_id]) {
      admission.reason = "actor id " + std::to_string(hello.actor_id) + " is already connected";
      return admission;
    }
    id = hello.actor_id;
  } else {
    for (int i = 0; i < actors && id < 0; ++i) {
      if (!m.actor_connected[i]) id = i;
    }
    if (id < 0) {
      admission.reason = "all " + std::to_string(actors) + " actor slots are taken";
      return admission;
    }
  }
  m.actor_connected[id] = true;
  const uint64_t connection = m.actor_connections[id]++;
  admission.accepted = true;
  rpc::Welcome& w = admission.welcome;
  w.run_id = m.run_id;
  w.actor_id = id;
  w.env_id = m.cfg.env.id;
  w.env_options = m.cfg.env.options;
  w.env_spec = m.spec;
  w.num_envs = static_cast<uint32_t>(m.cfg.topology.envs_per_actor);
  w.num_groups = static_cast<uint32_t>(m.cfg.topology.groups_per_actor);
  w.seed = actor_seed(m.cfg.seed, id, connection);
  // The actors' unroll boundary, where they take new boundary fields.
  w.unroll_length = static_cast<uint32_t>(m.agent->unroll_length());
  {
    std::lock_guard<std::mutex> hot(m.hot_mu);
    w.config_version = m.config_version.load();
    w.payload = m.actor_payload;
  }
  m.welcomed_version[static_cast<size_t>(id)] = w.config_version;
  return admission;
}

void Learner::on_connect(std::shared_ptr<rpc::ActorLink> link) {
  Impl& m = *impl_;
  const int32_t id = link->actor_id();
  if (id < 0 || id >= m.cfg.topology.actors) return;
  // A set_hot_config between this actor's Welcome and now did not see its
  // link: send what it missed (a duplicate is ignored by the actor).
  rpc::ConfigUpdate missed;
  {
    std::lock_guard<std::mutex> lock(m.actors_mu);
    m.actor_links[static_cast<size_t>(id)] = link;
    std::lock_guard<std::mutex> hot(m.hot_mu);
    missed.config_version = m.config_version.load();
    if (missed.config_version == m.welcomed_version[static_cast<size_t>(id)]) return;
    missed.payload = m.actor_payload;
  }
  link->send_config(std::move(missed));
}

void Learner::on_notice(const std::shared_ptr<rpc::ActorLink>& link, const rpc::ActorNotice& notice) {
  Impl& m = *impl_;
  std::string text = "actor " + std::to_string(link->actor_id()) + ": " +
                     notice.text.substr(0, kMaxNoticeBytes) +
                     (notice.text.size() > kMaxNoticeBytes ? "..." : "");
  base::log_warning(text);
  std::lock_guard<std::mutex> lock(m.notices_mu);
  m.notices.push_back(std::move(text));
  if (m.notices.size() > kMaxNotices) m.notices.pop_front();
}

std::vector<std::string> Learner::take_notices() {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.notices_mu);
  std::vector<std::string> out(std::make_move_iterator(m.notices.begin()),
                               std::make_move_iterator(m.notices.end()));
  m.notices.clear();
  return out;
}

void Learner::on_steps(const std::shared_ptr<rpc::ActorLink>& link, rpc::StepBatch&& batch) {
  Impl& m = *impl_;
  const uint64_t envs = static_cast<uint64_t>(m.cfg.topology.envs_per_actor);
  const uint64_t obs_bytes = static_cast<uint64_t>(m.spec.observation.byte_size());
  std::string problem;
  if (batch.count == 0 || static_cast<uint64_t>(batch.env_begin) + batch.count > envs) {
    problem = "envs [" + std::to_string(batch.env_begin) + ", " +
              std::to_string(batch.env_begin + batch.count) + ") outside this actor's " +
              std::to_string(envs) + " envs";
  } else if (batch.observations.size() != batch.count * obs_bytes) {
    problem = std::to_string(batch.observations.size()) + " observation bytes for " +
              std::to_string(batch.count) + " envs, expected " + std::to_string(batch.count * obs_bytes);
  } else if (batch.rewards.size() != batch.count || batch.flags.size() != batch.count) {
    problem = "rewards/flags do not have one entry per env";
  }
  if (!problem.empty()) {
    base::log_warning("actor " + std::to_string(link->actor_id()) + " sent a bad StepBatch (" + problem +
                      "); closing its connection");
    link->send_bye("bad StepBatch: " + problem);
    return;
  }
  StepRequest request;
  request.slot_begin = static_cast<int64_t>(link->actor_id()) * static_cast<int64_t>(envs) + batch.env_begin;
  request.link = link;
  const int count = static_cast<int>(batch.count);
  request.batch = std::move(batch);
  m.batcher.submit(std::move(request), count);
}

void Learner::on_disconnect(int32_t actor_id, const std::string& reason) {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.actors_mu);
  if (actor_id >= 0 && actor_id < m.cfg.topology.actors) {
    m.actor_connected[actor_id] = false;
    m.actor_links[static_cast<size_t>(actor_id)].reset();
  }
}

}  // namespace moonseed::engine
