#include "tests/e2e/slurm_cluster.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "tests/e2e/process.h"

namespace moonseed::testing {
namespace {

namespace fs = std::filesystem;

// Where Debian installs them; the first directory holding `name`, "" when none does.
std::string find_binary(const std::string& name) {
  for (const char* dir : {"/usr/bin/", "/usr/sbin/", "/usr/local/bin/", "/usr/local/sbin/"}) {
    const std::string path = dir + name;
    if (::access(path.c_str(), X_OK) == 0) return path;
  }
  return "";
}

const char* const kBinaries[] = {"munged", "slurmctld", "slurmd", "sbatch", "sinfo", "scontrol", "scancel", "squeue"};

std::string short_hostname() {
  char buf[256] = {};
  ::gethostname(buf, sizeof buf - 1);
  const std::string name = buf;
  return name.substr(0, name.find('.'));
}

std::string trimmed(const std::string& text) {
  const size_t begin = text.find_first_not_of(" \t\n");
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(" \t\n") - begin + 1);
}

// The pid in `path` (a daemon's pid file), or -1.
pid_t pid_in(const std::string& path) {
  std::ifstream in(path);
  long pid = -1;
  if (!(in >> pid) || pid <= 1) return -1;
  return static_cast<pid_t>(pid);
}

// `predicate` every `period_s` for at most `timeout_s`: slurm commands are too heavy for
// eventually()'s 50 ms.
template <typename Predicate>
bool poll(double timeout_s, double period_s, Predicate predicate) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (!predicate()) {
    if (std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::sleep_for(std::chrono::duration<double>(period_s));
  }
  return true;
}

// SIGTERM, then SIGKILL when the process is still there after `grace_s`.
void stop_process(pid_t pid, double grace_s) {
  if (pid <= 1 || ::kill(pid, SIGTERM) != 0) return;
  if (!eventually(grace_s, [&] { return ::kill(pid, 0) != 0; })) ::kill(pid, SIGKILL);
}

}  // namespace

std::string SlurmCluster::unavailable() {
  if (::geteuid() != 0) return "the Slurm test starts slurmd, which needs root";
  for (const char* name : kBinaries) {
    if (find_binary(name).empty()) return std::string(name) + " is missing: apt-get install slurm-wlm munge";
  }
  return "";
}

int SlurmCluster::command(const std::vector<std::string>& argv, std::string* output, double timeout_s) {
  std::vector<std::string> full = argv;
  full[0] = find_binary(argv[0]);
  const std::string out_file = dir_ + "/command.out";
  fs::remove(out_file);
  const Finished f = run_to_end(full, out_file, timeout_s);
  std::ofstream(log_, std::ios::app) << "$ " << argv[0] << (argv.size() > 1 ? " " + argv[1] : "") << "...\n"
                                      << f.output;
  if (output) *output = f.output;
  return f.exit_code.value_or(-1);
}

void SlurmCluster::start_munge() {
  // munged refuses a key others may read or a key directory others may enter, and a socket
  // whose directories others cannot search: the key gets a 0700 directory of its own.
  const std::string key_dir = dir_ + "/munge-key";
  fs::create_directory(key_dir);
  ::chmod(key_dir.c_str(), 0700);
  const std::string key = key_dir + "/munge.key";
  {
    std::ifstream random("/dev/urandom", std::ios::binary);
    std::string bytes(1024, '\0');
    random.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    std::ofstream(key, std::ios::binary) << bytes;
  }
  ::chmod(key.c_str(), 0400);
  const std::vector<std::string> argv = {"munged", "--key-file=" + key, "--socket=" + dir_ + "/munge.socket",
                                         "--pid-file=" + dir_ + "/munged.pid", "--log-file=" + dir_ + "/munged.log",
                                         "--seed-file=" + dir_ + "/munged.seed"};
  if (command(argv) != 0) throw std::runtime_error("munged did not start: " + read_file(dir_ + "/munged.log"));
}

void SlurmCluster::write_config() {
  // Both daemons listen on every interface, on two ports below the kernel's ephemeral range
  // (tests/free_port.h says why).
  const int ports = free_port_run(2);
  const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);  // not nproc: the test may be pinned to one core
  std::ofstream conf(conf_);
  conf << "# A one-node cluster for one test (tests/e2e/slurm_cluster.h).\n"
       << "ClusterName=moonseedtest\n"
       << "SlurmctldHost=" << host_ << "(127.0.0.1)\n"
       << "SlurmctldPort=" << ports << "\n"
       << "SlurmdPort=" << ports + 1 << "\n"
       << "AuthType=auth/munge\n"
       << "AuthInfo=socket=" << dir_ << "/munge.socket\n"
       << "CredType=cred/munge\n"
       << "StateSaveLocation=" << dir_ << "/state\n"
       << "SlurmdSpoolDir=" << dir_ << "/spool\n"
       << "SlurmctldPidFile=" << dir_ << "/slurmctld.pid\n"
       << "SlurmdPidFile=" << dir_ << "/slurmd.pid\n"
       << "SlurmctldLogFile=" << dir_ << "/slurmctld.log\n"
       << "SlurmdLogFile=" << dir_ << "/slurmd.log\n"
       << "ProctrackType=proctrack/linuxproc\n"
       << "TaskPlugin=task/none\n"
       << "JobAcctGatherType=jobacct_gather/none\n"
       << "SlurmUser=root\n"
       << "SlurmdUser=root\n"
       << "ReturnToService=2\n"
       << "SelectType=select/cons_tres\n"
       << "SelectTypeParameters=CR_Core\n"
       << "MpiDefault=none\n"
       << "MailProg=/bin/true\n"
       << "NodeName=" << host_ << " NodeAddr=127.0.0.1 CPUs=" << cpus << " State=UNKNOWN\n"
       << "PartitionName=debug Nodes=" << host_ << " Default=YES MaxTime=INFINITE State=UP\n";
  fs::create_directories(dir_ + "/state");
  fs::create_directories(dir_ + "/spool");
}

SlurmCluster::SlurmCluster()
    : dir_(make_temp_dir("moonseed-slurm")), log_(dir_ + "/commands.log"), conf_(dir_ + "/slurm.conf"),
      host_(short_hostname()) {
  ::chmod(dir_.c_str(), 0755);  // munged's socket is here
  ::setenv("SLURM_CONF", conf_.c_str(), 1);
  try {
    start_munge();
    // A port still taken between the choice and the bind makes a daemon exit at once, saying
    // so in its log; new ports, and the daemons again, a bounded number of times.
    for (int attempt = 1;; ++attempt) {
      if (start_daemons()) break;
      if (attempt == 3) throw std::runtime_error("slurm's ports were taken on 3 tries: " +
                                                 read_file(dir_ + "/slurmctld.log.port-taken"));
      stop_process(pid_in(dir_ + "/slurmd.pid"), 10);
      stop_process(pid_in(dir_ + "/slurmctld.pid"), 10);
    }
  } catch (...) {
    stop_daemons();
    throw;
  }
}

bool SlurmCluster::start_daemons() {
  write_config();
  if (command({"slurmctld", "-c"}) != 0) {
    throw std::runtime_error("slurmctld did not start: " + read_file(dir_ + "/slurmctld.log"));
  }
  if (command({"slurmd"}) != 0) throw std::runtime_error("slurmd did not start: " + read_file(dir_ + "/slurmd.log"));
  const auto port_taken = [&] {
    return read_file(dir_ + "/slurmctld.log").find("Address already in use") != std::string::npos ||
           read_file(dir_ + "/slurmd.log").find("Address already in use") != std::string::npos;
  };
  std::string state;
  bool taken = false;
  const bool idle = poll(60, 0.5, [&] {
    if ((taken = port_taken())) return true;
    command({"sinfo", "-h", "-o", "%T"}, &state);
    return trimmed(state) == "idle";
  });
  if (taken) {
    // The logs are appended to by the next try; keep this one's for a later failure.
    fs::rename(dir_ + "/slurmctld.log", dir_ + "/slurmctld.log.port-taken");
    fs::rename(dir_ + "/slurmd.log", dir_ + "/slurmd.log.port-taken");
    return false;
  }
  if (!idle) {
    throw std::runtime_error("the node is not idle after 60 s (sinfo: " + trimmed(state) + "); slurmd.log:\n" +
                             read_file(dir_ + "/slurmd.log") + "\nslurmctld.log:\n" +
                             read_file(dir_ + "/slurmctld.log"));
  }
  return true;
}

SlurmCluster::~SlurmCluster() {
  // Jobs first, while slurmd can still signal their steps.
  command({"scancel", "--full", "--user=root"});
  poll(60, 0.5, [&] {
    std::string jobs;
    command({"squeue", "-h"}, &jobs);
    return trimmed(jobs).empty();
  });
  stop_daemons();
}

void SlurmCluster::stop_daemons() {
  stop_process(pid_in(dir_ + "/slurmd.pid"), 10);
  stop_process(pid_in(dir_ + "/slurmctld.pid"), 10);
  stop_process(pid_in(dir_ + "/munged.pid"), 5);
  ::unsetenv("SLURM_CONF");
}

std::string SlurmCluster::submit(const std::string& script) {
  std::string output;
  if (command({"sbatch", "--parsable", script}, &output) != 0) throw std::runtime_error("sbatch failed: " + output);
  const std::string id = trimmed(output);
  return id.substr(0, id.find(';'));  // "ID;CLUSTER" on a federation
}

std::string SlurmCluster::job_state(const std::string& job) {
  std::string output;
  if (command({"scontrol", "show", "job", job}, &output) != 0) return "";
  const size_t at = output.find("JobState=");
  if (at == std::string::npos) return "";
  const size_t begin = at + 9;
  return output.substr(begin, output.find_first_of(" \n", begin) - begin);
}

std::optional<std::string> SlurmCluster::wait_for_end(const std::string& job, double timeout_s) {
  std::string state;
  const bool ended = poll(timeout_s, 1, [&] {
    state = job_state(job);
    return !state.empty() && state != "PENDING" && state != "RUNNING" && state != "COMPLETING" &&
           state != "CONFIGURING";
  });
  if (!ended) return std::nullopt;
  return state;
}

bool SlurmCluster::cancel(const std::string& job) { return command({"scancel", job}) == 0; }

}  // namespace moonseed::testing
