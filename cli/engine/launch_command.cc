// `moonseed launch slurm|k8s SCRIPT.lua [options] [key=value...]` (docs/launch.md): loads
// the experiment with its overrides (a script with an error stops here), reads its topology,
// and writes the batch script or the manifests (cli/engine/launch.h). Every check runs before the
// first file is written, so bad input writes nothing; each file is written under a
// temporary name and renamed, so a file is whole or absent.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <variant>

#include "cli/common/auth_token.h"
#include "cli/engine/checkpoint_choice.h"
#include "cli/common/commands.h"
#include "cli/engine/launch.h"
#include "cli/common/log_text.h"
#include "engine/config/schema.h"
#include "scripts/loader/experiment_loader.h"

namespace moonseed::cli {
namespace {

namespace fs = std::filesystem;

const char* kHelp =
    "usage: moonseed launch slurm|k8s SCRIPT.lua [options] [key=value...]\n"
    "       moonseed launch slurm --resume RUN_DIR [options] [key=value...]\n"
    "\n"
    "Writes the files that start the experiment on a cluster, from its topology\n"
    "(topology.actors, topology.envs_per_actor, topology.learners when the schema has it):\n"
    "  slurm  DIR/NAME.sbatch: the learner ranks as one srun step (rank = $SLURM_PROCID,\n"
    "         rendezvous on the first host of the allocation), each starting its share\n"
    "         of local actors; with --actor-nodes the actors as a second step. Submit it\n"
    "         with sbatch; scancel makes every rank save a checkpoint and stop.\n"
    "  k8s    DIR/NAME.k8s.yaml: a Secret (the token), a ConfigMap (the script), a headless\n"
    "         Service and a StatefulSet (rank = pod ordinal), an actor Deployment.\n"
    "NAME is the experiment's name made a DNS-1123 label. The script is loaded first\n"
    "with the overrides: a script with an error writes nothing.\n"
    "\n"
    "  --learners L          learner ranks (default 1, or topology.learners)\n"
    "  --nodes N             Slurm nodes for the learner ranks (default: one per rank);\n"
    "                        the ranks must divide evenly over them\n"
    "  --actor-nodes M       Slurm: run the actors as tasks on M nodes of their own (the\n"
    "                        ranks start none); actor k connects to rank k mod L\n"
    "  --cpus-per-task C     Slurm CPUs per learner rank (default: 1 + its local actors,\n"
    "                        2 with --actor-nodes)\n"
    "  --time T, --partition P  Slurm's --time (HH:MM:SS) and --partition\n"
    "  --port P              the rendezvous port (default 29500)\n"
    "  --actor-port P        where rank r listens for actors: P + r (default 7000)\n"
    "  --auth-token-file F   the token ranks and actors share; Slurm without it: DIR/NAME.token\n"
    "                        is made (mode 600), k8s without it: a placeholder to replace\n"
    "  --image IMG           k8s: the image with moonseed on PATH (default moonseed:latest)\n"
    "  --out DIR             where the files go (default: the current directory)\n"
    "  --resume RUN_DIR      Slurm: a script that resumes RUN_DIR (moonseed run --resume)\n";

struct LaunchArgs {
  std::string kind;
  std::string script;
  std::string resume_dir;
  std::vector<std::string> overrides;
  std::optional<int> learners, nodes, actor_nodes, cpus_per_task, port, actor_port;  // unset: the defaults
  std::string out = ".";
  std::string token_file;
  std::string image = "moonseed:latest";
  std::string time, partition;
};

// Ranges are check_launch_plan's; this only refuses what is not a number.
int parse_int(const std::string& option, const std::string& text) {
  const std::optional<int64_t> value = parse_integer(text, INT_MIN, INT_MAX);
  if (!value) throw std::invalid_argument(option + " '" + text + "': not a whole number");
  return static_cast<int>(*value);
}

LaunchArgs parse(const Args& args) {
  LaunchArgs out;
  out.kind = args[0];
  if (out.kind != "slurm" && out.kind != "k8s") {
    throw std::invalid_argument("unknown kind '" + out.kind + "': moonseed launch slurm|k8s (see --help)");
  }
  const std::map<std::string, std::optional<int>*> numbers = {
      {"--learners", &out.learners}, {"--nodes", &out.nodes},     {"--actor-nodes", &out.actor_nodes},
      {"--cpus-per-task", &out.cpus_per_task}, {"--port", &out.port}, {"--actor-port", &out.actor_port}};
  const std::map<std::string, std::string*> texts = {
      {"--out", &out.out},   {"--auth-token-file", &out.token_file}, {"--image", &out.image},
      {"--time", &out.time}, {"--partition", &out.partition},        {"--resume", &out.resume_dir}};
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw std::invalid_argument(a + " needs a value");
      return args[++i];
    };
    if (const auto n = numbers.find(a); n != numbers.end()) {
      *n->second = parse_int(a, value());
    } else if (const auto t = texts.find(a); t != texts.end()) {
      *t->second = value();
    } else if (a == "--auth-token") {
      throw std::invalid_argument(auth_token_on_command_line_message());
    } else if (a.rfind("--", 0) == 0) {
      throw std::invalid_argument("unknown option " + a + " (see moonseed launch --help)");
    } else if (a.find('=') != std::string::npos) {
      out.overrides.push_back(a);
    } else if (out.script.empty()) {
      out.script = a;
    } else {
      throw std::invalid_argument("unexpected argument '" + a + "': overrides are key=value");
    }
  }
  if (out.script.empty() == out.resume_dir.empty()) {
    throw std::invalid_argument("give either SCRIPT or --resume RUN_DIR (see moonseed launch --help)");
  }
  if (out.kind == "k8s" && !out.resume_dir.empty()) {
    throw std::invalid_argument("--resume is for slurm; on Kubernetes a rank's pod keeps its run in its volume");
  }
  if (out.kind == "k8s" && out.actor_nodes) {
    throw std::invalid_argument("--actor-nodes is for slurm; on Kubernetes the actors are a Deployment of their own");
  }
  return out;
}

// topology.learners when the schema has the field, else nothing.
const engine::FieldSchema* learners_field() {
  for (const engine::FieldSchema& f : engine::config_schema()) {
    if (f.path == "topology.learners") return &f;
  }
  return nullptr;
}

// The script and the files it loaded from its own folder (recipes beside it), for the
// ConfigMap; files from elsewhere are named on stderr: the image must hold them.
std::vector<LaunchFile> files_for_pods(const scripts::LoadedExperiment& loaded) {
  std::vector<LaunchFile> files;
  const fs::path dir = fs::absolute(loaded.sources.at(0).path).lexically_normal().parent_path();
  for (const scripts::ScriptSource& source : loaded.sources) {
    if (source.embedded) continue;
    const fs::path relative = fs::absolute(source.path).lexically_normal().lexically_relative(dir);
    if (relative.empty() || *relative.begin() == "..") {
      std::cerr << "moonseed launch: " << source.path << " is outside the script's folder and not in the "
                << "ConfigMap: the image must hold it on $MOONSEED_PATH\n";
      continue;
    }
    files.push_back({relative.string(), source.text});
  }
  return files;
}

// Writes `text` to `path` whole or not at all, with `mode`.
void write_file(const fs::path& path, const std::string& text, mode_t mode) {
  const std::string temp = path.string() + ".partial";
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) throw std::runtime_error("cannot write " + path.string() + ": " + std::strerror(errno));
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  if (::close(fd) != 0 || !written || ::rename(temp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(temp.c_str());
    throw std::runtime_error("cannot write " + path.string() + ": " + why);
  }
}

// 32 random bytes as hex, from the kernel.
std::string random_token() {
  std::ifstream in("/dev/urandom", std::ios::binary);
  unsigned char bytes[32];
  if (!in.read(reinterpret_cast<char*>(bytes), sizeof bytes)) throw std::runtime_error("cannot read /dev/urandom");
  std::string hex;
  for (unsigned char b : bytes) {
    char buf[3];
    std::snprintf(buf, sizeof buf, "%02x", b);
    hex += buf;
  }
  return hex;
}

}  // namespace

int launch_command(const Args& args) {
  if (const std::optional<int> code = answer_help(args, kHelp)) return *code;
  LaunchArgs a = parse(args);
  const engine::FieldSchema* field = learners_field();
  if (field && a.learners) a.overrides.push_back("topology.learners=" + std::to_string(*a.learners));
  const std::string config_path = a.resume_dir.empty() ? a.script : (fs::path(a.resume_dir) / "config.lua").string();
  if (!a.resume_dir.empty() && !fs::exists(config_path)) {
    throw std::invalid_argument(a.resume_dir + " is not a run directory (no config.lua)");
  }
  const scripts::LoadedExperiment loaded = scripts::load_experiment_sources(config_path, a.overrides);
  const engine::ExperimentConfig& config = loaded.config;

  LaunchPlan plan;
  plan.learners = field ? static_cast<int>(std::get<int64_t>(field->get(config))) : a.learners.value_or(1);
  plan.name = dns1123_name(config.name, a.kind == "k8s" ? 40 : 63);  // k8s: room for "-experiment", pod ordinals
  plan.script = a.script.empty() ? "" : fs::absolute(a.script).lexically_normal().string();
  plan.resume_dir = a.resume_dir.empty() ? "" : fs::absolute(a.resume_dir).lexically_normal().string();
  plan.overrides = a.overrides;
  plan.nodes = a.nodes.value_or(plan.learners);
  plan.actor_nodes = a.actor_nodes.value_or(0);
  plan.actors = config.topology.actors;
  plan.envs_per_actor = config.topology.envs_per_actor;
  const int local_actors = (plan.actors + plan.learners - 1) / std::max(plan.learners, 1);
  plan.cpus_per_task = a.cpus_per_task.value_or(plan.actor_nodes > 0 ? 2 : 1 + local_actors);
  plan.rendezvous_port = a.port.value_or(29500);
  plan.actor_port = a.actor_port.value_or(7000);
  plan.time = a.time;
  plan.partition = a.partition;
  const fs::path out_dir = fs::absolute(a.out).lexically_normal();
  plan.output_dir = out_dir.string();
  plan.workdir = fs::current_path().string();
  plan.moonseed = sibling_binary("moonseed");
  plan.image = a.image;
  const bool make_token = a.kind == "slurm" && a.token_file.empty();
  plan.auth_token_file = make_token ? (out_dir / (plan.name + ".token")).string()
                                    : fs::absolute(a.token_file).lexically_normal().string();

  // Everything is generated (and so checked) before the first file is written.
  fs::path target;
  std::string text;
  if (a.kind == "slurm") {
    target = out_dir / (plan.name + ".sbatch");
    text = slurm_batch_script(plan);
  } else {
    target = out_dir / (plan.name + ".k8s.yaml");
    text = k8s_manifests(plan, files_for_pods(loaded), a.token_file.empty() ? "" : read_auth_token_file(a.token_file));
  }
  fs::create_directories(out_dir);
  if (make_token && !fs::exists(plan.auth_token_file)) {
    write_file(plan.auth_token_file, random_token() + "\n", 0600);
    std::cout << "moonseed launch: wrote a new auth token to " << plan.auth_token_file << " (mode 600)\n";
  }
  write_file(target, text, a.kind == "slurm" ? 0755 : 0644);
  std::cout << "moonseed launch: wrote " << target.string() << " (" << plan.learners << " learner rank(s), "
            << plan.actors << " actor(s))\n"
            << (a.kind == "slurm" ? "  submit: sbatch " : "  apply: kubectl apply -f ") << target.string() << "\n";
  return 0;
}

}  // namespace moonseed::cli
