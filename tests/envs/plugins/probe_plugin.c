/* A plugin for tests: every behaviour the engine must handle, chosen by options, plus
 * variants built from this file with macros (tests/envs/CMakeLists.txt):
 *   PROBE_ABI_VERSION   the version its table claims (default: this header's)
 *   PROBE_NO_ENTRY      exports no moonseed_env_plugin
 *   PROBE_NO_STATE      leaves get_state/set_state NULL
 *
 * Env "Probe-v0". Observation: float32 box [obs_size] in [-1, 1] (obs[0] = steps / 1000, the
 * rest 0.5), or with uint8 = 1 a uint8 box [2, 3] in [0, 255], unbounded with unbounded = 1.
 * Action: discrete(2), or with box_action = 1 a float32 box [2] in [-1, 1]. Reward: the
 * discrete action (or the first box value). Options:
 *   obs_size          float32 observation size (default 4; $PROBE_OBS_SIZE overrides it, so
 *                     that one process can see another spec than the learner)
 *   max_episode_steps truncates at this many steps (default 0: never)
 *   fail_step_every   every N-th step of an instance fails (after scribbling over obs)
 *   fail_reset        reset fails
 *   crash_at_step     the N-th step of the process raises SIGSEGV
 *   hang_at_step      the N-th step of the process never returns (sleeps forever)
 *   exit_at_step      the N-th step of the process calls exit(0)
 *   crash_in_create   create raises SIGSEGV
 *   overflow_at_step  the N-th step of an instance writes one float past the observation
 *   leak_mb_per_step  each step of the process allocates this many MiB, touches them and keeps
 *                     them (an env that leaks)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "moonseed_env.h"

#ifndef PROBE_ABI_VERSION
#define PROBE_ABI_VERSION MOONSEED_ENV_ABI_VERSION
#endif

struct moonseed_env {
  int obs_size, uint8_obs, unbounded, box_action, max_episode_steps, fail_step_every, fail_reset, overflow_at_step;
  int steps;
  uint64_t seed;
  float low[64], high[64];
  float action_low[2], action_high[2];
  char error[128];
};

static char create_error[128];
static long process_steps;
static long crash_at_step;
static long hang_at_step;
static long exit_at_step;
static long leak_mb_per_step;
static char* volatile leaked; /* the newest leaked block: the compiler keeps the writes */

static moonseed_env* probe_create(const char* id, const struct moonseed_env_option* options, size_t n) {
  moonseed_env env;
  size_t i;
  int crash_in_create = 0;
  if (strcmp(id, "Probe-v0") != 0) {
    snprintf(create_error, sizeof create_error, "unknown env id \"%s\"", id);
    return NULL;
  }
  memset(&env, 0, sizeof env);
  env.obs_size = 4;
  for (i = 0; i < n; ++i) {
    const char* k = options[i].key;
    const int v = (int)options[i].value;
    if (strcmp(k, "obs_size") == 0) env.obs_size = v;
    else if (strcmp(k, "uint8") == 0) env.uint8_obs = v;
    else if (strcmp(k, "unbounded") == 0) env.unbounded = v;
    else if (strcmp(k, "box_action") == 0) env.box_action = v;
    else if (strcmp(k, "max_episode_steps") == 0) env.max_episode_steps = v;
    else if (strcmp(k, "fail_step_every") == 0) env.fail_step_every = v;
    else if (strcmp(k, "fail_reset") == 0) env.fail_reset = v;
    else if (strcmp(k, "crash_at_step") == 0) crash_at_step = v;
    else if (strcmp(k, "hang_at_step") == 0) hang_at_step = v;
    else if (strcmp(k, "exit_at_step") == 0) exit_at_step = v;
    else if (strcmp(k, "crash_in_create") == 0) crash_in_create = v;
    else if (strcmp(k, "leak_mb_per_step") == 0) leak_mb_per_step = v;
    else if (strcmp(k, "overflow_at_step") == 0) env.overflow_at_step = v;
    else {
      snprintf(create_error, sizeof create_error, "unknown option \"%s\"", k);
      return NULL;
    }
  }
  if (getenv("PROBE_OBS_SIZE") != NULL) env.obs_size = atoi(getenv("PROBE_OBS_SIZE"));
  if (crash_in_create) raise(SIGSEGV);
  if (env.obs_size < 1 || env.obs_size > 64) {
    snprintf(create_error, sizeof create_error, "obs_size must be in [1, 64], got %d", env.obs_size);
    return NULL;
  }
  for (i = 0; i < 64; ++i) {
    env.low[i] = -1.f;
    env.high[i] = 1.f;
  }
  env.action_low[0] = env.action_low[1] = -1.f;
  env.action_high[0] = env.action_high[1] = 1.f;
  moonseed_env* out = malloc(sizeof env);
  if (out != NULL) *out = env;
  return out;
}

static void probe_destroy(moonseed_env* env) { free(env); }

static const char* probe_last_error(const moonseed_env* env) { return env ? env->error : create_error; }

static int probe_spec(const moonseed_env* env, struct moonseed_env_spec* out) {
  memset(out, 0, sizeof *out);
  out->observation.kind = MOONSEED_ENV_BOX;
  if (env->uint8_obs) {
    static const float low[6] = {0, 0, 0, 0, 0, 0};
    static const float high[6] = {255, 255, 255, 255, 255, 255};
    out->observation.dtype = MOONSEED_ENV_UINT8;
    out->observation.rank = 2;
    out->observation.shape[0] = 2;
    out->observation.shape[1] = 3;
    out->observation.low = low;
    out->observation.high = high;
  } else {
    out->observation.dtype = MOONSEED_ENV_FLOAT32;
    out->observation.rank = 1;
    out->observation.shape[0] = env->obs_size;
    out->observation.low = env->low;
    out->observation.high = env->high;
  }
  if (env->unbounded) out->observation.low = out->observation.high = NULL;
  if (env->box_action) {
    out->action.kind = MOONSEED_ENV_BOX;
    out->action.dtype = MOONSEED_ENV_FLOAT32;
    out->action.rank = 1;
    out->action.shape[0] = 2;
    out->action.low = env->action_low;
    out->action.high = env->action_high;
  } else {
    out->action.kind = MOONSEED_ENV_DISCRETE;
    out->action.n = 2;
  }
  out->max_episode_steps = env->max_episode_steps;
  return MOONSEED_ENV_OK;
}

static void observe(const moonseed_env* env, void* obs) {
  if (env->uint8_obs) {
    uint8_t* o = obs;
    int i;
    for (i = 0; i < 6; ++i) o[i] = (uint8_t)(env->steps + i);
  } else {
    float* o = obs;
    int i;
    o[0] = (float)env->steps / 1000.f;
    for (i = 1; i < env->obs_size; ++i) o[i] = 0.5f;
  }
}

static int probe_reset(moonseed_env* env, int has_seed, uint64_t seed, void* obs) {
  if (env->fail_reset) {
    snprintf(env->error, sizeof env->error, "reset refused on purpose");
    return MOONSEED_ENV_ERROR;
  }
  if (has_seed) env->seed = seed;
  env->steps = 0;
  observe(env, obs);
  return MOONSEED_ENV_OK;
}

static int probe_step(moonseed_env* env, const void* action, void* obs, float* reward, int* terminated,
                      int* truncated) {
  ++process_steps;
  if (crash_at_step > 0 && process_steps >= crash_at_step) raise(SIGSEGV);
  if (exit_at_step > 0 && process_steps >= exit_at_step) exit(0);
  while (hang_at_step > 0 && process_steps >= hang_at_step) sleep(1);
  if (leak_mb_per_step > 0) {
    /* Lost on purpose: each block is touched, so it is resident, and never freed. */
    const size_t bytes = (size_t)leak_mb_per_step << 20;
    char* block = malloc(bytes);
    if (block != NULL) memset(block, 1, bytes);
    leaked = block;
  }
  env->steps += 1;
  if (env->fail_step_every > 0 && env->steps % env->fail_step_every == 0) {
    memset(obs, 0xAB, env->uint8_obs ? 6 : sizeof(float) * (size_t)env->obs_size);
    snprintf(env->error, sizeof env->error, "step %d failed on purpose", env->steps);
    return MOONSEED_ENV_ERROR;
  }
  if (env->box_action) {
    float a[2];
    memcpy(a, action, sizeof a);
    *reward = a[0];
  } else {
    int32_t a;
    memcpy(&a, action, sizeof a);
    *reward = (float)a;
  }
  *terminated = 0;
  *truncated = env->max_episode_steps > 0 && env->steps >= env->max_episode_steps;
  observe(env, obs);
  if (env->overflow_at_step > 0 && env->steps == env->overflow_at_step && !env->uint8_obs) {
    float past = 1.f; /* the bug: one float after the observation's last */
    memcpy((float*)obs + env->obs_size, &past, sizeof past);
  }
  return MOONSEED_ENV_OK;
}

#ifndef PROBE_NO_STATE
static int probe_get_state(const moonseed_env* env, double* out, size_t capacity, size_t* size) {
  *size = 2;
  if (capacity >= 2) {
    out[0] = env->steps;
    out[1] = (double)env->seed;
  }
  return MOONSEED_ENV_OK;
}

static int probe_set_state(moonseed_env* env, const double* state, size_t size) {
  if (size != 2) {
    snprintf(env->error, sizeof env->error, "a Probe state has 2 values, got %zu", size);
    return MOONSEED_ENV_ERROR;
  }
  env->steps = (int)state[0];
  env->seed = (uint64_t)state[1];
  return MOONSEED_ENV_OK;
}
#define PROBE_GET_STATE probe_get_state
#define PROBE_SET_STATE probe_set_state
#else
#define PROBE_GET_STATE NULL
#define PROBE_SET_STATE NULL
#endif

static const struct moonseed_env_api probe_api = {
    PROBE_ABI_VERSION, sizeof(struct moonseed_env_api), probe_create, probe_destroy, probe_last_error,
    probe_spec, probe_reset, probe_step, PROBE_GET_STATE, PROBE_SET_STATE,
};

#ifndef PROBE_NO_ENTRY
MOONSEED_ENV_EXPORT const struct moonseed_env_api* moonseed_env_plugin(void) { return &probe_api; }
#else
/* Something else exported, so the library loads but lacks the entry point. */
MOONSEED_ENV_EXPORT const struct moonseed_env_api* moonseed_env_plugin_v0(void) { return &probe_api; }
#endif
