// The learner's two threads over Learner::Impl (learner_impl.h): inference
// (batches the actors' steps, acts, hands each step to the agent) and
// training (the agent's batches, hot config). The public API that starts and
// stops them is in learner_control.cc.
#include "engine/learner/learner_impl.h"

namespace moonseed::engine {

void Learner::Impl::inference_loop() {
  models::prepare_math_thread(1);  // batches of tens of envs: more threads only add overhead
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
  const EpisodeCounts counts = episode_means.add(finished, eval_slot);
  episodes += counts.episodes;
  eval_episodes += counts.eval_episodes;
}

void Learner::Impl::training_loop() {
  // Intra-op thread counts and the denormal flush belong to the thread that
  // sets them, so each engine thread sets its own.
  models::prepare_math_thread(cfg.learner.torch_threads);
  if (sync != nullptr) {
    group_training_loop();
    return;
  }
  while (agent->await_batch()) {
    wait_while_paused();
    if (first_batch_ns.load(std::memory_order_relaxed) < 0) first_batch_ns.store(steady_ns());
    base::MutexLock train(train_mu);
    if (hot_pending.load(std::memory_order_acquire)) take_hot_config();
    if (!train_one_step(frames.load())) continue;
    // Checked while train_mu is held, so no checkpoint can take these weights.
    if (!agent->weights_finite()) {
      fail("the model's weights went non-finite at optimizer step " + std::to_string(optimizer_steps.load()) +
           " (training diverged; lower optimizer.lr or optimizer.max_grad_norm and resume from the last good "
           "checkpoint)");
      return;
    }
  }
}

bool Learner::Impl::train_one_step(int64_t at_frames) {
  // Schedules were validated at load time (scripts/api/lua_schedules.h).
  if (!train_cfg.schedules.empty()) apply_schedules(train_cfg, static_cast<double>(at_frames));
  const OptimizerConfig& opt = train_cfg.optimizer;
  double lr = opt.lr;
  if (opt.lr_decay_frames > 0) {
    lr *= std::max(0.0, 1.0 - static_cast<double>(at_frames) / opt.lr_decay_frames);
  }
  TrainReport step = agent->train(train_cfg, lr, optimizer_steps.load());
  if (!step.applied) {
    // One bad batch must not poison the weights: the agent dropped it; say so once in a while.
    if (skipped_steps++ % 100 == 0) {
      base::log_warning("gradient norm is " + base::number_text(step.grad_norm) + "; skipped " +
                        std::to_string(skipped_steps) + " training step(s) so far");
    }
    return false;
  }
  optimizer_steps += 1;
  trained_frames += step.frames;
  if (recorder) {
    recorder->set_learner_step(optimizer_steps.load());
    recorder->set_config_version(applied_config_version.load());
  }
  base::MutexLock lock(stats_mu);
  last_step.loss_total = step.loss_total;
  last_step.grad_norm = step.grad_norm;
  last_step.learning_rate = lr;
  last_step.metrics = std::move(step.metrics);
  return true;
}

void Learner::Impl::group_training_loop() {
  // How long a rank waits for a batch before it joins the round without one.
  constexpr std::chrono::milliseconds kBatchWait{100};
  bool have_batch = false;
  try {
    for (;;) {
      if (!have_batch) have_batch = agent->await_batch_for(kBatchWait);
      StepProposal proposal;
      proposal.frames = frames.load();
      proposal.has_batch = have_batch;
      proposal.stop = (!have_batch && agent->closed()) || group_stop_requested.load();
      if (sync->rank() == 0) {
        proposal.config_version = config_version.load();
        proposal.checkpoint = checkpoint_wanted.load();
      }
      {
        base::MutexLock lock(pause_mu);
        proposal.paused = paused;
      }
      const StepAgreement agreed = sync->agree(proposal);
      frames_at_round.store(proposal.frames);
      group_frames_at_round.store(agreed.group_frames);
      if (agreed.checkpoint || agreed.stop) {
        // Every rank's part of the same step: this round trains nothing yet.
        base::MutexLock train(train_mu);
        checkpoint_round();
      }
      if (agreed.stop) break;
      if (agreed.paused) {
        // Every rank holds its batch and asks again: a paused rank pauses the group.
        base::MutexLock lock(pause_mu);
        pause_cv.wait_for(lock, std::chrono::milliseconds(50));
        continue;
      }
      if (agreed.batches == 0) continue;  // no rank has data yet: each waited kBatchWait
      if (first_batch_ns.load(std::memory_order_relaxed) < 0) first_batch_ns.store(steady_ns());
      base::MutexLock train(train_mu);
      if (agreed.config_version > applied_config_version.load()) {
        const ExperimentConfig next = config_of_version(agreed.config_version);
        copy_fields(next, train_cfg, ReloadClass::kHot);
        applied_config_version.store(agreed.config_version);
        if (sync->rank() != 0) {
          reward_shaping.store(!next.reward_shaping.source.empty());
          config_version.store(agreed.config_version);
          gateway.publish_boundary(agreed.config_version, encode_actor_config(actor_config_of(next)));
        }
      }
      // Every rank applies this step, with or without a batch of its own, so the weights stay equal;
      // every rank skips it alike when the averaged gradient is not finite.
      const bool applied = have_batch ? train_one_step(agreed.group_frames) : train_without_batch(agreed.group_frames);
      have_batch = false;
      if (!applied) continue;
      const int64_t step = optimizer_steps.load();
      const bool check = sync->check_every() > 0 && step % sync->check_every() == 0;
      const uint64_t hash = check ? agent->weights_hash() : 0;
      sync->after_step(step, hash);
      if (check) {
        weights_hash.store(hash);
        weights_checked_step.store(step);
      }
      if (!agent->weights_finite()) {
        fail("the model's weights went non-finite at optimizer step " + std::to_string(step) +
             " (training diverged; lower optimizer.lr or optimizer.max_grad_norm and resume from the last good "
             "checkpoint)");
        break;
      }
    }
  } catch (const std::exception& e) {
    // The weights are whole (a failed round applies no step): checkpoints still work.
    base::MutexLock lock(stats_mu);
    group_failure = e.what();
  }
  group_stopped.store(true);
}

bool Learner::Impl::train_without_batch(int64_t at_frames) {
  if (!train_cfg.schedules.empty()) apply_schedules(train_cfg, static_cast<double>(at_frames));
  const OptimizerConfig& opt = train_cfg.optimizer;
  double lr = opt.lr;
  if (opt.lr_decay_frames > 0) lr *= std::max(0.0, 1.0 - static_cast<double>(at_frames) / opt.lr_decay_frames);
  const TrainReport step = agent->train_without_batch(train_cfg, lr);
  if (!step.applied) return false;
  optimizer_steps += 1;
  steps_without_batch += 1;
  if (recorder) recorder->set_learner_step(optimizer_steps.load());
  return true;
}

void Learner::Impl::take_hot_config() {
  base::MutexLock lock(hot_mu);
  hot_pending.store(false, std::memory_order_relaxed);
  if (!pending_hot) return;
  copy_fields(*pending_hot, train_cfg, ReloadClass::kHot);
  pending_hot.reset();
  applied_config_version.store(config_version.load());
}

}  // namespace moonseed::engine
