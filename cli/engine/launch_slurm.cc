// The Slurm batch script of `moonseed launch slurm` (cli/engine/launch.h, docs/launch.md).
//
// Without actor nodes the job is one component: L learner tasks on N nodes, each rank
// starting its share of local actors. With actor nodes it is a heterogeneous job, so that
// each part asks for its own shape: component 0 the learner ranks (CPUs per rank),
// component 1 the actors (one CPU each, on M nodes). Either way every step runs in the
// background and the script waits for all of them, also through scancel's SIGTERM: each
// rank saves its checkpoint before the step ends.
#include <sstream>
#include <string>

#include "cli/engine/launch.h"

namespace moonseed::cli {
namespace {

std::string plural(int n, const std::string& word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

// The #SBATCH lines of one component: nodes, tasks, CPUs, time and partition.
void component_lines(std::ostringstream& out, const LaunchPlan& plan, int nodes, int tasks, int per_node, int cpus) {
  out << "#SBATCH --nodes=" << nodes << "\n"
      << "#SBATCH --ntasks=" << tasks << "\n";
  if (per_node > 0) out << "#SBATCH --ntasks-per-node=" << per_node << "\n";
  out << "#SBATCH --cpus-per-task=" << cpus << "\n";
  if (!plan.time.empty()) out << "#SBATCH --time=" << plan.time << "\n";
  if (!plan.partition.empty()) out << "#SBATCH --partition=" << plan.partition << "\n";
}

// `moonseed run ...` as the learner tasks' bash -c text: variables are expanded in each task
// ($SLURM_PROCID is its rank), overrides arrive as "$@".
std::string rank_command(const LaunchPlan& plan) {
  const bool group = plan.learners > 1;
  std::string what = plan.resume_dir.empty() ? "\"$SCRIPT\"" : "--resume \"$RESUME_DIR\"";
  std::string out = "exec \"$MOONSEED\" run " + what;
  if (group) {
    out += " --rank \"$SLURM_PROCID\" --world-size " + std::to_string(plan.learners) +
           " \\\n      --rendezvous \"tcp:$HEAD:" + std::to_string(plan.rendezvous_port) + "\"";
  }
  out += " --auth-token-file \"$TOKEN_FILE\" \\\n      topology.transport=tcp \"topology.listen=tcp:0.0.0.0:$((" +
         std::to_string(plan.actor_port) + " + SLURM_PROCID))\"";
  if (plan.actor_nodes > 0) out += " topology.local_actors=0";
  return out + " \"$@\"";
}

}  // namespace

std::string slurm_batch_script(const LaunchPlan& plan) {
  check_launch_plan(plan);
  const int per_node = plan.learners / plan.nodes;
  const bool actor_step = plan.actor_nodes > 0;
  std::ostringstream out;
  out << "#!/bin/bash\n"
      << "# " << plan.name << " on Slurm, written by `moonseed launch slurm` (docs/launch.md).\n";
  if (plan.resume_dir.empty()) {
    out << "#   experiment: " << plan.script << "\n";
  } else {
    out << "#   resumes: " << plan.resume_dir << " (its newest complete checkpoint)\n";
  }
  out << "#   " << plural(plan.learners, "learner rank") << " on " << plural(plan.nodes, "node") << " ("
      << per_node << " per node)";
  if (actor_step) {
    out << "; " << plural(plan.actors, "actor") << " of " << plan.envs_per_actor << " envs on "
        << plural(plan.actor_nodes, "node") << " of their own\n";
  } else {
    out << ", starting " << plural(plan.actors, "actor") << " of " << plan.envs_per_actor
        << " envs among them\n";
  }
  out << "# Submit: sbatch THIS_FILE. Stop: scancel JOBID (every rank saves a checkpoint, then\n"
      << "# stops). Continue a stopped run: moonseed launch slurm --resume RUN_DIR, then sbatch.\n";
  if (actor_step) {
    out << "# A heterogeneous job: component 0 is the learner ranks, component 1 the actors.\n";
  }
  out << "#SBATCH --job-name=" << plan.name << "\n"
      << "#SBATCH --output=" << plan.output_dir << "/" << plan.name << "-%j.out\n"
      << "#SBATCH --chdir=" << plan.workdir << "\n";
  component_lines(out, plan, plan.nodes, plan.learners, plan.nodes > 1 ? per_node : 0, plan.cpus_per_task);
  if (actor_step) {
    out << "#SBATCH hetjob\n";
    component_lines(out, plan, plan.actor_nodes, plan.actors, 0, 1);
  }
  out << "set -euo pipefail\n\n";

  out << "# What every task runs: the moonseed binary (set MOONSEED to run another), the\n"
      << "# experiment, the auth token every rank and actor reads, and the command line's overrides.\n"
      << "export MOONSEED=${MOONSEED:-" << shell_quote(plan.moonseed) << "}\n";
  if (plan.resume_dir.empty()) {
    out << "export SCRIPT=" << shell_quote(plan.script) << "\n";
  } else {
    out << "export RESUME_DIR=" << shell_quote(plan.resume_dir) << "\n";
  }
  out << "export TOKEN_FILE=" << shell_quote(plan.auth_token_file) << "\n"
      << "overrides=(";
  for (size_t i = 0; i < plan.overrides.size(); ++i) out << (i ? " " : "") << shell_quote(plan.overrides[i]);
  out << ")\n\n";

  const std::string learner_nodelist = actor_step ? "$SLURM_JOB_NODELIST_HET_GROUP_0" : "$SLURM_JOB_NODELIST";
  out << "# The learner ranks' hosts, in rank order (" << per_node << " rank(s) each); rank 0's host is the\n"
      << "# rendezvous of the group.\n"
      << "mapfile -t learner_hosts < <(scontrol show hostnames \"" << learner_nodelist << "\")\n"
      << "export HEAD=${learner_hosts[0]}\n"
      << "export LEARNER_HOSTS=\"${learner_hosts[*]}\"\n"
      << "echo \"moonseed launch: job $SLURM_JOB_ID, learner hosts $LEARNER_HOSTS, rendezvous tcp:$HEAD:"
      << plan.rendezvous_port << "\"\n\n";

  out << "# scancel signals every task itself; the script keeps waiting while the ranks save their\n"
      << "# checkpoint (a signal interrupts `wait`, so wait_for below waits again until the step ends).\n"
      << "trap 'echo \"moonseed launch: signalled; the ranks save a checkpoint and stop\"' TERM INT\n\n";
  out << "# Learner ranks: one srun step of " << plan.learners << " task(s); task $SLURM_PROCID is rank $SLURM_PROCID\n"
      << "# and listens for actors on port " << plan.actor_port << " + rank. A rank that fails ends the step.\n"
      << "srun " << (actor_step ? "--het-group=0 " : "") << "--nodes=" << plan.nodes << " --ntasks=" << plan.learners
      << " --ntasks-per-node=" << per_node << " --cpus-per-task=" << plan.cpus_per_task
      << " --kill-on-bad-exit=1 \\\n"
      << "  bash -c '" << rank_command(plan) << "' rank \"${overrides[@]}\" &\n"
      << "learners=$!\n";
  if (actor_step) {
    out << "\n# Actors: one srun step of " << plan.actors << " task(s) on the actor nodes; actor task k connects to\n"
        << "# learner rank r = k mod " << plan.learners << " on that rank's host and port, and waits for it to listen.\n"
        << "srun --het-group=1 --nodes=" << plan.actor_nodes << " --ntasks=" << plan.actors
        << " --cpus-per-task=1 \\\n"
        << "  bash -c 'hosts=($LEARNER_HOSTS); r=$((SLURM_PROCID % " << plan.learners << "))\n"
        << "    exec \"$MOONSEED\" actor --connect \"tcp:${hosts[r / " << per_node << "]}:$((" << plan.actor_port
        << " + r))\" \\\n"
        << "      --auth-token-file \"$TOKEN_FILE\" --reconnect-for 300' &\n"
        << "actors=$!\n";
  }
  out << "\n# The job's end: wait for the ranks (and the actors), however the steps end.\n"
      << "wait_for() {\n"
      << "  local status=0\n"
      << "  while :; do\n"
      << "    wait \"$1\" && return 0 || status=$?\n"
      << "    kill -0 \"$1\" 2>/dev/null || return \"$status\"\n"
      << "  done\n"
      << "}\n"
      << "status=0\n"
      << "wait_for \"$learners\" || status=$?\n";
  if (actor_step) {
    out << "# Actors leave when their rank says goodbye; stop those whose rank failed.\n"
        << "kill -TERM \"$actors\" 2>/dev/null || true\n"
        << "wait_for \"$actors\" || true\n";
  }
  out << "echo \"moonseed launch: learner ranks ended with status $status\"\n"
      << "exit \"$status\"\n";
  return out.str();
}

}  // namespace moonseed::cli
