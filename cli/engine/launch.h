// `moonseed launch slurm|k8s` (docs/launch.md): the files that start an
// experiment on a Slurm cluster (one batch script) or on Kubernetes (one
// multi-document manifest), written from the experiment's topology.
//
//   cli/engine/launch_command.cc  the command line: loads the experiment (overrides
//                          applied), fills a LaunchPlan, writes the files
//   cli/engine/launch_plan.cc     names, shell words, and the checks of a plan
//   cli/engine/launch_slurm.cc    LaunchPlan -> NAME.sbatch
//   cli/launch_k8s.cc      LaunchPlan + the script's files + token -> NAME.k8s.yaml
//
// The generators are pure functions of plain values: no Lua, no LibTorch, no
// I/O; tests read their text. check_launch_plan() is the one place a plan is
// judged: it throws std::invalid_argument naming the option at fault, and
// launch_command calls it before writing anything, so bad input writes nothing.
// Thread-safety: every function here is pure and may run concurrently.
#pragma once

#include <string>
#include <vector>

namespace moonseed::cli {

// What the generated files start; every field is already resolved (paths absolute).
struct LaunchPlan {
  std::string name;        // config.name as dns1123_name: job, Service, pod names
  std::string script;      // the experiment script the ranks run ("" with resume_dir)
  std::string resume_dir;  // RUN_DIR for `moonseed run --resume` ("" = a new run)
  std::vector<std::string> overrides;  // key=value, handed to every rank unchanged

  int learners = 1;        // L: learner ranks; with L > 1 they form a group (--rank, --rendezvous)
  int nodes = 1;           // hosts of the learner ranks (Slurm); L must be a multiple
  int actor_nodes = 0;     // 0: each rank starts its share of local actors; M: actors on M hosts of their own
  int actors = 2;          // topology.actors: actor processes in all
  int envs_per_actor = 32; // topology.envs_per_actor, for the comments
  int cpus_per_task = 1;   // CPUs of one learner rank (Slurm)

  int rendezvous_port = 29500;  // rank 0's rendezvous port
  int actor_port = 7000;        // rank r listens for actors on actor_port + r (Slurm), actor_port (k8s)

  std::string time;        // Slurm --time ("" = the partition's default)
  std::string partition;   // Slurm --partition ("" = the cluster's default)
  std::string output_dir;  // where the job's output goes (Slurm)
  std::string workdir;     // the job's working directory: runs_dir resolves against it (Slurm)
  std::string auth_token_file;  // the token every rank and actor reads (Slurm; k8s takes its text)
  std::string moonseed;    // the moonseed binary the job runs (Slurm)
  std::string image;       // the container image holding moonseed on PATH (k8s)
};

// A Lua file the pods need, by its path relative to the script's folder.
struct LaunchFile {
  std::string relative_path;  // "cartpole.lua", "recipes/base.lua"
  std::string text;
};

// `name` lowercased, every run of characters outside [a-z0-9] turned into one '-', trimmed
// of '-' at both ends and cut to `max_length` (DNS-1123 labels: 63). Throws
// std::invalid_argument when nothing is left.
std::string dns1123_name(const std::string& name, size_t max_length = 63);

// `text` as one word for a POSIX shell: as is when it holds only safe characters, else in
// single quotes.
std::string shell_quote(const std::string& text);

// Throws std::invalid_argument naming the option when `plan` cannot start: no learner,
// 0 nodes, ranks that do not divide over the nodes, ports out of range or overlapping, a
// time, partition or image a batch script or manifest cannot hold.
void check_launch_plan(const LaunchPlan& plan);

// The Slurm batch script: #SBATCH lines, the learner ranks as one srun step, with
// actor_nodes the actors as a second one, both in the background and waited for.
std::string slurm_batch_script(const LaunchPlan& plan);

// The Kubernetes manifests: Secret, ConfigMap, headless Service, learner StatefulSet, actor
// Deployment. files[0] is the script; `token` "" writes a placeholder the user must replace.
std::string k8s_manifests(const LaunchPlan& plan, const std::vector<LaunchFile>& files, const std::string& token);

}  // namespace moonseed::cli
