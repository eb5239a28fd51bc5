// The MuJoCo env family (docs/envs-mujoco.md): any MJCF model stepped by Debian's libmujoco
// 2.2.2, with the reward and termination vocabulary of Gymnasium's locomotion tasks.
//
// Design:
// - The model: a file (MuJoCo/Model-v0 takes env.model; MuJoCo/Humanoid-v0 finds the
//   humanoid.xml of Debian's libmujoco-samples) or an MJCF text built into the binary
//   (MuJoCo/InvertedPendulum-v0, envs/mujoco/models/inverted_pendulum.xml). Each env loads its
//   own mjModel and mjData and frees them with itself; nothing is shared between envs, so envs
//   of one actor never contend. A model that cannot be loaded throws std::invalid_argument
//   with the path and mj_loadXML's own message.
// - Observation: float32 [qpos[k:], qvel], k = 2 when exclude_current_positions_from_observation
//   is set (the free root's x and y, as Gymnasium's Humanoid and Ant leave them out), else 0.
//   Unbounded box. A value that is not finite is written as 0 and ends the episode.
// - Action: one float32 per actuator, each clipped to its ctrlrange (unlimited actuators are not
//   clipped) and written to ctrl; the spec's bounds are the ctrlranges (+-inf when unlimited).
// - One step = frame_skip calls of mj_step, dt = opt.timestep * frame_skip. Reward, as
//   Gymnasium's v4 locomotion tasks: forward_reward_weight * (x_after - x_before) / dt
//   + healthy_reward (paid while healthy, and always when terminate_when_unhealthy: v4's rule)
//   - ctrl_cost_weight * sum(ctrl^2) - min(contact_cost_weight * sum(cfrc_ext^2),
//   contact_cost_max). x is the centre of mass's x (mass-weighted xipos, as Humanoid) when
//   forward_com = 1, else qpos[0]; it is measured after the last mj_step of a step, as Gymnasium
//   does (mj_step leaves xipos at the last sub-step's start), and kept for the next step.
//   cfrc_ext is filled by mj_rnePostConstraint, only when contact_cost_weight > 0.
// - Healthy: qpos[healthy_z_index] strictly inside (healthy_z_min, healthy_z_max) and
//   qpos[healthy_angle_index] strictly inside (healthy_angle_min, healthy_angle_max), as
//   Gymnasium's Humanoid and Hopper compare (an index of -1 checks nothing).
//   terminated = !healthy when terminate_when_unhealthy.
// - Reset: mj_resetData, then qpos = qpos0 + U(-s, s) for each of nq values, then qvel =
//   U(-s, s) for each of nv (Gymnasium's Humanoid/Hopper rule, the generator's draws in that
//   order, so a seed gives Gymnasium's noise), or with normal_qvel_noise qvel = s * N(0, 1) (as
//   Ant and HalfCheetah draw; our normal comes from the same generator by Marsaglia's polar
//   method, not NumPy's ziggurat stream); s = reset_noise_scale. Then mj_forward.
// - State (get_state): [qpos (nq), qvel (nv), act (na), qacc_warmstart (nv), time, x], then
//   EpisodicEnv's bookkeeping. qacc_warmstart is the solver's starting point, which changes the
//   next step's result; with it set_state(get_state()) continues bit for bit.
//
// MuJoCo's warnings go to base::log_warning; MuJoCo would otherwise print them and write
// MUJOCO_LOG.TXT in the working directory. Not thread-safe: one thread per env, as Env says;
// distinct envs may run on distinct threads (libmujoco keeps no per-call global state).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "envs/episodic_env.h"

namespace moonseed::envs {

// Where a model comes from: a file, or MJCF text built into the binary (then `path` is the
// name shown in messages).
struct MujocoModelSource {
  std::string path;
  std::string_view embedded_xml;  // empty: read `path` from disk
};

// The task: everything the experiment declares besides the model (env.options).
struct MujocoTask {
  int frame_skip = 5;
  int max_episode_steps = 1000;
  bool exclude_current_positions = true;
  double forward_reward_weight = 1.25;
  bool forward_com = true;
  double ctrl_cost_weight = 0.1;
  double contact_cost_weight = 0;
  double contact_cost_max = 10;
  double healthy_reward = 5;
  bool terminate_when_unhealthy = true;
  int healthy_z_index = -1;
  double healthy_z_min = 1.0, healthy_z_max = 2.0;
  int healthy_angle_index = -1;
  double healthy_angle_min = -0.2, healthy_angle_max = 0.2;
  double reset_noise_scale = 1e-2;
  bool normal_qvel_noise = false;
};

class MujocoEnv final : public EpisodicEnv {
 public:
  static constexpr const char* kModelId = "MuJoCo/Model-v0";
  static constexpr const char* kHumanoidId = "MuJoCo/Humanoid-v0";
  static constexpr const char* kInvertedPendulumId = "MuJoCo/InvertedPendulum-v0";
  // Debian's libmujoco-samples puts the humanoid here; humanoid_model_path() checks it.
  static constexpr const char* kHumanoidPath = "/usr/share/mujoco/model/humanoid/humanoid.xml";

  // Loads the model and checks the task against it; std::invalid_argument naming `id` and the
  // path otherwise.
  MujocoEnv(const std::string& id, const MujocoModelSource& source, const MujocoTask& task);
  ~MujocoEnv() override;
  MujocoEnv(const MujocoEnv&) = delete;
  MujocoEnv& operator=(const MujocoEnv&) = delete;

  // The shipped inverted pendulum's MJCF text.
  static std::string_view inverted_pendulum_xml();
  // kHumanoidPath, or std::invalid_argument saying to install libmujoco-samples.
  static std::string humanoid_model_path();

  // The simulated seconds one env step covers: opt.timestep * frame_skip.
  double dt() const;
  int frame_skip() const { return task_.frame_skip; }
  int nq() const;
  int nv() const;

 private:
  struct Loaded;  // the mjModel and its mjData, freed together

  MujocoEnv(const std::string& id, std::unique_ptr<Loaded> loaded, const MujocoTask& task);
  void start_episode(void* obs) override;
  StepResult advance(const Action& action, void* obs) override;
  void save_state(double* state) const override;
  void load_state(const double* state, const Episode& episode) override;
  // Writes the observation; false when a value of it is not finite (written as 0).
  bool observe(void* obs) const;
  double forward_position() const;
  bool healthy() const;
  double normal();

  std::unique_ptr<Loaded> sim_;
  MujocoTask task_;
  double x_ = 0;  // forward_position() after the last step (or the reset)
};

}  // namespace moonseed::envs
