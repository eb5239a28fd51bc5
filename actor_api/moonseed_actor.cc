// The C API of actor_api/moonseed_actor.h: the project's actor loop (actor/actor_loop.h) with an
// EnvSet whose calls go to the caller's callbacks, and the Lua reward shaping of moonseed-actor.
#include "actor_api/moonseed_actor.h"

#include <atomic>
#include <cstring>
#include <optional>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "actor/actor_loop.h"
#include "actor_api/lua_reward_shaping.h"
#include "base/text.h"
#include "envs/describe.h"
#include "envs/env_set.h"
#include "envs/plugin_env.h"
#include "rpc/messages.h"

struct moonseed_actor {
  std::atomic<bool> stop{false};
  bool running = false;
  std::string error;                                  // set_error, then the run's message
  std::vector<moonseed::envs::EnvError>* env_errors = nullptr;  // during a run() callback
};

namespace moonseed::actor_api {
namespace {

std::string welcome_json(const rpc::Welcome& w) {
  std::string options;
  for (const auto& [key, value] : w.env_options) {
    options += (options.empty() ? "" : ", ") + base::json_quote(key) + ": " + base::number_text(value);
  }
  return "{\"run_id\": " + base::json_quote(w.run_id) + ", \"actor_id\": " + std::to_string(w.actor_id) +
         ", \"env_id\": " + base::json_quote(w.env_id) + ", \"python\": " + base::json_quote(w.env_files.python) +
         ", \"options\": {" + options +
         "}, \"num_envs\": " + std::to_string(w.num_envs) + ", \"seed\": " + std::to_string(w.seed) + "}";
}

// The caller's envs, one callback per group call.
class CallbackEnvSet final : public envs::EnvSet {
 public:
  CallbackEnvSet(moonseed_actor* actor, const moonseed_actor_envs& callbacks, envs::EnvSpec spec, uint32_t size)
      : actor_(actor), callbacks_(callbacks), spec_(std::move(spec)), size_(size) {}

  const envs::EnvSpec& spec() const override { return spec_; }
  uint32_t size() const override { return size_; }

  void run(const envs::EnvSetCall& call, std::vector<envs::EnvError>& errors) override {
    envs::check_call_range(call, size_);
    actor_->error.clear();
    actor_->env_errors = &errors;
    const int status = callbacks_.run(callbacks_.user, actor_, call.begin, call.count,
                                      reinterpret_cast<const uint8_t*>(call.ops), call.actions, call.seeds,
                                      call.observations, call.rewards, call.flags);
    actor_->env_errors = nullptr;
    if (status != MOONSEED_ENV_OK) {
      throw std::runtime_error(actor_->error.empty() ? "the envs' run callback failed without saying why"
                                                     : actor_->error);
    }
  }

 private:
  moonseed_actor* actor_;
  moonseed_actor_envs callbacks_;
  envs::EnvSpec spec_;
  uint32_t size_;
};

std::unique_ptr<envs::EnvSet> open_envs(moonseed_actor* actor, const moonseed_actor_envs& callbacks,
                                        const rpc::Welcome& welcome) {
  moonseed_env_spec c_spec{};
  actor->error.clear();
  const std::string json = welcome_json(welcome);
  if (callbacks.open(callbacks.user, actor, welcome.num_envs, json.c_str(), &c_spec) != MOONSEED_ENV_OK) {
    throw std::runtime_error(actor->error.empty() ? "the envs' open callback failed without saying why"
                                                  : actor->error);
  }
  envs::EnvSpec spec;
  try {
    spec = envs::spec_from_c(c_spec, welcome.env_id, "the Python envs' ");
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(e.what());
  }
  return std::make_unique<CallbackEnvSet>(actor, callbacks, std::move(spec), welcome.num_envs);
}

int run(moonseed_actor* actor, const moonseed_actor_options& options, const moonseed_actor_envs& callbacks) {
  actor::ActorOptions o;
  o.address = options.address ? options.address : "";
  o.auth_token = options.auth_token ? options.auth_token : "";
  o.actor_id = options.actor_id;
  if (options.connect_timeout_s > 0) o.connect_timeout_s = options.connect_timeout_s;
  if (options.reconnect_for_s >= 0) o.reconnect_for_s = options.reconnect_for_s;
  o.verbose = options.verbose != 0;
  o.hook = make_lua_reward_shaping();
  o.make_envs = [actor, callbacks](const rpc::Welcome& welcome) { return open_envs(actor, callbacks, welcome); };
  switch (actor::run_actor(o, actor->stop)) {
    case actor::ActorExit::kBye: return MOONSEED_ACTOR_BYE;
    case actor::ActorExit::kStopped: return MOONSEED_ACTOR_STOPPED;
    case actor::ActorExit::kUnreachable: return MOONSEED_ACTOR_UNREACHABLE;
    case actor::ActorExit::kRefused: return MOONSEED_ACTOR_REFUSED;
  }
  return MOONSEED_ACTOR_ERROR;
}

}  // namespace
}  // namespace moonseed::actor_api

#define MOONSEED_ACTOR_EXPORT extern "C" __attribute__((visibility("default")))

MOONSEED_ACTOR_EXPORT uint32_t moonseed_actor_api_version(void) { return MOONSEED_ACTOR_API_VERSION; }

MOONSEED_ACTOR_EXPORT moonseed_actor* moonseed_actor_new(void) { return new (std::nothrow) moonseed_actor; }

MOONSEED_ACTOR_EXPORT void moonseed_actor_free(moonseed_actor* actor) { delete actor; }

MOONSEED_ACTOR_EXPORT int moonseed_actor_run(moonseed_actor* actor, const moonseed_actor_options* options,
                                             const moonseed_actor_envs* envs) {
  if (!actor) return MOONSEED_ACTOR_ERROR;
  if (!options || !envs || !envs->open || !envs->run) {
    actor->error = "moonseed_actor_run needs options and both env callbacks";
    return MOONSEED_ACTOR_ERROR;
  }
  if (actor->running) {
    actor->error = "moonseed_actor_run: this actor is already running";
    return MOONSEED_ACTOR_ERROR;
  }
  actor->running = true;
  actor->stop = false;
  int result = MOONSEED_ACTOR_ERROR;
  try {
    result = moonseed::actor_api::run(actor, *options, *envs);
    actor->error.clear();
  } catch (const std::exception& e) {
    actor->error = e.what();
  } catch (...) {
    actor->error = "unknown error";
  }
  actor->env_errors = nullptr;
  actor->running = false;
  return result;
}

MOONSEED_ACTOR_EXPORT void moonseed_actor_stop(moonseed_actor* actor) {
  if (actor) actor->stop = true;
}

MOONSEED_ACTOR_EXPORT void moonseed_actor_set_error(moonseed_actor* actor, const char* message) {
  if (actor) actor->error = message ? message : "";
}

MOONSEED_ACTOR_EXPORT void moonseed_actor_env_error(moonseed_actor* actor, uint32_t env, const char* message) {
  if (actor && actor->env_errors) actor->env_errors->push_back({env, message ? message : ""});
}

MOONSEED_ACTOR_EXPORT int moonseed_actor_describe(const moonseed_env_spec* spec, const void* first_observation,
                                                  char* out, size_t capacity, size_t* size) {
  std::string text;
  int status = MOONSEED_ENV_OK;
  try {
    if (!spec) throw std::invalid_argument("no spec");
    moonseed::envs::EnvDescription d;
    d.spec = moonseed::envs::spec_from_c(*spec, "", "the Python env's ");
    const auto* bytes = static_cast<const uint8_t*>(first_observation);
    d.first_observation.assign(bytes, bytes + d.spec.observation.byte_size());
    text = moonseed::envs::description_text(d);
  } catch (const std::exception& e) {
    text = e.what();
    status = MOONSEED_ENV_ERROR;
  }
  if (size) *size = text.size();
  if (out && text.size() < capacity) {
    std::memcpy(out, text.data(), text.size());
    out[text.size()] = '\0';
  }
  return status;
}

MOONSEED_ACTOR_EXPORT const char* moonseed_actor_error(const moonseed_actor* actor) {
  return actor ? actor->error.c_str() : "no actor";
}
