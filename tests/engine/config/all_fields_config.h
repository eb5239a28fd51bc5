// A valid config in which every field differs from its default: round trips
// and schema coverage tests use it, so a field the schema misses shows up.
#pragma once

#include <cmath>
#include <string>

#include "engine/config/experiment_config.h"
#include "engine/config/schema.h"
#include "engine/config/section_registry.h"
#include "engine/r2d2/config/r2d2_config.h"
#include "engine/vtrace/config/vtrace_config.h"

namespace moonseed::test {

// Every field of every registered section but the two set by hand below (APPO's, a test
// algorithm's): a value of its type, inside its range, other than its default. So a section
// registered from an algorithm's folder needs no line here.
inline void change_other_sections(engine::ExperimentConfig& c) {
  using engine::FieldType;
  for (const engine::FieldSchema& f : engine::config_schema()) {
    const std::string section = f.path.substr(0, f.path.find('.'));
    if (section == "vtrace" || section == "r2d2" || engine::find_section(section) == nullptr) continue;
    const engine::FieldValue value = f.get(c);
    if (f.type == FieldType::kNumber) {
      const double d = std::get<double>(value);
      double changed = std::isfinite(f.max) ? (d + f.max) / 2 : d * 1.5 + 0.25;
      if (changed == d) changed = (d + f.min) / 2;
      f.set(c, changed);
    } else if (f.type == FieldType::kInteger) {
      const int64_t i = std::get<int64_t>(value);
      f.set(c, static_cast<int64_t>(i + 1 <= f.max ? i + 1 : i - 1));
    } else if (f.type == FieldType::kBool) {
      f.set(c, !std::get<bool>(value));
    } else if (f.type == FieldType::kString) {
      std::string changed = std::get<std::string>(value) + "x";
      for (const std::string& a : f.allowed) {
        if (a != std::get<std::string>(value)) changed = a;
      }
      f.set(c, changed);
    }
  }
}

inline engine::ExperimentConfig config_with_every_field_changed() {
  engine::ExperimentConfig c;
  c.name = "every-field.v2";
  c.algo = "r2d2";
  c.seed = 123456789012345;
  c.runs_dir = "/tmp/some \"quoted\" runs";
  c.group_access = true;
  c.env.id = "CartPole-v1";  // the env every build has: cannot differ
  c.env.options = {{"max_episode_steps", 200}};  // env.model and env.plugin stay "": CartPole reads no model file and is built in
  c.env.wrappers = {{"time_limit", {{"max_steps", 150}}},
                    {"frame_stack", {{"n", 2}}},
                    {"clip_reward", {{"low", -0.5}, {"high", 0.25}}}};
  c.model.kind = "layers";
  c.model.hidden = {128, 7, 3};
  c.model.activation = "relu";
  c.model.layers = {{"linear", 48}, {"elu"}, {"linear", 16}, {"tanh"}};
  c.model.shared_torso = true;
  c.model.init_log_std = -1.25;
  engine::VTraceConfig& v = c.section<engine::VTraceConfig>();
  v.gamma = 0.997;
  v.lambda = 0.95;
  v.rho_clip = 2.5;
  v.pg_rho_clip = 1.5;
  v.c_clip = 0.9;
  v.baseline_cost = 0.25;
  v.entropy_cost = 0.01;
  v.eval_greedy = true;
  engine::R2d2Config& r = c.section<engine::R2d2Config>();
  r.burn_in = 8;
  r.trace = 30;
  r.period = 19;
  r.n_step = 4;
  r.gamma = 0.95;
  r.eta = 0.75;
  r.rescale_eps = 2e-3;
  r.target_period = 400;
  r.batch = 24;
  r.capacity = 777;
  r.min_fill = 33;
  r.samples_per_insert = 2.5;
  r.insert_priorities = "learner";
  r.priority_exponent = 0.7;
  r.importance_exponent = 0.45;
  r.epsilon_base = 0.3;
  r.epsilon_alpha = 5;
  r.eval_epsilon = 0.01;
  r.head_hidden = 96;
  r.dueling = false;
  r.prev_action_reward = false;
  c.optimizer.kind = "rmsprop";
  c.optimizer.lr = 0.1 * 3;  // not exactly representable: tests number formatting
  c.optimizer.eps = 1e-5;
  c.optimizer.rmsprop_alpha = 0.9;
  c.optimizer.rmsprop_momentum = 0.5;
  c.optimizer.max_grad_norm = 0;
  c.optimizer.lr_decay_frames = 1e9;
  c.topology.actors = 3;
  c.topology.envs_per_actor = 17;
  c.topology.groups_per_actor = 1;
  c.topology.eval_envs_per_actor = 3;
  c.topology.local_actors = 2;
  c.topology.transport = "tcp";
  c.topology.listen = "127.0.0.1:4000";
  c.topology.actor_timeout_s = 12.5;
  c.topology.actor_deaths_to_park = 7;
  c.topology.actor_death_window_s = 120.5;
  c.topology.actor_memory_mb = 1536;
  c.topology.actor_max_backoff_s = 4.5;
  c.topology.learners = 3;
  c.topology.rank = 2;
  c.topology.rendezvous = "tcp:node001:29500";
  c.topology.group_timeout_s = 30;
  c.topology.weights_check_every = 50;
  c.inference.max_batch = 128;
  c.inference.deadline_us = 250;
  c.inference.idle_spin_us = 20;
  c.inference.io_threads = 2;
  c.inference.device = "cpu";
  c.inference.nonfinite = "replace";
  c.learner.batch = 8;
  c.learner.unroll = 40;
  c.learner.queue_capacity = 64;
  c.learner.torch_threads = 2;
  c.stop.frames = 5000000;
  c.stop.seconds = 90.5;
  c.stop.wall_seconds = 300.5;
  c.stop.return_mean = -150;
  c.stop.eval_return_mean = 180;
  c.stop.on_shaped_return = true;
  c.stop.final_eval_episodes = 3;
  c.log.interval_s = 2.5;
  c.log.progress = false;
  c.log.tensorboard = false;
  c.dashboard.listen = "127.0.0.1:8123";
  c.dashboard.hosts = "myhost.lab";
  c.checkpoint.interval_s = 60;
  c.checkpoint.keep = 5;
  c.record.enabled = true;
  c.record.dir = "/data/logs";
  c.record.full_queue = "drop";
  c.record.queue_mb = 64;
  c.record.chunk_kb = 512;
  c.record.segment_mb = 128;
  c.record.segment_age_s = 30;
  c.record.sync_interval_s = 0.5;
  c.record.sync_mb = 8;
  c.record.compress_threads = 2;
  c.record.codec = "none";
  c.record.lz4_acceleration = 8;
  c.record.delta = false;
  c.warm_start.log = "runs/teacher";
  c.warm_start.steps = 250;
  c.warm_start.bc_cost = 0.5;
  c.reward_shaping.source =
      "function(n, reward, obs, obs_size, terminated, truncated)\n"
      "    for i = 0, n - 1 do reward[i] = 2 * reward[i] - 0.5 * obs[i * obs_size] end\n"
      "  end";
  c.reward_shaping.chunk_name = "@exp.lua";
  c.reward_shaping.first_line = 12;
  change_other_sections(c);
  return c;
}

}  // namespace moonseed::test
