// `moonseed run`: the command line of a training run (cli/engine/run.h runs it).
#include <cstdio>
#include <stdexcept>
#include <string>

#include "cli/common/auth_token.h"
#include "cli/common/commands.h"
#include "cli/engine/run.h"
#include "engine/config/experiment_config.h"
#include "engine/config/schema.h"
#include "engine/config/values.h"

namespace moonseed::cli {
namespace {

const char* kHelp =
    "usage: moonseed run SCRIPT.lua [key=value...] [--quiet] [--no-watch] [--announce FILE]\n"
    "                    [--auth-token-file FILE] [--insecure] [--log-in-run-dir]\n"
    "       moonseed run --resume RUN_DIR [key=value...] [same options]\n"
    "       moonseed run SCRIPT.lua --rank R --world-size N --rendezvous tcp:HOST:PORT [...]\n"
    "\n"
    "Trains the experiment the script declares: a learner in this process and\n"
    "topology.actors local actor processes over a Unix socket (or TCP when\n"
    "topology.transport = \"tcp\"). key=value overrides any config field, typed\n"
    "by the schema, e.g. optimizer.lr=3e-4 topology.actors=4 stop.seconds=60.\n"
    "\n"
    "The env is a built-in one (env.id) or your own, without rebuilding Moonseed:\n"
    "  env.plugin = \"libmy_env.so\"  a C env (a shared library built against\n"
    "    include/moonseed_env.h): every actor loads it (docs/env-plugins.md);\n"
    "  env.python = \"myenvs:make_env\"  a Python env: the local actors are Python\n"
    "    processes (python3 -m moonseed.actor) that import MODULE from the script's\n"
    "    directory or env.python_path (docs/python-actors.md).\n"
    "Either way env.id names the env, and the learner never runs its code: a child\n"
    "process describes the env at load time. env.wrappers wraps any of them\n"
    "(docs/env-wrappers.md). Python is $MOONSEED_PYTHON, else /usr/bin/python3.\n"
    "\n"
    "Every run gets a directory RUNS_DIR/NAME-DATE-TIME with config.lua (the\n"
    "resolved config), metrics.jsonl (one JSON object per log tick), checkpoints/\n"
    "and actors/ (actor logs), readable by you only (group_access=true: by your\n"
    "group too). SIGINT or SIGTERM saves a checkpoint and exits;\n"
    "--resume continues from the newest complete checkpoint of RUN_DIR.\n"
    "\n"
    "Hot reload: saving the script (or a recipe it extends) while the run trains\n"
    "applies it within a second. Hot fields (learning rate, loss coefficients,\n"
    "stop, log, checkpoint cadence) change at the next training step; a change to a\n"
    "restart-only field (model, topology, batch sizes, optimizer kind...) is\n"
    "refused, naming the field, and the run goes on unchanged; a script with an\n"
    "error changes nothing. Each reload is printed and logged in metrics.jsonl.\n"
    "With --resume the run directory's config.lua is watched. --no-watch turns it off.\n"
    "\n"
    "Control: the run serves RUN_DIR/control.sock; `moonseed ctl RUN_DIR status`,\n"
    "`moonseed attach RUN_DIR` (a console) or ms.attach in `moonseed repl` talk to it.\n"
    "--announce FILE writes the run directory's path to FILE once it exists\n"
    "(how ms.start finds the run it started). --log-in-run-dir sends stdout and\n"
    "stderr to RUN_DIR/run.log from the moment the run directory exists.\n"
    "\n"
    "With a token (the first line of --auth-token-file FILE, else\n"
    "$MOONSEED_AUTH_TOKEN) actors must present the same one; local actors get it\n"
    "through the environment, remote ones use --auth-token-file or the variable.\n"
    "A learner that listens beyond this host (topology.listen on an address other\n"
    "than loopback) refuses to start without a token unless given --insecure.\n"
    "\n"
    "Learner groups (docs/distributed.md): topology.learners=N trains one model\n"
    "with N learner ranks, gradients averaged every step; on one host the run\n"
    "starts ranks 1..N-1 itself and spreads topology.actors over them. Across\n"
    "hosts start each rank with --rank R --world-size N --rendezvous tcp:HOST:PORT\n"
    "(rank 0 serves c10d's TCPStore on HOST:PORT; a non-loopback one needs a token).\n"
    "Rank 0 owns the run directory, checkpoints and hot reload; a rank that dies or\n"
    "hangs stops the group (exit code 3), and --resume RUN_DIR on rank 0 restarts it.\n"
    "\n"
    "The run stops at the first of stop.frames, stop.seconds or stop.return_mean\n"
    "(mean return over the last 100 episodes, once 100 episodes have ended).\n"
    "\n"
    "Config fields, with their defaults and reload class (docs/config.md has their\n"
    "types and limits too):\n";

// Every field of the schema: "  path = default  (reload) doc", so the help never lags the schema.
std::string field_help() {
  const engine::ExperimentConfig defaults;
  std::string out;
  for (const engine::FieldSchema& f : engine::config_schema()) {
    out += "  " + f.path + " = " + engine::lua_literal(f.get(defaults)) + "  (" + engine::reload_name(f.reload) +
           ") " + f.doc + "\n";
  }
  return out;
}

RunOptions parse(const Args& args) {
  RunOptions out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--resume") {
      if (i + 1 >= args.size()) throw std::invalid_argument("--resume needs a run directory");
      out.resume_dir = args[++i];
    } else if (a == "--quiet") {
      out.quiet = true;
    } else if (a == "--no-watch") {
      out.watch = false;
    } else if (a == "--auth-token-file") {
      if (i + 1 >= args.size()) throw std::invalid_argument("--auth-token-file needs a file");
      out.auth_token_file = args[++i];
    } else if (a == "--auth-token") {
      throw std::invalid_argument(auth_token_on_command_line_message());
    } else if (a == "--rank" || a == "--world-size" || a == "--rendezvous") {
      // The same as the topology fields they set, so that config.lua and --help say one thing.
      if (i + 1 >= args.size()) throw std::invalid_argument(a + " needs a value (see moonseed run --help)");
      const char* field = a == "--rank" ? "topology.rank" : a == "--world-size" ? "topology.learners" : "topology.rendezvous";
      out.overrides.push_back(std::string(field) + "=" + args[++i]);
    } else if (a == "--insecure") {
      out.insecure = true;
    } else if (a == "--log-in-run-dir") {
      out.log_in_run_dir = true;
    } else if (a == "--announce") {
      if (i + 1 >= args.size()) throw std::invalid_argument("--announce needs a file");
      out.announce = args[++i];
    } else if (a.find('=') != std::string::npos && a.rfind("--", 0) != 0) {
      out.overrides.push_back(a);
    } else if (a.rfind("--", 0) == 0) {
      throw std::invalid_argument("unknown option " + a + " (see moonseed run --help)");
    } else if (out.script.empty()) {
      out.script = a;
    } else {
      throw std::invalid_argument("unexpected argument '" + a + "': overrides are key=value");
    }
  }
  if (out.script.empty() == out.resume_dir.empty()) {
    throw std::invalid_argument("give either SCRIPT or --resume RUN_DIR (see moonseed run --help)");
  }
  return out;
}

}  // namespace

int run_command(const Args& args) {
  if (wants_help(args)) {
    std::fputs(kHelp, stdout);
    std::fputs(field_help().c_str(), stdout);
    return 0;
  }
  Run run(parse(args));
  run.setup();
  while (run.tick()) {
    // Each tick waits for the next log tick, a signal or a control request.
  }
  return run.finish();
}

}  // namespace moonseed::cli
