// The Kubernetes manifests of `moonseed launch k8s` (cli/engine/launch.h, docs/launch.md): a
// Secret (the token), a ConfigMap (the script and the recipes beside it), a headless
// Service and a StatefulSet for the learner ranks (a stable DNS name per rank; the rank is
// the pod's ordinal), and a Deployment for the actors. Written as YAML text by hand: every
// string from outside (the script, the token, overrides) goes out double-quoted or as a
// literal block, so no value can change the document's structure.
#include <cctype>
#include <cstdio>
#include <stdexcept>
#include <sstream>
#include <string>

#include "cli/engine/launch.h"

namespace moonseed::cli {
namespace {

constexpr const char* kScriptDir = "/moonseed/experiment";
constexpr const char* kRunsDir = "/moonseed/runs";
constexpr const char* kTokenKey = "token";
constexpr const char* kTokenPlaceholder = "REPLACE-WITH-A-LONG-RANDOM-TOKEN";

// A YAML double-quoted scalar (JSON's escapes, which YAML reads alike).
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// `text` as the value of a key at `indent` spaces: a literal block when YAML keeps it exactly
// (printable lines, the first not starting with a space), else one double-quoted line.
std::string block(const std::string& text, int indent) {
  bool literal = !text.empty() && text[0] != ' ' && text[0] != '\n';
  for (unsigned char c : text) literal = literal && (c == '\n' || c == '\t' || (c >= 0x20 && c != 0x7f));
  if (!literal) return quoted(text) + "\n";
  size_t trailing = 0;
  while (trailing < text.size() && text[text.size() - 1 - trailing] == '\n') ++trailing;
  std::string out = trailing == 0 ? "|-\n" : trailing == 1 ? "|\n" : "|+\n";
  const std::string pad(indent + 2, ' ');
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    out += line.empty() ? "\n" : pad + line + "\n";
    start = end + 1;
  }
  return out;
}

// A ConfigMap key for a file (letters, digits, '-', '_', '.'): its relative path with '/' as
// '.' and any other character as '-'; the volume mounts it back at the path.
std::string config_key(const std::string& relative_path) {
  std::string key;
  for (char c : relative_path) {
    const bool kept = std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
    key += kept ? c : c == '/' ? '.' : '-';
  }
  return key;
}

std::string labels(const std::string& pad, const LaunchPlan& plan, const std::string& component) {
  std::string out = pad + "app.kubernetes.io/name: moonseed\n" + pad + "app.kubernetes.io/instance: " + plan.name + "\n";
  if (!component.empty()) out += pad + "app.kubernetes.io/component: " + component + "\n";
  return out;
}

void token_env(std::ostringstream& out, const std::string& pad, const std::string& secret) {
  out << pad << "env:\n"
      << pad << "  - name: MOONSEED_AUTH_TOKEN\n"
      << pad << "    valueFrom:\n"
      << pad << "      secretKeyRef:\n"
      << pad << "        name: " << secret << "\n"
      << pad << "        key: " << kTokenKey << "\n";
}

// The learner container's shell text: the rank from the pod's ordinal, overrides as "$@".
std::string rank_script(const LaunchPlan& plan, const std::string& script_path) {
  const std::string service = plan.name + "-learner";
  std::string out = "RANK=${HOSTNAME##*-}\n";
  out += "echo \"moonseed launch: rank $RANK of " + std::to_string(plan.learners) + "\"\n";
  out += "exec moonseed run " + shell_quote(script_path);
  if (plan.learners > 1) {
    out += " --rank \"$RANK\" --world-size " + std::to_string(plan.learners) + " --rendezvous tcp:" + service + "-0." +
           service + ":" + std::to_string(plan.rendezvous_port);
  }
  out += " runs_dir=" + std::string(kRunsDir) + " topology.transport=tcp topology.listen=tcp:0.0.0.0:" +
         std::to_string(plan.actor_port) + " topology.local_actors=0 \"$@\"\n";
  return out;
}

}  // namespace

std::string k8s_manifests(const LaunchPlan& plan, const std::vector<LaunchFile>& files, const std::string& token) {
  check_launch_plan(plan);
  if (files.empty()) throw std::invalid_argument("no script to put in the ConfigMap");
  const std::string secret = plan.name + "-token";
  const std::string config_map = plan.name + "-experiment";
  const std::string service = plan.name + "-learner";
  const std::string actors = plan.name + "-actor";
  const std::string script_path = std::string(kScriptDir) + "/" + files[0].relative_path;
  std::ostringstream out;

  out << "# " << plan.name << " on Kubernetes, written by `moonseed launch k8s` (docs/launch.md).\n"
      << "#   " << plan.learners << " learner rank(s): StatefulSet " << service << "; " << plan.actors
      << " actor(s) of " << plan.envs_per_actor << " envs: Deployment " << actors << ".\n"
      << "# Apply: kubectl apply -f THIS_FILE. Stop: kubectl delete -f THIS_FILE (every pod gets\n"
      << "# SIGTERM; each rank saves a checkpoint within terminationGracePeriodSeconds).\n";

  out << "---\n# The auth token the ranks and actors share (docs/security.md).\n";
  if (token.empty()) {
    out << "# PLACEHOLDER: replace the token below with a long random one before applying\n"
        << "# (or write this file again with --auth-token-file FILE).\n";
  }
  out << "apiVersion: v1\nkind: Secret\nmetadata:\n  name: " << secret << "\n  labels:\n"
      << labels("    ", plan, "") << "type: Opaque\nstringData:\n  " << kTokenKey << ": "
      << quoted(token.empty() ? kTokenPlaceholder : token) << "\n";

  out << "---\n# The experiment script and the recipes beside it, mounted at " << kScriptDir << ".\n"
      << "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " << config_map << "\n  labels:\n"
      << labels("    ", plan, "") << "data:\n";
  for (const LaunchFile& file : files) out << "  " << config_key(file.relative_path) << ": " << block(file.text, 2);

  out << "---\n# Headless: each learner pod gets a stable DNS name, " << service << "-R." << service
      << ",\n# published before it is ready so that the ranks find rank 0 at the rendezvous.\n"
      << "apiVersion: v1\nkind: Service\nmetadata:\n  name: " << service << "\n  labels:\n"
      << labels("    ", plan, "learner") << "spec:\n  clusterIP: None\n  publishNotReadyAddresses: true\n"
      << "  selector:\n" << labels("    ", plan, "learner") << "  ports:\n"
      << "    - name: rendezvous\n      port: " << plan.rendezvous_port << "\n"
      << "    - name: actors\n      port: " << plan.actor_port << "\n";

  out << "---\n# The learner ranks: pod NAME-learner-R is rank R. All start together (Parallel): rank 0\n"
      << "# waits for the others at the rendezvous. A rank that ends is restarted by the StatefulSet:\n"
      << "# delete these manifests once the run is over. Runs go to an emptyDir; mount a volume there\n"
      << "# to keep them.\n"
      << "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: " << service << "\n  labels:\n"
      << labels("    ", plan, "learner") << "spec:\n  serviceName: " << service << "\n  replicas: " << plan.learners
      << "\n  podManagementPolicy: Parallel\n  selector:\n    matchLabels:\n" << labels("      ", plan, "learner")
      << "  template:\n    metadata:\n      labels:\n" << labels("        ", plan, "learner")
      << "    spec:\n      terminationGracePeriodSeconds: 120\n      containers:\n"
      << "        - name: learner\n          image: " << plan.image << "\n"
      << "          command: [\"/bin/sh\", \"-c\"]\n          args:\n            - " << block(rank_script(plan, script_path), 12)
      << "            - rank\n";
  for (const std::string& o : plan.overrides) out << "            - " << quoted(o) << "\n";
  token_env(out, "          ", secret);
  out << "          ports:\n"
      << "            - name: rendezvous\n              containerPort: " << plan.rendezvous_port << "\n"
      << "            - name: actors\n              containerPort: " << plan.actor_port << "\n"
      << "          # Ready once the rank listens for actors, after the rendezvous and the model's set-up.\n"
      << "          readinessProbe:\n            tcpSocket:\n              port: actors\n            periodSeconds: 5\n"
      << "          livenessProbe:\n            tcpSocket:\n              port: actors\n"
      << "            initialDelaySeconds: 60\n            periodSeconds: 20\n            failureThreshold: 6\n"
      << "          volumeMounts:\n"
      << "            - name: experiment\n              mountPath: " << kScriptDir << "\n              readOnly: true\n"
      << "            - name: runs\n              mountPath: " << kRunsDir << "\n"
      << "      volumes:\n        - name: experiment\n          configMap:\n            name: " << config_map
      << "\n            items:\n";
  for (const LaunchFile& file : files) {
    out << "              - key: " << config_key(file.relative_path) << "\n                path: "
        << quoted(file.relative_path) << "\n";
  }
  out << "        - name: runs\n          emptyDir: {}\n";

  out << "---\n# The actors: each connects to rank 0's pod and waits for it to listen.\n"
      << "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: " << actors << "\n  labels:\n"
      << labels("    ", plan, "actor") << "spec:\n  replicas: " << plan.actors << "\n  selector:\n    matchLabels:\n"
      << labels("      ", plan, "actor") << "  template:\n    metadata:\n      labels:\n" << labels("        ", plan, "actor")
      << "    spec:\n      containers:\n        - name: actor\n          image: " << plan.image << "\n"
      << "          command: [\"moonseed\", \"actor\", \"--connect\", \"tcp:" << service << "-0." << service << ":"
      << plan.actor_port << "\", \"--reconnect-for\", \"300\"]\n";
  token_env(out, "          ", secret);
  return out.str();
}

}  // namespace moonseed::cli
