// The public Learner API (learner.h) over Learner::Impl (learner_impl.h):
// construction, start and stop, restore and checkpoints, hot config, pause,
// evaluation and the counters. The threads it starts are in learner.cc.
#include "base/thread_name.h"
#include "engine/learner/learner_impl.h"
#include "engine/run/checkpoint_manifest.h"
#include "envs/describe.h"

#include "envs/wrappers/wrappers.h"

#include <filesystem>
#include <functional>

namespace moonseed::engine {
namespace {

// The env's spec, once the config has passed the rules the loader checks
// (engine/config/config_problems.h): a config built in C++ skips the loader.
// Checked before the env is described; the constructor checks again (cheap).
envs::EnvSpec checked_spec(const ExperimentConfig& config) {
  check_config(config);
  return model_env_spec(config);
}

// Writes FILE's data files with `save`, then seals them (FILE.sum, written
// last: engine/run/checkpoint_manifest.h). A manifest of an earlier file at
// FILE (a checkpoint of the same step) goes first, so that it never describes
// the new files. A checkpoint that cannot be sealed is removed whole, as a
// save that failed: one without its manifest is not resumed.
void save_sealed(const std::string& file, const std::vector<std::string>& companions,
                 const std::function<void()>& save) {
  try {
    unseal_checkpoint(file);
  } catch (const std::exception& e) {
    throw CheckpointError(e.what());
  }
  save();
  try {
    seal_checkpoint(file, companions);
  } catch (const std::exception& e) {
    std::error_code ec;
    std::filesystem::remove(file, ec);
    for (const std::string& suffix : companions) std::filesystem::remove(file + suffix, ec);
    throw CheckpointError(std::string(e.what()) + " (its checkpoint " + file + " is removed: it could not be sealed)");
  }
}

}  // namespace

envs::EnvFiles env_files(const EnvConfig& env) { return {env.model, env.plugin, env.python, env.python_path}; }

envs::EnvSpec model_env_spec(const ExperimentConfig& config) {
  // A plugin or Python env is described by a child process: user code never runs in the learner's.
  return envs::wrapped_spec(envs::describe_env(config.env.id, config.env.options, env_files(config.env)).spec,
                            config.env.wrappers);
}

Learner::Learner(const ExperimentConfig& config, std::string run_id) : Learner(config, std::move(run_id), checked_spec(config)) {}

Learner::Learner(const ExperimentConfig& config, std::string run_id, envs::EnvSpec spec) : spec_(std::move(spec)) {
  check_config(config);
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

void Learner::set_actor_placement(std::function<std::optional<std::string>()> placement) {
  if (impl_->started) throw std::logic_error("Learner::set_actor_placement must come before start()");
  impl_->gateway.set_placement(std::move(placement));
}

Counters Learner::restore(const std::string& checkpoint_path) {
  if (impl_->started) throw std::logic_error("Learner::restore must come before start()");
  Counters c = impl_->agent->restore(checkpoint_path);
  impl_->optimizer_steps = c.optimizer_steps;
  impl_->take_counters(c);
  return c;
}

void Learner::join_group(StepSync& sync, std::function<ExperimentConfig(uint64_t)> config_of_version,
                         std::function<void(uint64_t, const ExperimentConfig&)> publish) {
  Impl& m = *impl_;
  if (m.started) throw std::logic_error("Learner::join_group must come before start()");
  m.sync = &sync;
  m.config_of_version = std::move(config_of_version);
  m.publish_config = std::move(publish);
  m.agent->set_gradient_hook([&sync](const std::vector<torch::Tensor>& params) { sync.average_gradients(params); });
}

uint64_t Learner::weights_hash() {
  base::MutexLock train(impl_->train_mu);
  return impl_->agent->weights_hash();
}

void Learner::request_group_stop() {
  impl_->group_stop_requested.store(true);
  impl_->pause_cv.notify_all();
}

void Learner::keep_rank_parts(std::function<std::string(int64_t step)> part_of_step, std::function<void()> saved) {
  if (impl_->started) throw std::logic_error("Learner::keep_rank_parts must come before start()");
  impl_->part_of_step = std::move(part_of_step);
  impl_->parts_saved = std::move(saved);
}

bool Learner::save_rank_part() {
  base::MutexLock train(impl_->train_mu);
  return impl_->sync == nullptr || impl_->save_rank_part();
}

Counters Learner::restore_rank_counters(const std::string& part, int rank) {
  Impl& m = *impl_;
  if (m.started) throw std::logic_error("Learner::restore_rank_counters must come before start()");
  const Counters c = load_rank_counters(part, rank);
  m.take_counters(c);
  return c;
}

Counters Learner::restore_group_rank(const std::string& model, const std::string& part, int rank) {
  Impl& m = *impl_;
  if (m.started) throw std::logic_error("Learner::restore_group_rank must come before start()");
  // Without a part, the companions are looked for where there are none: the
  // algorithm starts what they hold afresh (R2D2: an empty replay, said so).
  const Counters group = m.agent->restore(model, part.empty() ? model + ".no-rank-part" : part);
  m.optimizer_steps = group.optimizer_steps;
  m.restored_train_s = 0;
  // This rank's own counters (zeros without a part), at the group's step and wall time.
  Counters c = part.empty() ? Counters{} : restore_rank_counters(part, rank);
  c.optimizer_steps = group.optimizer_steps;
  c.elapsed_s = group.elapsed_s;
  return c;
}

std::vector<std::string> Learner::checkpoint_companions() const { return impl_->agent->checkpoint_companions(); }

void Learner::start() {
  Impl& m = *impl_;
  if (m.started) return;
  m.started = true;
  m.inference_thread = std::thread([&m] {
    base::set_thread_name("ms-infer");
    m.inference_loop();
  });
  m.training_thread = std::thread([&m] {
    base::set_thread_name("ms-train");
    m.training_loop();
  });
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
  models::prepare_math_thread(m.cfg.learner.torch_threads);
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
  if (m.publish_config) m.publish_config(version, config);
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
    s.group_failure = m.group_failure;
  }
  s.frames = m.frames.load();
  s.group_frames = m.sync != nullptr ? m.group_frames_now() : s.frames;
  s.group_stopped = m.group_stopped.load();
  s.weights_checked_step = m.weights_checked_step.load();
  s.steps_without_batch = m.steps_without_batch.load();
  s.weights_hash = m.weights_hash.load();
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

std::vector<HungActor> Learner::release_hung_actors(double timeout_s) { return impl_->gateway.release_hung(timeout_s); }

uint64_t Learner::actor_step_batches(int actor_id) const { return impl_->gateway.step_batches(actor_id); }

uint64_t Learner::actor_env_steps(int actor_id) const { return impl_->gateway.env_steps(actor_id); }

ActorList Learner::actor_list(size_t limit) const { return impl_->gateway.actor_list(limit); }

void Learner::expect_actors_to_leave() { impl_->gateway.expect_leaves(); }

void Learner::save_checkpoint(const std::string& path, double elapsed_s) {
  save_checkpoint([&](int64_t) { return path; }, elapsed_s);
}

std::string Learner::save_checkpoint(const std::function<std::string(int64_t step)>& path_of_step, double elapsed_s) {
  Impl& m = *impl_;
  if (m.sync != nullptr && m.started && !m.group_stopped.load()) {
    // A group's checkpoint is taken at a round all ranks agree on, by the
    // training thread, so that every rank's part is of the same step.
    Impl::CheckpointRequest request;
    request.path_of_step = path_of_step;
    request.elapsed_s = elapsed_s;
    base::MutexLock lock(m.checkpoint_mu);
    m.checkpoint_request = &request;
    m.checkpoint_wanted.store(true);
    while (!request.done && !m.group_stopped.load()) m.checkpoint_cv.wait_for(lock, std::chrono::milliseconds(100));
    m.checkpoint_request = nullptr;
    m.checkpoint_wanted.store(false);
    if (request.done) {
      if (!request.error.empty()) throw CheckpointError(request.error);
      return request.path;
    }
    // The group stopped first: the checkpoint of its last step, below.
  }
  // Held through the save: no step can change the weights or the step count
  // between reading the counters and writing the files.
  base::MutexLock train(m.train_mu);
  if (m.sync != nullptr) {
    m.save_rank_part();  // a group that stopped without a last round (a rank failed): this rank's part now
    return m.save_group_model(path_of_step, elapsed_s);
  }
  if (m.failed()) {
    throw CheckpointError("not saved: the model's weights are not finite (training diverged); the last good "
                          "checkpoint stays");
  }
  const Counters c = m.counters_now(elapsed_s, true);
  const std::string path = path_of_step(c.optimizer_steps);
  save_sealed(path, m.agent->checkpoint_companions(), [&] { m.agent->save(path, c); });
  return path;
}

Counters Learner::Impl::counters_now(double elapsed_s, bool own) const {
  Counters c;
  c.optimizer_steps = optimizer_steps.load();
  // A group's checkpoint holds the group's frames (schedules read them); each
  // rank's part holds its own, which it resumes with.
  c.frames = own ? frames.load() : group_frames_now();
  c.episodes = episodes.load();
  c.trained_frames = trained_frames.load();
  c.eval_episodes = eval_episodes.load();
  c.elapsed_s = elapsed_s;
  c.train_s = train_seconds();
  return c;
}

bool Learner::Impl::save_rank_part() {
  const int64_t step = optimizer_steps.load();
  if (!part_of_step || part_step == step) return true;
  if (failed()) return false;  // weights that diverged are never a checkpoint's
  const std::string part = part_of_step(step);
  try {
    // The companions first, the counters next, the manifest last: the .part
    // file says the part's data is whole, its manifest seals it.
    const std::vector<std::string> companions =
        sync->rank() != 0 ? agent->checkpoint_companions() : std::vector<std::string>{};
    save_sealed(part, companions, [&] {
      if (sync->rank() != 0) agent->save_companions(part);
      save_rank_counters(part, counters_now(0, true), sync->rank());
    });
  } catch (const std::exception& e) {
    base::log_error("learner rank " + std::to_string(sync->rank()) + ": its part of the checkpoint of step " +
                    std::to_string(step) + " was not saved: " + e.what() +
                    " (a resume takes its newest earlier part)");
    return false;
  }
  part_step = step;
  if (parts_saved) parts_saved();
  return true;
}

std::string Learner::Impl::save_group_model(const std::function<std::string(int64_t)>& path_of_step,
                                            double elapsed_s) {
  if (failed()) {
    throw CheckpointError("not saved: the model's weights are not finite (training diverged); the last good "
                          "checkpoint stays");
  }
  const Counters c = counters_now(elapsed_s, false);
  const std::string path = path_of_step(c.optimizer_steps);
  save_sealed(path, agent->checkpoint_companions(), [&] { agent->save(path, c); });
  return path;
}

void Learner::Impl::checkpoint_round() {
  save_rank_part();
  if (sync->rank() != 0) return;
  base::MutexLock lock(checkpoint_mu);
  CheckpointRequest* request = checkpoint_request;
  if (request == nullptr || request->done) return;
  try {
    request->path = save_group_model(request->path_of_step, request->elapsed_s);
  } catch (const std::exception& e) {
    request->error = e.what();
  }
  request->done = true;
  checkpoint_wanted.store(false);
  checkpoint_cv.notify_all();
}

}  // namespace moonseed::engine
