// Names, shell words and the checks every launch plan passes (cli/engine/launch.h).
#include <cctype>
#include <stdexcept>
#include <string>

#include "cli/engine/launch.h"

namespace moonseed::cli {
namespace {

bool safe_in_shell(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || std::string("@%+=:,./_-").find(c) != std::string::npos;
}

// Text an #SBATCH line, a YAML plain word or a shell word holds without quoting.
void require_word(const std::string& option, const std::string& value, const std::string& extra) {
  for (char c : value) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && extra.find(c) == std::string::npos) {
      throw std::invalid_argument(option + " '" + value + "': only letters, digits and '" + extra + "' are allowed");
    }
  }
}

void require_port(const std::string& option, int port) {
  if (port < 1 || port > 65535) {
    throw std::invalid_argument(option + " " + std::to_string(port) + ": a port is 1 to 65535");
  }
}

}  // namespace

std::string dns1123_name(const std::string& name, size_t max_length) {
  std::string out;
  for (char c : name) {
    const char lower = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if ((lower >= 'a' && lower <= 'z') || (lower >= '0' && lower <= '9')) {
      out += lower;
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  if (out.size() > max_length) out.resize(max_length);
  while (!out.empty() && out.back() == '-') out.pop_back();
  if (out.empty()) {
    throw std::invalid_argument("the experiment's name \"" + name +
                                "\" has no letter or digit to name the job after: set name in the script");
  }
  return out;
}

std::string shell_quote(const std::string& text) {
  bool safe = !text.empty();
  for (char c : text) safe = safe && safe_in_shell(c);
  if (safe) return text;
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

void check_launch_plan(const LaunchPlan& plan) {
  if (plan.learners < 1) {
    throw std::invalid_argument("--learners " + std::to_string(plan.learners) + ": at least 1 learner rank");
  }
  if (plan.nodes < 1) throw std::invalid_argument("--nodes " + std::to_string(plan.nodes) + ": at least 1 node");
  if (plan.nodes > plan.learners || plan.learners % plan.nodes != 0) {
    throw std::invalid_argument("--nodes " + std::to_string(plan.nodes) + " for " + std::to_string(plan.learners) +
                                " learner ranks: the ranks must divide evenly over the nodes");
  }
  if (plan.actor_nodes < 0) {
    throw std::invalid_argument("--actor-nodes " + std::to_string(plan.actor_nodes) + ": 0 or more nodes");
  }
  if (plan.actor_nodes > plan.actors) {
    throw std::invalid_argument("--actor-nodes " + std::to_string(plan.actor_nodes) + " for " +
                                std::to_string(plan.actors) + " actors (topology.actors): a node without an actor");
  }
  if (plan.cpus_per_task < 1) {
    throw std::invalid_argument("--cpus-per-task " + std::to_string(plan.cpus_per_task) + ": at least 1");
  }
  require_port("--port", plan.rendezvous_port);
  require_port("--actor-port", plan.actor_port);
  const int last_actor_port = plan.actor_port + plan.learners - 1;
  require_port("--actor-port (the last rank's)", last_actor_port);
  if (plan.rendezvous_port >= plan.actor_port && plan.rendezvous_port <= last_actor_port) {
    throw std::invalid_argument("--port " + std::to_string(plan.rendezvous_port) + " is one of the ranks' actor ports " +
                                std::to_string(plan.actor_port) + ".." + std::to_string(last_actor_port));
  }
  require_word("--time", plan.time, ":-");
  require_word("--partition", plan.partition, "_.-,");
  require_word("--image", plan.image, "_.-/:@");
  for (const std::string* path : {&plan.script, &plan.resume_dir, &plan.auth_token_file, &plan.moonseed}) {
    if (path->find('\n') != std::string::npos) throw std::invalid_argument("a path with a newline: " + *path);
  }
  // #SBATCH lines take a path as one word, and --output reads '%' as a pattern.
  for (const std::string* path : {&plan.output_dir, &plan.workdir}) {
    if (path->find_first_of(" \t\n%") != std::string::npos) {
      throw std::invalid_argument("'" + *path + "': an #SBATCH path without spaces or '%'");
    }
  }
  if (plan.script.empty() == plan.resume_dir.empty()) {
    throw std::invalid_argument("give either SCRIPT or --resume RUN_DIR");
  }
}

}  // namespace moonseed::cli
