/* moonseed_actor.h: Moonseed's actor loop for envs stepped by the caller, as a C API in the shared
 * library libmoonseed_actor.so. The Python actor (scripts/python/moonseed/actor.py) loads it with
 * ctypes, so the wire format is defined once, in rpc/, and a Python actor behaves on the wire
 * exactly as `moonseed-actor` does: the same handshake, groups, autoreset, boundary config and
 * reward shaping (docs/python-actors.md).
 *
 * The caller gives callbacks that build and step its envs; moonseed_actor_run() connects, says
 * Hello, calls open() with the learner's Welcome, then run() once per group and step, until the
 * learner says bye, moonseed_actor_stop() is called, or the learner stays unreachable. The
 * callbacks run on the thread that called moonseed_actor_run().
 *
 * Pure C; the spaces are those of the plugin ABI (include/moonseed_env.h).
 */
#ifndef MOONSEED_ACTOR_H_
#define MOONSEED_ACTOR_H_

#include <stddef.h>
#include <stdint.h>

#include "moonseed_env.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MOONSEED_ACTOR_API_VERSION 1

/* What moonseed_actor_run() returns. */
#define MOONSEED_ACTOR_BYE 0         /* the learner said bye: the run is over */
#define MOONSEED_ACTOR_STOPPED 1     /* moonseed_actor_stop() */
#define MOONSEED_ACTOR_ERROR 2       /* moonseed_actor_error() says why */
#define MOONSEED_ACTOR_UNREACHABLE 3 /* no learner within reconnect_for_s */
#define MOONSEED_ACTOR_REFUSED 4     /* the learner refused the Hello */

/* Operations of a run() call, one per env (envs/env_set.h). */
#define MOONSEED_ACTOR_STEP 0  /* apply the env's action; write observation, reward, flags */
#define MOONSEED_ACTOR_RESET 1 /* start an episode; write observation, reward 0, flags FIRST */
#define MOONSEED_ACTOR_SKIP 2  /* leave the env and its outputs alone */

/* Flag bits a run() call writes. */
#define MOONSEED_ACTOR_FIRST 1
#define MOONSEED_ACTOR_TERMINATED 2
#define MOONSEED_ACTOR_TRUNCATED 4

typedef struct moonseed_actor moonseed_actor;

struct moonseed_actor_envs {
  void* user;
  /* Builds `num_envs` envs for the learner's Welcome, dropping any built before, and describes
   * them in *spec (its low/high arrays must stay valid until the next open() or the end of the
   * run). `welcome_json`: {"run_id", "actor_id", "env_id", "python" (env.python or ""), "options": {NAME: number},
   * "num_envs", "seed"}. Returns MOONSEED_ENV_OK, or fails after moonseed_actor_set_error():
   * the run then ends with MOONSEED_ACTOR_ERROR and that message. */
  int (*open)(void* user, moonseed_actor* actor, uint32_t num_envs, const char* welcome_json,
              struct moonseed_env_spec* spec);
  /* One call on envs [begin, begin + count): ops[i] says what to do with env begin + i.
   * `actions`: count actions (int32 index, or the action box's float32 values), read for STEP;
   * `seeds`: NULL (resets continue the envs' generators) or count seeds; `observations`,
   * `rewards`, `flags`: count of each, written as the ops say. A step that fails: leave that
   * env's observation alone, write reward 0 and flags TRUNCATED, and call
   * moonseed_actor_env_error(); the env is reset at its next turn. Returns MOONSEED_ENV_OK, or
   * fails (a reset that failed) after moonseed_actor_set_error(): the run ends with
   * MOONSEED_ACTOR_ERROR. */
  int (*run)(void* user, moonseed_actor* actor, uint32_t begin, uint32_t count, const uint8_t* ops,
             const void* actions, const uint64_t* seeds, void* observations, float* rewards, uint8_t* flags);
};

struct moonseed_actor_options {
  const char* address;      /* "unix:/path" or "tcp:host:port" */
  const char* auth_token;   /* NULL or "" on Unix sockets */
  int32_t actor_id;         /* -1: the learner assigns one */
  double connect_timeout_s; /* <= 0: 5 */
  double reconnect_for_s;   /* when the learner goes away, retry this long; < 0: 60 */
  int verbose;              /* one line per connect and disconnect on stderr */
};

/* MOONSEED_ACTOR_API_VERSION of the library. */
uint32_t moonseed_actor_api_version(void);

moonseed_actor* moonseed_actor_new(void);
void moonseed_actor_free(moonseed_actor* actor);

/* Runs the actor (see the top of this file). One run at a time per moonseed_actor. */
int moonseed_actor_run(moonseed_actor* actor, const struct moonseed_actor_options* options,
                       const struct moonseed_actor_envs* envs);

/* From any thread, at any time: the run returns MOONSEED_ACTOR_STOPPED within about 0.2 s. */
void moonseed_actor_stop(moonseed_actor* actor);

/* From a callback: why it fails (copied). */
void moonseed_actor_set_error(moonseed_actor* actor, const char* message);
/* From run(): env `env` (its index in the actor) failed its step, saying `message` (copied). The
 * learner's operator is told. */
void moonseed_actor_env_error(moonseed_actor* actor, uint32_t env, const char* message);

/* The text the learner reads from `python3 -m moonseed.actor --describe` (envs/describe.h): the spec
 * and the first observation after reset(seed 0), `spec.observation` bytes. Writes it to `out` when
 * it fits in `capacity` bytes and sets *size to its length (ask with capacity 0 first). Returns
 * MOONSEED_ENV_OK, or MOONSEED_ENV_ERROR with the reason in `out` (a spec Moonseed cannot carry). */
int moonseed_actor_describe(const struct moonseed_env_spec* spec, const void* first_observation, char* out,
                            size_t capacity, size_t* size);

/* The message of the last run that ended with MOONSEED_ACTOR_ERROR ("" otherwise). Valid until
 * the next call on `actor`. */
const char* moonseed_actor_error(const moonseed_actor* actor);

#ifdef __cplusplus
}
#endif

#endif /* MOONSEED_ACTOR_H_ */
