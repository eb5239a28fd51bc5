/* moonseed_env.h: the C interface of a Moonseed environment plugin (ABI version 1).
 *
 * A plugin is a shared library (libmy_env.so) that exports one function,
 *
 *     const struct moonseed_env_api* moonseed_env_plugin(void);
 *
 * returning a table of function pointers that lives as long as the library is loaded (a
 * static const table is the usual way). An experiment names the library and an env id:
 *
 *     env = { plugin = "path/to/libmy_env.so", id = "MyEnv-v0", options = { size = 5 } }
 *
 * Each actor process dlopen()s the library once and creates one instance per env it runs.
 * The learner never loads the library itself: it learns the spec from a child process
 * (`moonseed-actor describe-env`), so a plugin that crashes cannot take the learner down.
 * The guide, with a worked example: docs/env-plugins.md.
 *
 * This header is pure C (C99; it also compiles as C++) and depends on <stddef.h> and
 * <stdint.h> only. Rules every plugin follows:
 *
 * Versions. `abi_version` must be MOONSEED_ENV_ABI_VERSION and `struct_size`
 * sizeof(struct moonseed_env_api) as this header defines them; the engine refuses a plugin
 * built against another ABI version, naming both. A later ABI version only appends fields.
 *
 * Memory. The engine owns everything it passes in: the id and option strings and arrays are
 * valid only during the call (copy what you keep); `obs`, `action`, `reward`, `terminated`,
 * `truncated` and state buffers are the engine's, of the sizes stated below. The plugin owns
 * everything it hands out: the `low`/`high` arrays of a spec stay valid until destroy() of
 * that instance, and a last_error() string until the next call on that instance (for
 * last_error(NULL): until the next create()).
 *
 * Threads. Calls on one instance never overlap. The engine creates and destroys instances
 * from one thread at a time, but may call different instances from different threads, so
 * keep mutable state in the instance, not in globals (a global that create() sets for
 * last_error(NULL) is fine: creates never overlap).
 *
 * Failures. A function that returns int returns MOONSEED_ENV_OK (0) on success; anything
 * else is a failure, and last_error(instance) must then say why, in one line of text. A
 * failing call must leave the instance fit for destroy() and, after a failed step(), for
 * reset(). A failed step() ends that env's episode (the engine sends it as truncated and
 * tells the learner's operator the message); a failed reset() stops the actor, which is
 * restarted. Never call exit() or abort() for a recoverable error: report it instead.
 *
 * Observations and actions. An observation is `numel` values of the observation space's
 * dtype, row-major in its shape (a discrete observation space is not supported). An action
 * is one int32_t index in [0, n) for a discrete action space, or `numel` float values for a
 * box action space (dtype MOONSEED_ENV_FLOAT32 only).
 */
#ifndef MOONSEED_ENV_H_
#define MOONSEED_ENV_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MOONSEED_ENV_ABI_VERSION 1

/* Boxes have at most this many dimensions. */
#define MOONSEED_ENV_MAX_RANK 8

/* What a function returning int returns on success; anything else is a failure. */
#define MOONSEED_ENV_OK 0
#define MOONSEED_ENV_ERROR 1

/* Space kinds (struct moonseed_env_space.kind). */
#define MOONSEED_ENV_DISCRETE 0
#define MOONSEED_ENV_BOX 1

/* Box element types (struct moonseed_env_space.dtype). */
#define MOONSEED_ENV_FLOAT32 0
#define MOONSEED_ENV_UINT8 1

/* Marks the entry point for export from a library built with -fvisibility=hidden. */
#if defined(__GNUC__)
#define MOONSEED_ENV_EXPORT __attribute__((visibility("default")))
#else
#define MOONSEED_ENV_EXPORT
#endif

/* An observation or action space.
 * Discrete: kind = MOONSEED_ENV_DISCRETE, n >= 1 choices; dtype, rank, shape, low, high unused.
 * Box: kind = MOONSEED_ENV_BOX, dtype, rank in [1, MOONSEED_ENV_MAX_RANK], shape[0..rank-1]
 *   each >= 1; low and high are NULL (unbounded) or arrays of numel floats (numel = the
 *   product of the shape), both or neither; n unused. */
struct moonseed_env_space {
  int32_t kind;
  int32_t dtype;
  int64_t n;
  int32_t rank;
  int64_t shape[MOONSEED_ENV_MAX_RANK];
  const float* low;
  const float* high;
};

struct moonseed_env_spec {
  struct moonseed_env_space observation; /* a box */
  struct moonseed_env_space action;      /* discrete, or a float32 box */
  /* The episode limit the env applies itself (it reports truncated when it hits it), for the
   * engine's records: 0 = none. */
  int32_t max_episode_steps;
};

/* One named numeric option: env.options = { size = 5 } arrives as {"size", 5.0}. */
struct moonseed_env_option {
  const char* key;
  double value;
};

/* An instance, opaque to the engine: define struct moonseed_env in the plugin. */
typedef struct moonseed_env moonseed_env;

struct moonseed_env_api {
  uint32_t abi_version; /* MOONSEED_ENV_ABI_VERSION */
  uint32_t struct_size; /* sizeof(struct moonseed_env_api) */

  /* A new instance of env `id` with these options, or NULL (then last_error(NULL) says why).
   * Refuse an id you do not serve and every option you do not know or whose value is out of
   * range, naming it: unknown options are an error, never silently ignored. */
  moonseed_env* (*create)(const char* id, const struct moonseed_env_option* options, size_t num_options);

  /* Frees the instance and everything it handed out. Never fails. */
  void (*destroy)(moonseed_env* env);

  /* The message of the instance's last failed call, or for env == NULL of the last failed
   * create(). Never NULL (return "" if there is none). */
  const char* (*last_error)(const moonseed_env* env);

  /* Fills `out` with the instance's spec. It must be the same for every instance made with
   * the same id and options, and never change during an instance's life. */
  int (*spec)(const moonseed_env* env, struct moonseed_env_spec* out);

  /* Starts an episode and writes its first observation to `obs`. With has_seed != 0, seeds
   * the env's generator with `seed` first; otherwise the generator continues. */
  int (*reset)(moonseed_env* env, int has_seed, uint64_t seed, void* obs);

  /* Applies `action`, writes the next observation to `obs`, the reward, and whether the
   * episode ended in a terminal state (*terminated = 1) or was cut, e.g. by a time limit
   * (*truncated = 1). After either the engine calls reset() before the next step(). */
  int (*step)(moonseed_env* env, const void* action, void* obs, float* reward, int* terminated,
              int* truncated);

  /* Optional (both NULL, or both set): the complete state as doubles, such that
   * set_state(get_state()) on an instance with the same id and options continues identically.
   * get_state sets *size to the state's length and writes the values only when it is <=
   * capacity (the engine first asks with capacity 0). set_state refuses a wrong size. */
  int (*get_state)(const moonseed_env* env, double* out, size_t capacity, size_t* size);
  int (*set_state)(moonseed_env* env, const double* state, size_t size);
};

/* The one symbol a plugin exports. */
MOONSEED_ENV_EXPORT const struct moonseed_env_api* moonseed_env_plugin(void);

/* Its type, for dlsym(). */
typedef const struct moonseed_env_api* (*moonseed_env_plugin_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* MOONSEED_ENV_H_ */
