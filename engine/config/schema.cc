#include "engine/config/schema.h"

#include <cctype>
#include <limits>
#include <stdexcept>
#include <type_traits>

#include "base/constants.h"
#include "base/text.h"
#include "engine/config/schema_rows.h"
#include "engine/config/schema_rules.h"
#include "engine/config/section_registry.h"
#include "engine/config/values.h"

namespace moonseed::engine {
namespace {

using namespace schema_rows;  // NOLINT: the row helpers are this file's vocabulary
using base::kMaxExactInteger;

// `algo`: one of the registered sections (section_registry.h), each named with what it is.
FieldSchema algo_row() {
  std::vector<std::string> names;
  std::string doc = "training algorithm:";
  for (const SectionInfo& section : registered_sections()) {
    doc += std::string(names.empty() ? " " : ", ") + section.name + " (" + section.doc + ")";
    names.push_back(section.name);
  }
  return string(MOONSEED_FIELD(algo), names, ReloadClass::kRestart, doc.c_str());
}

std::vector<FieldSchema> core_rows();

// The core rows, then each registered section's, in the order of their names.
std::vector<FieldSchema> build_schema() {
  freeze_sections();
  std::vector<FieldSchema> schema = core_rows();
  for (const SectionInfo& section : registered_sections()) {
    for (FieldSchema& row : section.rows()) {
      if (row.path.rfind(section.name + ".", 0) != 0) {
        throw std::logic_error("config section '" + section.name + "' declares the field '" + row.path +
                               "', outside its section");
      }
      schema.push_back(std::move(row));
    }
  }
  return schema;
}

std::vector<FieldSchema> core_rows() {
  return {
      with_rule(string(MOONSEED_FIELD(name), {}, kRestart, "experiment name; prefix of the run directory"),
                "letters, digits, `_`, `-`, `.`", directory_name_rule),
      algo_row(),
      integer(MOONSEED_FIELD(seed), 0, kMaxExactInteger, kRestart,
              "seed of the learner and, offset per env, of the actors' envs"),
      with_rule(string(MOONSEED_FIELD(runs_dir), {}, kRestart, "directory under which run directories are created"),
                "non-empty", non_empty_rule),
      boolean(MOONSEED_FIELD(group_access), kRestart,
              "the run's directory and files are readable by the owner's group too (umask 027); false: by the "
              "owner only (umask 077)"),

      string(MOONSEED_FIELD(env.id), {}, kRestart,
             "Gymnasium id of a built-in environment, or the name of a plugin (env.plugin) or Python (env.python) env"),
      number_map(MOONSEED_FIELD(env.options), kRestart,
                 "options passed to the environment by name, e.g. {max_episode_steps = 200}"),
      string(MOONSEED_FIELD(env.model), {}, kRestart,
             "the model file the environment loads (MuJoCo/Model-v0: an MJCF file); a relative path is "
             "resolved against the script's directory; \"\" = none"),
      string(MOONSEED_FIELD(env.plugin), {}, kRestart,
             "a C env plugin (a shared library, docs/env-plugins.md) that serves env.id instead of a built-in "
             "env; a relative path is resolved against the script's directory; \"\" = none"),
      with_rule(string(MOONSEED_FIELD(env.python), {}, kRestart,
                       "a Python env factory, MODULE:FUNCTION, that Python actors call to make each env "
                       "(docs/python-actors.md); env.id then only names it; \"\" = none"),
                "MODULE:FUNCTION", python_factory_rule),
      string(MOONSEED_FIELD(env.python_path), {}, kRestart,
             "directories, ':'-separated, where Python looks for env.python's module after the script's own "
             "directory; relative ones are resolved against the script's directory"),
      wrapper_list(MOONSEED_FIELD(env.wrappers), kRestart,
                   "wrappers the actors apply to every env, first listed innermost: {ms.wrap.frame_stack(4), "
                   "ms.wrap.time_limit(1000), ...}; the model sees the wrapped spec (docs/env-wrappers.md)"),

      string(MOONSEED_FIELD(model.kind), {"mlp", "layers", "nature_cnn", "impala_resnet"}, kRestart,
             "network family: mlp (hidden, activation), layers (the declared list) or a preset"),
      with_rule(integer_list(MOONSEED_FIELD(model.hidden), 1, 65536, kRestart, "sizes of the hidden layers"),
                "1 to 16 layers", layer_count_rule),
      string(MOONSEED_FIELD(model.activation), {"tanh", "relu"}, kRestart, "activation of the hidden layers"),
      with_rule(layer_list(MOONSEED_FIELD(model.layers), kRestart,
                           "the declared layers when kind = \"layers\": {ms.nn.conv2d(32, 8, 4), ms.nn.relu(), ...}"),
                "kinds linear, conv2d, maxpool2d, impala_block, lstm (last only), channels_first, flatten, "
                "relu, tanh, elu",
                [](const FieldValue& v) { return models::layer_list_problem(std::get<LayerList>(v)); }),
      boolean(MOONSEED_FIELD(model.shared_torso), kRestart, "policy and value heads share the hidden layers"),
      number(MOONSEED_FIELD(model.init_log_std), -20, 2, kRestart,
             "initial log standard deviation of Gaussian policies (box actions)"),

      string(MOONSEED_FIELD(optimizer.kind), {"adam", "rmsprop"}, kRestart, "optimizer"),
      number(MOONSEED_FIELD(optimizer.lr), 0, 1, kHot, "learning rate", true),
      number(MOONSEED_FIELD(optimizer.eps), 0, 1, kRestart, "epsilon of Adam / RMSProp", true),
      number(MOONSEED_FIELD(optimizer.rmsprop_alpha), 0, 1, kRestart, "RMSProp smoothing constant"),
      number(MOONSEED_FIELD(optimizer.rmsprop_momentum), 0, 1, kRestart, "RMSProp momentum"),
      number(MOONSEED_FIELD(optimizer.max_grad_norm), 0, kInf, kHot, "global gradient-norm clip; 0 disables"),
      number(MOONSEED_FIELD(optimizer.lr_decay_frames), 0, kInf, kHot,
             "linear decay of lr to 0 over this many frames; 0 keeps lr constant"),

      integer(MOONSEED_FIELD(topology.actors), 1, 4096, kRestart, "actor processes started by `moonseed run`"),
      integer(MOONSEED_FIELD(topology.envs_per_actor), 1, 65536, kRestart, "environments stepped by each actor"),
      integer(MOONSEED_FIELD(topology.groups_per_actor), 1, 64, kRestart,
              "env groups per actor that step while the others wait for actions"),
      integer(MOONSEED_FIELD(topology.eval_envs_per_actor), 0, 65535, kRestart,
              "the last k envs of each actor evaluate and report eval_return_mean: never trained on nor "
              "recorded (R2D2: they act with r2d2.eval_epsilon; V-trace: vtrace.eval_greedy)"),
      integer(MOONSEED_FIELD(topology.local_actors), -1, 4096, kRestart,
              "actor processes `moonseed run` starts itself; -1 = all, the rest connect from elsewhere"),
      string(MOONSEED_FIELD(topology.transport), {"unix", "tcp"}, kRestart, "actor-learner socket kind"),
      string(MOONSEED_FIELD(topology.listen), {}, kRestart,
             "learner address; \"\" chooses (unix: RUN_DIR/learner.sock, tcp: 127.0.0.1:0)"),
      number(MOONSEED_FIELD(topology.actor_timeout_s), 0, 86400, kHot,
             "an actor that owes a step batch and is silent this long (or 20 of its usual step times, if "
             "longer) is hung: its slot is freed, a local one restarted; 0 never"),
      integer(MOONSEED_FIELD(topology.actor_deaths_to_park), 0, 1000000, kRestart,
              "a local actor slot that dies (exits, crashes, is killed, hangs) this many times within "
              "topology.actor_death_window_s is parked: not restarted again, with the reason; the first half of "
              "them restart at once, the rest back off 1 s doubling to topology.actor_max_backoff_s; 0 never "
              "parks (an actor that never makes progress is still parked after 5 deaths in a row)"),
      number(MOONSEED_FIELD(topology.actor_death_window_s), 1, 1e9, kRestart,
             "how far back the deaths of a local actor slot count (topology.actor_deaths_to_park)"),
      number(MOONSEED_FIELD(topology.actor_max_backoff_s), 0, 86400, kRestart,
             "the longest wait before restarting a local actor that keeps dying"),
      integer(MOONSEED_FIELD(topology.actor_memory_mb), 0, 1 << 30, kRestart,
              "a local actor whose processes hold this many MiB (anonymous resident memory of its process "
              "group) is killed for memory and restarted like any actor that dies; 0 no limit"),

      integer(MOONSEED_FIELD(topology.learners), 1, 64, kRestart,
              "learner ranks training one model data-parallel, gradients averaged every step (docs/distributed.md); "
              "> 1 without topology.rendezvous starts them all on this host, topology.actors spread over them"),
      integer(MOONSEED_FIELD(topology.rank), 0, 63, kRestart,
              "this process's rank in its learner group (moonseed run --rank; set by the Slurm and Kubernetes "
              "launch files)"),
      with_rule(string(MOONSEED_FIELD(topology.rendezvous), {}, kRestart,
                       "where the ranks of a learner group meet: \"\" = this host (a store file in the run "
                       "directory), tcp:HOST:PORT = rank 0 serves c10d's TCPStore on PORT (docs/security.md)"),
                "\"\" or tcp:HOST:PORT", rendezvous_rule),
      number(MOONSEED_FIELD(topology.group_timeout_s), 1, 86400, kRestart,
             "a learner rank that does not answer for this long (killed, stopped, cut off) stops the group, "
             "which names it"),
      integer(MOONSEED_FIELD(topology.weights_check_every), 0, 1000000000, kRestart,
              "optimizer steps between comparisons of the ranks' weight hashes (a mismatch stops the group); 0 never"),

      integer(MOONSEED_FIELD(inference.max_batch), 1, 65536, kRestart, "most envs in one inference forward pass"),
      integer(MOONSEED_FIELD(inference.deadline_us), 0, 10000000, kRestart,
              "a batch runs when its oldest request is this old (microseconds)"),
      integer(MOONSEED_FIELD(inference.idle_spin_us), 0, 1000000, kRestart,
              "the inference thread polls this long for a request before it sleeps (microseconds); "
              "saves a wake-up per round trip at the cost of a busy core"),
      integer(MOONSEED_FIELD(inference.io_threads), 0, 64, kRestart,
              "threads that read and write actor sockets; 0 = the inference thread does it "
              "between batches (one thread hop less per step)"),
      string(MOONSEED_FIELD(inference.device), {"auto", "cpu", "cuda"}, kRestart,
             "inference and training device; auto = cuda when available"),
      string(MOONSEED_FIELD(inference.nonfinite), {"refuse", "replace"}, kRestart,
             "a NaN or infinite observation element or reward from an actor: refuse = close that actor's "
             "connection with the reason, replace = use 0 and count it (nonfinite_replaced)"),

      integer(MOONSEED_FIELD(learner.batch), 1, 65536, kRestart, "unrolls per training step"),
      integer(MOONSEED_FIELD(learner.unroll), 1, 100000, kRestart, "steps per unroll (T; T+1 stored, overlap 1)"),
      integer(MOONSEED_FIELD(learner.queue_capacity), 1, 1 << 20, kRestart,
              "unrolls queued before actors are held back"),
      integer(MOONSEED_FIELD(learner.torch_threads), 1, 256, kRestart, "intra-op threads of the training thread"),

      integer(MOONSEED_FIELD(stop.frames), 0, kMaxExactInteger, kHot,
              "stop after this many env frames received (`frames`); acting stops right there, at most one "
              "inference batch past it (a resumed run counts on from its checkpoint); 0 = no limit"),
      number(MOONSEED_FIELD(stop.seconds), 0, kInf, kHot,
             "stop after this many seconds of training (`train_time_s`: from the first training batch on, so "
             "the actors' start-up is not counted, and a run whose actors never deliver a first batch (they "
             "hang or keep dying) never reaches it; a resumed run counts on from its checkpoint); 0 = no limit. "
             "For a limit on the clock, stop.wall_seconds"),
      number(MOONSEED_FIELD(stop.wall_seconds), 0, kInf, kHot,
             "stop after this many seconds of wall time (`time_s`: from the run's start, whether data arrives "
             "or not; a resumed run counts on from its checkpoint's time_s); 0 = no limit"),
      number(MOONSEED_FIELD(stop.return_mean), -kInf, kInf, kHot,
             "stop once the mean env return of the last 100 episodes reaches this (not before 100 have "
             "ended); 0 = off"),
      number(MOONSEED_FIELD(stop.eval_return_mean), -kInf, kInf, kHot,
             "stop once the mean return of the last 100 evaluation episodes reaches this (not before 100 "
             "have ended); 0 = off"),
      integer(MOONSEED_FIELD(stop.final_eval_episodes), 0, 10000, kHot,
              "when the run stops by its own rule (not a signal), the final weights play this many episodes on "
              "fresh envs in the learner (seeded as `moonseed eval`, acting as evaluation envs do: "
              "vtrace.eval_greedy, r2d2.eval_epsilon); their mean is printed and is the stop row's "
              "final_eval_return_mean (docs/metrics.md). Built-in envs only; 0 = none"),
      boolean(MOONSEED_FIELD(stop.on_shaped_return), kHot,
              "stop.return_mean and stop.eval_return_mean compare the shaped return (reward_shaping) "
              "instead of the env's own"),

      number(MOONSEED_FIELD(log.interval_s), 0, 86400, kHot, "progress line and metrics.jsonl cadence (seconds)", true),
      boolean(MOONSEED_FIELD(log.progress), kHot, "print the live progress line"),
      boolean(MOONSEED_FIELD(log.tensorboard), kRestart,
              "write TensorBoard event files into the run directory (docs/tensorboard.md)"),

      number(MOONSEED_FIELD(checkpoint.interval_s), 0, kInf, kHot, "seconds between checkpoints; 0 = only at the end"),
      integer(MOONSEED_FIELD(checkpoint.keep), 1, 1000, kHot, "newest checkpoints kept"),

      boolean(MOONSEED_FIELD(record.enabled), kRestart,
              "record every unroll the learner trains on into an experience log (docs/experience-log.md)"),
      string(MOONSEED_FIELD(record.dir), {}, kRestart,
             "log directory; \"\" = RUN_DIR/experience, a relative path is taken from the run directory"),
      string(MOONSEED_FIELD(record.full_queue), {"backpressure", "drop"}, kRestart,
             "when the disk cannot keep up: hold training back, or drop unrolls and count them"),
      integer(MOONSEED_FIELD(record.queue_mb), 1, 1 << 20, kRestart, "MiB of unrolls waiting to be written, at most"),
      integer(MOONSEED_FIELD(record.chunk_kb), 1, 1 << 20, kRestart, "uncompressed KiB per chunk"),
      integer(MOONSEED_FIELD(record.segment_mb), 1, 1 << 20, kRestart, "a segment file is published at this size"),
      number(MOONSEED_FIELD(record.segment_age_s), 0, kInf, kRestart,
             "... or once it is this old (seconds); 0 = no age limit"),
      number(MOONSEED_FIELD(record.sync_interval_s), 0.001, 86400, kRestart,
             "written data is fsynced at least this often (seconds)"),
      integer(MOONSEED_FIELD(record.sync_mb), 1, 1 << 20, kRestart, "... and after this many MiB"),
      integer(MOONSEED_FIELD(record.compress_threads), 1, 64, kRestart, "threads compressing chunks"),
      string(MOONSEED_FIELD(record.codec), {"lz4", "none"}, kRestart, "chunk compression"),
      integer(MOONSEED_FIELD(record.lz4_acceleration), 1, 65537, kRestart,
              "LZ4's acceleration: 1 compresses best; higher is faster and compresses less"),
      boolean(MOONSEED_FIELD(record.delta), kRestart,
              "store each step of a uint8 observation (pixels) XORed with the step before it: "
              "faster to compress and smaller; readers undo it"),

      string(MOONSEED_FIELD(warm_start.log), {}, kRestart,
             "start from this experience log (RUN_DIR, log directory or segment): V-trace trains on its "
             "unrolls first, R2D2 pre-fills its replay; \"\" = no warm start"),
      integer(MOONSEED_FIELD(warm_start.steps), 1, 1 << 30, kRestart,
              "V-trace: training steps on the log's unrolls before acting starts"),
      number(MOONSEED_FIELD(warm_start.bc_cost), 0, kInf, kRestart,
             "V-trace: weight of behaviour cloning, -log pi(a|x) of the logged actions, added to the loss "
             "during the warm start"),

      string(MOONSEED_FIELD(dashboard.listen), {}, kRestart,
             "HOST:PORT the run's dashboard serves on (docs/dashboard.md); port 0 = a free one; \"\" = no "
             "dashboard; beyond loopback only with the run's auth token"),
      with_rule(string(MOONSEED_FIELD(dashboard.hosts), {}, kRestart,
                       "host names, comma-separated, a dashboard on loopback answers to besides its loopback "
                       "addresses and localhost (e.g. \"myhost.lab\" reached through an SSH tunnel); others get 403"),
                "host names (letters, digits, hyphens, dots), no port", [](const FieldValue& v) {
                  std::string problem;
                  base::parse_host_names(std::get<std::string>(v), &problem);
                  return problem;
                }),
  };
}

#undef MOONSEED_FIELD

// Tripwire: a structured binding must name every member, so a field added to
// engine/config/experiment_config.h stops this compiling until the schema above lists it and
// the binding here is updated.
[[maybe_unused]] void schema_lists_every_member(ExperimentConfig& c) {
  // `schedules` is not a field: it belongs to the fields it schedules.
  // `reward_shaping` is kRewardShapingPath, handled by hand (schema.h).
  // `sections` holds the algorithms' sections, whose rows their folders register (section_registry.h).
  [[maybe_unused]] auto& [name, algo, seed, runs_dir, group_access, env, model, sections, optimizer, topology, inference,
                          learner, stop, log, checkpoint, record, warm_start, dashboard, schedules, reward_shaping] = c;
  [[maybe_unused]] auto& [dashboard_listen, dashboard_hosts] = c.dashboard;
  [[maybe_unused]] auto& [shaping_source, shaping_chunk_name, shaping_first_line] = c.reward_shaping;
  [[maybe_unused]] auto& [env_id, env_options, env_model, env_plugin, env_python, env_python_path, env_wrappers] = c.env;
  [[maybe_unused]] auto& [model_kind, hidden, activation, layers, shared_torso, init_log_std] = c.model;
  [[maybe_unused]] auto& [optimizer_kind, lr, eps, rmsprop_alpha, rmsprop_momentum, max_grad_norm,
                          lr_decay_frames] = c.optimizer;
  [[maybe_unused]] auto& [actors, envs_per_actor, groups_per_actor, eval_envs_per_actor, local_actors, transport,
                          listen, actor_timeout_s, actor_deaths_to_park, actor_death_window_s,
                          actor_max_backoff_s, actor_memory_mb, learners, rank, rendezvous, group_timeout_s,
                          weights_check_every] = c.topology;
  [[maybe_unused]] auto& [max_batch, deadline_us, idle_spin_us, io_threads, device, nonfinite] = c.inference;
  [[maybe_unused]] auto& [batch, unroll, queue_capacity, torch_threads] = c.learner;
  [[maybe_unused]] auto& [frames, seconds, wall_seconds, return_mean, eval_return_mean, on_shaped_return, final_eval_episodes] = c.stop;
  [[maybe_unused]] auto& [interval_s, progress, tensorboard] = c.log;
  [[maybe_unused]] auto& [checkpoint_interval_s, keep] = c.checkpoint;
  [[maybe_unused]] auto& [record_enabled, record_dir, full_queue, queue_mb, chunk_kb, segment_mb, segment_age_s,
                          sync_interval_s, sync_mb, compress_threads, codec, lz4_acceleration,
                          delta] = c.record;
  [[maybe_unused]] auto& [warm_log, warm_steps, bc_cost] = c.warm_start;
}

}  // namespace

const std::vector<FieldSchema>& config_schema() {
  static const std::vector<FieldSchema> schema = build_schema();
  return schema;
}

}  // namespace moonseed::engine
