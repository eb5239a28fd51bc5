#include "engine/learner/learner.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <optional>
#include <thread>

#include <torch/torch.h>

#include "base/log.h"
#include "base/mutex.h"
#include "base/text.h"
#include "engine/config/actor_config.h"
#include "engine/config/config_problems.h"
#include "engine/config/schedule.h"
#include "engine/config/schema.h"
#include "engine/learner/actor_gateway.h"
#include "engine/learner/agent.h"
#include "engine/learner/agent_registry.h"
#include "engine/learner/episode_returns.h"
#include "engine/learner/evaluator.h"
#include "engine/runtime/clock.h"
#include "engine/runtime/inference_batcher.h"
#include "envs/env.h"
#include "models/device.h"

namespace moonseed::engine {
namespace {

// The env's spec, once the config has passed the rules the loader checks
// (engine/config/config_problems.h): a config built in C++ skips the loader.
envs::EnvSpec checked_spec(const ExperimentConfig& config) {
  check_config(config);
  return envs::make_env(config.env.id, config.env.options)->spec();
}


}  // namespace

struct Learner::Impl {
  Impl(const ExperimentConfig& config, std::string id, const envs::EnvSpec& env_spec)
      : cfg(config),
        run_id(std::move(id)),
        spec(env_spec),
        device(models::choose_device(config.inference.device)),
        agent(make_agent(config, env_spec, device)),
        train_cfg(config),
        batcher(config.inference.max_batch, std::chrono::microseconds(config.inference.deadline_us), clock,
                std::chrono::microseconds(config.inference.idle_spin_us)),
        gateway(config, run_id, env_spec, agent->unroll_length(), batcher, clock) {
    gateway.publish_boundary(0, encode_actor_config(actor_config_of(config)));
  }

  const ExperimentConfig cfg;
  const std::string run_id;
  const envs::EnvSpec spec;
  const torch::Device device;
  // Experience log (record_to). Declared before the agent, which hands it
  // unrolls until it is closed or destroyed.
  std::unique_ptr<ExperienceRecorder> recorder;
  // The algorithm (engine/learner/agent.h): nets, optimizer, and the path from acting
  // to learning. It guards its own weights; lock order: train_mu before them.
  const std::unique_ptr<Agent> agent;
  // Held for one whole training step; checkpoints take it. Lock order:
  // train_mu, then hot_mu, then the agent's own.
  base::Mutex train_mu ACQUIRED_BEFORE(hot_mu);
  ExperimentConfig train_cfg GUARDED_BY(train_mu);  // cfg with the newest hot fields

  SteadyClock clock;
  InferenceBatcher<StepRequest> batcher;
  ActorGateway gateway;
  std::thread inference_thread;
  std::thread training_thread;
  bool started = false;
  bool stopped = false;

  // Hot reload: set_hot_config -> the training thread, at its next step.
  base::Mutex hot_mu;
  std::optional<ExperimentConfig> pending_hot GUARDED_BY(hot_mu);
  std::atomic<bool> hot_pending{false};
  std::atomic<uint64_t> config_version{0};
  std::atomic<uint64_t> applied_config_version{0};

  // Pause (set_paused): the training thread waits between steps.
  mutable base::Mutex pause_mu;
  base::CondVar pause_cv;
  bool paused GUARDED_BY(pause_mu) = false;
  bool stopping GUARDED_BY(pause_mu) = false;
  void wait_while_paused() EXCLUDES(pause_mu) {
    base::MutexLock lock(pause_mu);
    while (paused && !stopping) pause_cv.wait(lock);
  }

  // set_frame_limit: the inference thread takes no batch while frames >=
  // frame_limit (> 0). The fast path reads two atomics; the wait shares
  // pause_mu and pause_cv, which set_frame_limit and stop() signal.
  std::atomic<int64_t> frame_limit{0};
  bool below_frame_limit() const {
    const int64_t limit = frame_limit.load(std::memory_order_relaxed);
    return limit <= 0 || frames.load(std::memory_order_relaxed) < limit;
  }
  // False once the learner stops.
  bool wait_below_frame_limit() EXCLUDES(pause_mu) {
    if (below_frame_limit()) return true;
    base::MutexLock lock(pause_mu);
    while (!below_frame_limit() && !stopping) pause_cv.wait(lock);
    return !stopping;
  }

  // Training time (LearnerStats::train_s): steady nanoseconds of the first
  // training batch and of stop() (-1 until then), plus the restored seconds.
  std::atomic<int64_t> first_batch_ns{-1};
  std::atomic<int64_t> stopped_ns{-1};
  double restored_train_s = 0;  // set by restore(), before the threads start
  static int64_t steady_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch()).count();
  }
  double train_seconds() const {
    const int64_t first = first_batch_ns.load();
    if (first < 0) return restored_train_s;
    const int64_t stopped = stopped_ns.load();
    const int64_t end = stopped >= 0 ? stopped : steady_ns();
    // A first batch taken while stop() ran adds nothing.
    return restored_train_s + static_cast<double>(std::max<int64_t>(0, end - first)) * 1e-9;
  }

  std::atomic<int64_t> frames{0};
  std::atomic<int64_t> episodes{0};
  std::atomic<int64_t> optimizer_steps{0};
  std::atomic<int64_t> trained_frames{0};
  std::atomic<int64_t> inference_envs{0};
  std::atomic<int64_t> inference_batches{0};
  std::atomic<int64_t> eval_episodes{0};
  int64_t skipped_steps = 0;  // training thread only: non-finite gradients

  // The last training step, as stats() reports it.
  struct LastStep {
    double loss_total = 0, grad_norm = 0, learning_rate = 0;
    Metrics metrics;
  };
  mutable base::Mutex stats_mu;
  EpisodeMeans episode_means GUARDED_BY(stats_mu);
  EnvReturns env_returns{cfg.topology.actors * cfg.topology.envs_per_actor};  // inference thread
  std::atomic<bool> reward_shaping{!cfg.reward_shaping.source.empty()};
  LastStep last_step GUARDED_BY(stats_mu);
  const std::vector<bool> eval_slot = evaluation_slots(cfg);

  // Set once when the learner cannot go on (the model diverged); the run stops.
  std::string failure GUARDED_BY(stats_mu);
  void fail(const std::string& why) EXCLUDES(stats_mu);
  bool failed() const EXCLUDES(stats_mu) {
    base::MutexLock lock(stats_mu);
    return !failure.empty();
  }

  void inference_loop();
  // Closes the connection of `r` with `reason` and forgets the partial
  // trajectories of its first `observed` envs.
  void drop_request(const StepRequest& r, uint32_t observed, const std::string& reason);
  // The agent's actions for `slots` (rows of `obs`, the requests' envs in
  // order). Requests whose observations make the model's outputs non-finite
  // are refused and removed (with their slots), the rest acted on again.
  // nullopt when the model itself diverged (fail() has said so).
  std::optional<torch::Tensor> act_on(std::vector<StepRequest>& requests, std::vector<int64_t>& slots,
                                      torch::Tensor obs);
  void count_episodes(const std::vector<EpisodeResult>& finished) EXCLUDES(stats_mu);
  void training_loop() EXCLUDES(train_mu, stats_mu);
  void take_hot_config() REQUIRES(train_mu) EXCLUDES(hot_mu);
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
  while (agent->wait_for_room() && wait_below_frame_limit() && batcher.next_batch(requests)) {
    int64_t n = 0;
    for (const auto& r : requests) n += r.batch.count;
    if (!obs_buffer.defined() || obs_buffer.size(0) < n) {
      obs_shape[0] = std::max<int64_t>(n, cfg.inference.max_batch);
      obs_buffer = torch::empty(obs_shape, torch::TensorOptions()
                                               .dtype(uint8_obs ? torch::kUInt8 : torch::kFloat32)
                                               .pinned_memory(device.is_cuda()));
    }
    auto* const begin = static_cast<uint8_t*>(obs_buffer.data_ptr());
    auto* dst = begin;
    int64_t stepped = 0;
    slots.clear();
    // Requests kept are moved to the front; `kept` counts them.
    size_t kept = 0;
    for (size_t k = 0; k < requests.size(); ++k) {
      StepRequest& r = requests[k];
      // Its connection was replaced (the actor died and came back): the new
      // one starts these envs afresh, and nobody waits for these actions.
      if (gateway.stale(r)) continue;
      const rpc::StepBatch& b = r.batch;
      std::memcpy(dst, b.observations.data(), b.observations.size());
      const size_t first_slot = slots.size();
      uint32_t i = 0;
      try {
        for (; i < b.count; ++i) {
          const int slot = static_cast<int>(r.slot_begin + i);
          slots.push_back(slot);
          // May block (V-trace: the FIFO is full): that holds every actor back.
          const float env_reward = b.env_rewards.empty() ? b.rewards[i] : b.env_rewards[i];
          agent->observe(slot, dst + i * obs_bytes, b.rewards[i], b.flags[i], b.config_version, env_reward);
          env_returns.observe(slot, env_reward, b.flags[i]);
        }
      } catch (const std::exception& e) {
        // The gateway lets no such batch through; should one come anyway, it
        // costs its actor the connection and its envs their partial unrolls, nothing else.
        drop_request(r, i + 1, std::string("its step could not be used: ") + e.what());
        slots.resize(first_slot);
        continue;
      }
      for (i = 0; i < b.count; ++i) stepped += (b.flags[i] & envs::kFirst) ? 0 : 1;
      dst += b.observations.size();
      if (kept != k) requests[kept] = std::move(r);
      ++kept;
    }
    requests.resize(kept);
    if (requests.empty()) continue;
    n = static_cast<int64_t>(slots.size());
    frames += stepped;

    std::optional<torch::Tensor> actions = act_on(requests, slots, obs_buffer.narrow(0, 0, n));
    if (!actions) return;  // the model diverged: failed() says so
    if (!requests.empty()) gateway.reply(requests, actions->data_ptr());

    agent->take_finished_episodes(finished);
    if (!finished.empty()) count_episodes(finished);
    finished.clear();
    inference_envs += n;
    inference_batches += 1;
  }
}

void Learner::Impl::drop_request(const StepRequest& r, uint32_t observed, const std::string& reason) {
  for (uint32_t i = 0; i < observed; ++i) {
    agent->reset_slot(static_cast<int>(r.slot_begin + i));
    env_returns.reset_slot(static_cast<int>(r.slot_begin + i));
  }
  gateway.refuse(r.link, reason);
}

std::optional<torch::Tensor> Learner::Impl::act_on(std::vector<StepRequest>& requests, std::vector<int64_t>& slots,
                                                   torch::Tensor obs) {
  while (!requests.empty()) {
    try {
      return agent->act(slots, obs, optimizer_steps.load());
    } catch (const NonFiniteOutputs& e) {
      if (!agent->weights_finite()) {
        fail("the model's outputs went non-finite at optimizer step " + std::to_string(optimizer_steps.load()) +
             ": its weights hold NaN or infinity (training diverged; lower optimizer.lr or "
             "optimizer.max_grad_norm and resume from the last good checkpoint)");
        return std::nullopt;
      }
      // The weights are fine: those rows' observations, finite but huge,
      // overflowed the net. Their actors lose the connection; the rest are acted on again.
      std::vector<StepRequest> good;
      std::vector<int64_t> good_slots;
      std::vector<int64_t> good_rows;
      size_t bad = 0;
      int64_t row = 0;
      for (StepRequest& r : requests) {
        const int64_t count = r.batch.count;
        int64_t bad_row = -1;
        while (bad < e.rows().size() && e.rows()[bad] < row + count) bad_row = e.rows()[bad++];
        if (bad_row >= 0) {
          drop_request(r, r.batch.count,
                       "bad StepBatch: the observation of env " + std::to_string(r.batch.env_begin + (bad_row - row)) +
                           " made the model's outputs non-finite");
        } else {
          for (int64_t i = 0; i < count; ++i) {
            good_slots.push_back(slots[static_cast<size_t>(row + i)]);
            good_rows.push_back(row + i);
          }
          good.push_back(std::move(r));
        }
        row += count;
      }
      requests = std::move(good);
      slots = std::move(good_slots);
      if (!requests.empty()) obs = obs.index_select(0, torch::tensor(good_rows, torch::kInt64));
    }
  }
  return torch::Tensor();
}

void Learner::Impl::fail(const std::string& why) {
  {
    base::MutexLock lock(stats_mu);
    if (!failure.empty()) return;
    failure = why;
  }
  base::log_error("learner: " + why);
}

void Learner::Impl::count_episodes(const std::vector<EpisodeResult>& finished) {
  base::MutexLock lock(stats_mu);
  const EpisodeCounts counts = episode_means.add(finished, env_returns, eval_slot);
  episodes += counts.episodes;
  eval_episodes += counts.eval_episodes;
}

void Learner::Impl::training_loop() {
  // Intra-op thread counts belong to the thread that sets them (OpenMP), so
  // each engine thread sets its own.
  at::set_num_threads(std::max(1, cfg.learner.torch_threads));
  while (agent->await_batch()) {
    wait_while_paused();
    if (first_batch_ns.load(std::memory_order_relaxed) < 0) first_batch_ns.store(steady_ns());
    base::MutexLock train(train_mu);
    if (hot_pending.load(std::memory_order_acquire)) take_hot_config();
    // Schedules were validated at load time (scripts/lua_schedules.h).
    if (!train_cfg.schedules.empty()) apply_schedules(train_cfg, static_cast<double>(frames.load()));
    const OptimizerConfig& opt = train_cfg.optimizer;
    double lr = opt.lr;
    if (opt.lr_decay_frames > 0) {
      lr *= std::max(0.0, 1.0 - static_cast<double>(frames.load()) / opt.lr_decay_frames);
    }
    TrainReport step = agent->train(train_cfg, lr, optimizer_steps.load());
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
    // Checked while train_mu is held, so no checkpoint can take these weights.
    if (!agent->weights_finite()) {
      fail("the model's weights went non-finite at optimizer step " + std::to_string(optimizer_steps.load()) +
           " (training diverged; lower optimizer.lr or optimizer.max_grad_norm and resume from the last good "
           "checkpoint)");
      return;
    }
    if (recorder) {
      recorder->set_learner_step(optimizer_steps.load());
      recorder->set_config_version(applied_config_version.load());
    }
    base::MutexLock lock(stats_mu);
    last_step.loss_total = step.loss_total;
    last_step.grad_norm = step.grad_norm;
    last_step.learning_rate = lr;
    last_step.metrics = std::move(step.metrics);
  }
}

void Learner::Impl::take_hot_config() {
  base::MutexLock lock(hot_mu);
  hot_pending.store(false, std::memory_order_relaxed);
  if (!pending_hot) return;
  copy_fields(*pending_hot, train_cfg, ReloadClass::kHot);
  pending_hot.reset();
  applied_config_version.store(config_version.load());
}

Learner::Learner(const ExperimentConfig& config, std::string run_id) : spec_(checked_spec(config)) {
  torch::manual_seed(config.seed);
  impl_ = std::make_unique<Impl>(config, std::move(run_id), spec_);
}

Learner::~Learner() { stop(); }

rpc::ActorService& Learner::actor_service() { return impl_->gateway; }

void Learner::set_io_pump(std::function<void(std::chrono::nanoseconds)> pump, std::function<void()> wake) {
  if (impl_->started) throw std::logic_error("Learner::set_io_pump must come before start()");
  impl_->batcher.set_pump(std::move(pump), std::move(wake));
}

void Learner::set_auth_token(std::string token) {
  if (impl_->started) throw std::logic_error("Learner::set_auth_token must come before start()");
  impl_->gateway.set_auth_token(std::move(token));
}

Counters Learner::restore(const std::string& checkpoint_path) {
  if (impl_->started) throw std::logic_error("Learner::restore must come before start()");
  Counters c = impl_->agent->restore(checkpoint_path);
  impl_->optimizer_steps = c.optimizer_steps;
  impl_->frames = c.frames;
  impl_->episodes = c.episodes;
  impl_->trained_frames = c.trained_frames;
  impl_->eval_episodes = c.eval_episodes;
  impl_->restored_train_s = c.train_s;
  return c;
}

std::vector<std::string> Learner::checkpoint_companions() const { return impl_->agent->checkpoint_companions(); }

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
  // Training time ends here: the final checkpoint, saved after this, holds it.
  m.stopped_ns.store(Impl::steady_ns());
  {
    base::MutexLock lock(m.pause_mu);
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
  if (m.recorder) {
    throw std::logic_error("Learner::record_to: already recording to " + m.recorder->stats().directory);
  }
  const int64_t next_episode_id = ExperienceRecorder::next_episode_id(directory);  // before a new segment opens
  m.recorder = std::make_unique<ExperienceRecorder>(m.cfg.record, directory, m.run_id, m.spec,
                                                    UnrollShape::from_spec(m.spec, m.agent->unroll_length()),
                                                    m.cfg.topology.envs_per_actor);
  m.recorder->set_learner_step(m.optimizer_steps.load());
  m.agent->set_recorder(m.recorder.get(), next_episode_id);
}

void Learner::set_hot_config(const ExperimentConfig& config, uint64_t version) {
  Impl& m = *impl_;
  base::MutexLock lock(m.hot_mu);
  if (version <= m.config_version.load()) {
    throw std::invalid_argument("Learner::set_hot_config: version " + std::to_string(version) +
                                " is not newer than " + std::to_string(m.config_version.load()));
  }
  m.pending_hot = config;
  m.reward_shaping.store(!config.reward_shaping.source.empty());
  m.config_version.store(version);
  m.hot_pending.store(true, std::memory_order_release);
  m.gateway.publish_boundary(version, encode_actor_config(actor_config_of(config)));
}

void Learner::set_frame_limit(int64_t frames) {
  Impl& m = *impl_;
  {
    base::MutexLock lock(m.pause_mu);
    m.frame_limit.store(frames);
  }
  m.pause_cv.notify_all();
}

void Learner::set_paused(bool paused) {
  Impl& m = *impl_;
  {
    base::MutexLock lock(m.pause_mu);
    m.paused = paused;
  }
  m.pause_cv.notify_all();
}

Evaluation Learner::evaluate(int episodes, uint64_t seed, bool greedy, int64_t max_steps) {
  return play_episodes(impl_->cfg.env, impl_->spec, *impl_->agent, episodes, seed, greedy, max_steps);
}

LearnerStats Learner::stats() const {
  const Impl& m = *impl_;
  LearnerStats s;
  {
    base::MutexLock lock(m.stats_mu);
    m.episode_means.fill(s);
    s.loss_total = m.last_step.loss_total;
    s.grad_norm = m.last_step.grad_norm;
    s.learning_rate = m.last_step.learning_rate;
    s.agent_metrics = m.last_step.metrics;
    s.failure = m.failure;
  }
  s.frames = m.frames.load();
  s.reward_shaping = m.reward_shaping.load();
  s.config_version = m.config_version.load();
  s.applied_config_version = m.applied_config_version.load();
  {
    base::MutexLock lock(m.pause_mu);
    s.paused = m.paused;
  }
  s.episodes = m.episodes.load();
  s.eval_episodes = m.eval_episodes.load();
  s.optimizer_steps = m.optimizer_steps.load();
  s.trained_frames = m.trained_frames.load();
  s.train_s = m.train_seconds();
  AgentStats agent = m.agent->stats();
  s.queue_size = agent.queue_size;
  s.agent_metrics.insert(s.agent_metrics.end(), std::make_move_iterator(agent.metrics.begin()),
                         std::make_move_iterator(agent.metrics.end()));
  if (m.recorder) s.record = m.recorder->stats();
  s.inference_batches = m.inference_batches.load();
  s.mean_batch_envs = s.inference_batches ? static_cast<double>(m.inference_envs.load()) /
                                                static_cast<double>(s.inference_batches)
                                          : 0.0;
  s.actors_connected = m.gateway.actors_connected();
  s.auth_failures = m.gateway.auth_failures();
  s.nonfinite_replaced = m.gateway.nonfinite_replaced();
  return s;
}

std::vector<ActorEvent> Learner::take_actor_events() { return impl_->gateway.take_events(); }

std::vector<int> Learner::release_hung_actors(double timeout_s) { return impl_->gateway.release_hung(timeout_s); }

uint64_t Learner::actor_step_batches(int actor_id) const { return impl_->gateway.step_batches(actor_id); }

void Learner::expect_actors_to_leave() { impl_->gateway.expect_leaves(); }

void Learner::save_checkpoint(const std::string& path, double elapsed_s) {
  save_checkpoint([&](int64_t) { return path; }, elapsed_s);
}

std::string Learner::save_checkpoint(const std::function<std::string(int64_t step)>& path_of_step, double elapsed_s) {
  Impl& m = *impl_;
  // Held through the save: no step can change the weights or the step count
  // between reading the counters and writing the files.
  base::MutexLock train(m.train_mu);
  if (m.failed()) {
    throw CheckpointError("not saved: the model's weights are not finite (training diverged); the last good "
                          "checkpoint stays");
  }
  Counters c;
  c.optimizer_steps = m.optimizer_steps.load();
  c.frames = m.frames.load();
  c.episodes = m.episodes.load();
  c.trained_frames = m.trained_frames.load();
  c.eval_episodes = m.eval_episodes.load();
  c.elapsed_s = elapsed_s;
  c.train_s = m.train_seconds();
  const std::string path = path_of_step(c.optimizer_steps);
  m.agent->save(path, c);
  return path;
}

}  // namespace moonseed::engine
