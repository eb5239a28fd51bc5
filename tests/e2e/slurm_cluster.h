// A one-node Slurm cluster for a test, everything in one temp dir: its own munged (own key,
// socket, pid, log and seed files), slurmctld and slurmd on free ports of this host, talking
// over 127.0.0.1, configured by a slurm.conf written there. Only root can run slurmd as the
// jobs' user, so the cluster needs root and Debian's slurm-wlm and munge.
//
// Ownership: the cluster owns its daemons. The destructor cancels every job, waits (bounded)
// for them to end, then stops slurmd, slurmctld and munged by their pid files, SIGKILL after
// a bound, also when the test failed half-way.
// Environment: the constructor sets SLURM_CONF for this process, so every slurm command the
// test runs, and the jobs they submit, use this cluster; the destructor unsets it.
// Failures: unavailable() says why a cluster cannot start here ("" when it can); the
// constructor throws std::runtime_error naming the step and the daemon's log when a daemon
// does not start or the node is not idle within its bound.
// Thread-safety: none; one test thread uses it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tests/free_port.h"  // free_port_run(): the cluster's ports; free_port(): the tests'

namespace moonseed::testing {

class SlurmCluster {
 public:
  // "" when a cluster can start here; else why not (not root, a binary missing).
  static std::string unavailable();

  SlurmCluster();
  ~SlurmCluster();
  SlurmCluster(const SlurmCluster&) = delete;
  SlurmCluster& operator=(const SlurmCluster&) = delete;

  const std::string& dir() const { return dir_; }
  const std::string& log() const { return log_; }  // what the slurm commands printed

  // The job id `sbatch --parsable script` printed; throws with sbatch's output when it failed.
  std::string submit(const std::string& script);
  // The job's state (RUNNING, COMPLETED, CANCELLED, FAILED...) from scontrol, "" when unknown.
  std::string job_state(const std::string& job);
  // The job's final state once it has ended within `timeout_s`, nullopt otherwise.
  std::optional<std::string> wait_for_end(const std::string& job, double timeout_s);
  // `scancel job`; true when scancel succeeded.
  bool cancel(const std::string& job);
  // A command's exit code and output (appended to log()).
  int command(const std::vector<std::string>& argv, std::string* output = nullptr, double timeout_s = 30);

 private:
  void start_munge();
  void write_config();
  // slurmctld and slurmd on fresh ports until the node is idle: true; false when a port was
  // taken before a daemon bound it (its log says so); throws on any other failure.
  bool start_daemons();
  void stop_daemons();

  std::string dir_;
  std::string log_;
  std::string conf_;
  std::string host_;
};

}  // namespace moonseed::testing
