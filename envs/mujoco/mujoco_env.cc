#include "envs/mujoco/mujoco_env.h"

#include <mujoco/mujoco.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>

#include "base/log.h"

namespace moonseed::envs {

// The text of envs/mujoco/models/inverted_pendulum.xml, generated at build time.
extern const char kInvertedPendulumXml[];

namespace {

constexpr int kErrorBytes = 1000;

void log_mujoco_warning(const char* text) { base::log(base::Severity::kWarning, "mujoco", text); }

// MuJoCo prints warnings and appends them to MUJOCO_LOG.TXT unless a handler takes them.
void route_mujoco_warnings() {
  static std::once_flag once;
  std::call_once(once, [] { mju_user_warning = log_mujoco_warning; });
}

// MuJoCo's messages span lines; a log line and a config issue are one line each.
std::string one_line(const std::string& text) {
  std::string out;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const size_t first = text.find_first_not_of(" \t\r", at);
    const size_t last = text.find_last_not_of(" \t\r", end == 0 ? 0 : end - 1);
    if (first != std::string::npos && first < end && last != std::string::npos && last >= first) {
      if (!out.empty()) out += "; ";
      out += text.substr(first, last - first + 1);
    }
    at = end + 1;
  }
  return out;
}

std::string describe_path(const std::string& id, const std::string& path) {
  return id + ": cannot load the MuJoCo model \"" + path + "\": ";
}

// mj_loadXML from disk, or from a one-file virtual file system holding the embedded text.
mjModel* load_model(const std::string& id, const MujocoModelSource& source) {
  char error[kErrorBytes] = {0};
  mjModel* model = nullptr;
  if (source.embedded_xml.empty()) {
    model = mj_loadXML(source.path.c_str(), nullptr, error, kErrorBytes);
  } else {
    auto vfs = std::make_unique<mjVFS>();  // ~2 MB of file name slots: not for the stack
    mj_defaultVFS(vfs.get());
    const std::string name = std::filesystem::path(source.path).filename().string();
    const int size = static_cast<int>(source.embedded_xml.size());
    if (mj_makeEmptyFileVFS(vfs.get(), name.c_str(), size) != 0) {
      throw std::logic_error(describe_path(id, source.path) + "the virtual file system refused it");
    }
    std::memcpy(vfs->filedata[mj_findFileVFS(vfs.get(), name.c_str())], source.embedded_xml.data(),
                source.embedded_xml.size());
    model = mj_loadXML(name.c_str(), vfs.get(), error, kErrorBytes);
    mj_deleteVFS(vfs.get());
  }
  if (model == nullptr) {
    std::error_code ec;
    const bool missing = source.embedded_xml.empty() && !std::filesystem::is_regular_file(source.path, ec);
    throw std::invalid_argument(describe_path(id, source.path) + (missing ? "no such file; " : "") +
                                "mj_loadXML says: " + one_line(error[0] ? error : "(no message)"));
  }
  return model;
}

void require_task(const std::string& id, const mjModel& m, const MujocoTask& t) {
  auto fail = [&](const std::string& what) { throw std::invalid_argument(id + ": " + what); };
  if (m.nu < 1) fail("the model has no actuator, so there is nothing to act on");
  if (m.nu > static_cast<int>(EpisodicEnv::kMaxActionValues)) {
    fail("the model has " + std::to_string(m.nu) + " actuators; MuJoCo envs take at most " +
         std::to_string(EpisodicEnv::kMaxActionValues));
  }
  if (t.exclude_current_positions && m.nq < 2) {
    fail("exclude_current_positions_from_observation leaves out qpos[0] and qpos[1], but the model has nq = " +
         std::to_string(m.nq));
  }
  for (const auto& [name, index] : {std::pair<const char*, int>{"healthy_z_index", t.healthy_z_index},
                                    {"healthy_angle_index", t.healthy_angle_index}}) {
    if (index < -1 || index >= m.nq) {
      fail(std::string(name) + " must be -1 (none) or a qpos index in [0, " + std::to_string(m.nq - 1) +
           "], got " + std::to_string(index));
    }
  }
  if (t.healthy_z_min > t.healthy_z_max) fail("healthy_z_min must be <= healthy_z_max");
  if (t.healthy_angle_min > t.healthy_angle_max) fail("healthy_angle_min must be <= healthy_angle_max");
}

}  // namespace

struct MujocoEnv::Loaded {
  mjModel* model = nullptr;
  mjData* data = nullptr;
  Loaded(const std::string& id, const MujocoModelSource& source) {
    route_mujoco_warnings();
    model = load_model(id, source);
    data = mj_makeData(model);
    if (data == nullptr) {
      mj_deleteModel(model);
      throw std::runtime_error(id + ": mj_makeData failed for \"" + source.path + "\"");
    }
  }
  ~Loaded() {
    mj_deleteData(data);
    mj_deleteModel(model);
  }
  Loaded(const Loaded&) = delete;
  Loaded& operator=(const Loaded&) = delete;
};

namespace {

EnvSpec spec_of(const std::string& id, const mjModel& m, const MujocoTask& task) {
  const int skipped = task.exclude_current_positions ? 2 : 0;
  Space observation;
  observation.kind = SpaceKind::kBox;
  observation.dtype = DType::kFloat32;
  observation.shape = {m.nq - skipped + m.nv};
  std::vector<float> low(static_cast<size_t>(m.nu)), high(static_cast<size_t>(m.nu));
  for (int i = 0; i < m.nu; ++i) {
    const bool limited = m.actuator_ctrllimited[i] != 0;
    low[static_cast<size_t>(i)] = limited ? static_cast<float>(m.actuator_ctrlrange[2 * i]) : -HUGE_VALF;
    high[static_cast<size_t>(i)] = limited ? static_cast<float>(m.actuator_ctrlrange[2 * i + 1]) : HUGE_VALF;
  }
  return EnvSpec{id, observation, float32_box(std::move(low), std::move(high)), task.max_episode_steps};
}

// [qpos, qvel, act, qacc_warmstart, time, x], then the bookkeeping.
size_t own_state_size(const mjModel& m) { return static_cast<size_t>(m.nq + 2 * m.nv + m.na + 2); }

}  // namespace

MujocoEnv::MujocoEnv(const std::string& id, const MujocoModelSource& source, const MujocoTask& task)
    : MujocoEnv(id, std::make_unique<Loaded>(id, source), task) {}

MujocoEnv::MujocoEnv(const std::string& id, std::unique_ptr<Loaded> loaded, const MujocoTask& task)
    : EpisodicEnv((require_task(id, *loaded->model, task), spec_of(id, *loaded->model, task)),
                  own_then_bookkeeping(own_state_size(*loaded->model))),
      sim_(std::move(loaded)),
      task_(task) {}

MujocoEnv::~MujocoEnv() = default;

std::string_view MujocoEnv::inverted_pendulum_xml() { return kInvertedPendulumXml; }

std::string MujocoEnv::humanoid_model_path() {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(kHumanoidPath, ec)) {
    throw std::invalid_argument(std::string(kHumanoidId) + ": the humanoid model " + kHumanoidPath +
                                " is missing; it comes with Debian's package libmujoco-samples "
                                "(apt-get install libmujoco-samples)");
  }
  return kHumanoidPath;
}

double MujocoEnv::dt() const { return sim_->model->opt.timestep * task_.frame_skip; }
int MujocoEnv::nq() const { return sim_->model->nq; }
int MujocoEnv::nv() const { return sim_->model->nv; }

double MujocoEnv::forward_position() const {
  const mjModel& m = *sim_->model;
  const mjData& d = *sim_->data;
  if (!task_.forward_com) return d.qpos[0];
  double mass = 0, moment = 0;
  for (int b = 0; b < m.nbody; ++b) {
    mass += m.body_mass[b];
    moment += m.body_mass[b] * d.xipos[3 * b];
  }
  return mass > 0 ? moment / mass : 0.0;
}

bool MujocoEnv::healthy() const {
  const double* qpos = sim_->data->qpos;
  auto inside = [&](int index, double low, double high) {
    return index < 0 || (qpos[index] > low && qpos[index] < high);  // strict, as Gymnasium's is_healthy
  };
  return inside(task_.healthy_z_index, task_.healthy_z_min, task_.healthy_z_max) &&
         inside(task_.healthy_angle_index, task_.healthy_angle_min, task_.healthy_angle_max);
}

// Marsaglia's polar method on the episode's generator.
double MujocoEnv::normal() {
  for (;;) {
    const double u = rng().uniform(-1.0, 1.0);
    const double v = rng().uniform(-1.0, 1.0);
    const double s = u * u + v * v;
    if (s > 0 && s < 1) return u * std::sqrt(-2.0 * std::log(s) / s);
  }
}

void MujocoEnv::start_episode(void* obs) {
  const mjModel& m = *sim_->model;
  mjData& d = *sim_->data;
  mj_resetData(&m, &d);
  const double scale = task_.reset_noise_scale;
  for (int i = 0; i < m.nq; ++i) d.qpos[i] = m.qpos0[i] + rng().uniform(-scale, scale);
  for (int i = 0; i < m.nv; ++i) d.qvel[i] = task_.normal_qvel_noise ? scale * normal() : rng().uniform(-scale, scale);
  mj_forward(&m, &d);
  x_ = forward_position();
  observe(obs);
}

StepResult MujocoEnv::advance(const Action& action, void* obs) {
  const mjModel& m = *sim_->model;
  mjData& d = *sim_->data;
  const std::vector<float>& low = spec().action.low;
  const std::vector<float>& high = spec().action.high;
  double ctrl_squares = 0;
  for (int i = 0; i < m.nu; ++i) {
    const auto k = static_cast<size_t>(i);
    const float a = std::min(std::max(action.values[k], low[k]), high[k]);
    d.ctrl[i] = static_cast<double>(a);
    ctrl_squares += d.ctrl[i] * d.ctrl[i];
  }
  const double x_before = x_;
  for (int i = 0; i < task_.frame_skip; ++i) mj_step(&m, &d);
  x_ = forward_position();

  double reward = task_.forward_reward_weight * (x_ - x_before) / dt() - task_.ctrl_cost_weight * ctrl_squares;
  if (task_.contact_cost_weight > 0) {
    mj_rnePostConstraint(&m, &d);
    double squares = 0;
    for (int i = 0; i < 6 * m.nbody; ++i) squares += d.cfrc_ext[i] * d.cfrc_ext[i];
    reward -= std::min(task_.contact_cost_weight * squares, task_.contact_cost_max);
  }
  const bool is_healthy = healthy();
  if (is_healthy || task_.terminate_when_unhealthy) reward += task_.healthy_reward;

  StepResult result;
  const bool finite = observe(obs) && std::isfinite(reward);
  result.reward = finite ? static_cast<float>(reward) : 0.f;
  result.terminated = !finite || (task_.terminate_when_unhealthy && !is_healthy);
  return result;
}

bool MujocoEnv::observe(void* obs) const {
  const mjModel& m = *sim_->model;
  const mjData& d = *sim_->data;
  const int skipped = task_.exclude_current_positions ? 2 : 0;
  bool finite = true;
  auto* out = static_cast<unsigned char*>(obs);
  auto put = [&](double value) {
    const float f = static_cast<float>(value);
    const float written = std::isfinite(f) ? f : 0.f;
    finite = finite && std::isfinite(f);
    std::memcpy(out, &written, sizeof(written));
    out += sizeof(written);
  };
  for (int i = skipped; i < m.nq; ++i) put(d.qpos[i]);
  for (int i = 0; i < m.nv; ++i) put(d.qvel[i]);
  return finite;
}

void MujocoEnv::save_state(double* state) const {
  const mjModel& m = *sim_->model;
  const mjData& d = *sim_->data;
  state = std::copy(d.qpos, d.qpos + m.nq, state);
  state = std::copy(d.qvel, d.qvel + m.nv, state);
  state = std::copy(d.act, d.act + m.na, state);
  state = std::copy(d.qacc_warmstart, d.qacc_warmstart + m.nv, state);
  state[0] = d.time;
  state[1] = x_;
}

void MujocoEnv::load_state(const double* state, const Episode& /*episode*/) {
  const mjModel& m = *sim_->model;
  mjData& d = *sim_->data;
  auto take = [&state](double* to, int count) {
    std::copy(state, state + count, to);
    state += count;
  };
  take(d.qpos, m.nq);
  take(d.qvel, m.nv);
  take(d.act, m.na);
  take(d.qacc_warmstart, m.nv);
  d.time = state[0];
  x_ = state[1];
}

}  // namespace moonseed::envs
