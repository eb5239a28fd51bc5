// Envs from a C plugin (include/moonseed_env.h, docs/env-plugins.md): a shared library the
// actor dlopen()s, one instance per env.
//
// Every failure is a std::invalid_argument (loading, creating: the config is wrong) or a
// std::runtime_error (a call that failed while running) whose message starts with
// "plugin PATH: ", so the user always knows which file spoke.
//
// Thread-safety: a library is loaded once per path and process (shared by its envs, unloaded
// with the last); loading may happen from any thread. A PluginEnv is used by one thread at a
// time, like every Env.
#pragma once

#include <memory>
#include <string>

#include "envs/env.h"

struct moonseed_env_spec;

namespace moonseed::envs {

class PluginLibrary;

// The library at `path`, loaded (or the one already loaded from that path). Throws
// std::invalid_argument naming the file: missing or unreadable, not a shared library,
// no moonseed_env_plugin symbol, another ABI version, a table missing a required function.
std::shared_ptr<PluginLibrary> load_plugin(const std::string& path);

// One instance of env `id` from the plugin at `path`. Throws std::invalid_argument when the
// library cannot be loaded, create() refuses (with the plugin's message), or its spec is
// invalid (the message says which rule it breaks).
std::unique_ptr<Env> make_plugin_env(const std::string& path, const std::string& id, const EnvOptions& options);

// The EnvSpec of a spec in the plugin ABI's C form (include/moonseed_env.h), named `id`; also how a
// Python actor's spaces reach the engine (actor_api/moonseed_actor.h). std::invalid_argument saying
// which rule it breaks, prefixed with `where` (e.g. "plugin PATH: ").
EnvSpec spec_from_c(const moonseed_env_spec& spec, const std::string& id, const std::string& where);

// Checks that `path` names a readable regular file; std::invalid_argument naming it otherwise.
void check_plugin_file(const std::string& path);

}  // namespace moonseed::envs
