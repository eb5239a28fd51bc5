/* Catch: a ball falls from the top row of a grid; move the paddle on the bottom row under it.
 * A Moonseed env plugin in plain C (docs/env-plugins.md walks through this file).
 *
 *   observation  float32 box of rows x columns cells (row-major): 1 where the ball or the
 *                paddle is, 0 elsewhere
 *   action       discrete(3): 0 left, 1 stay, 2 right
 *   reward       +1 when the ball reaches the bottom row above the paddle, -1 when it misses;
 *                the episode then terminates (after rows - 1 steps)
 *   options      rows (default 10, in [3, 64]), columns (default 5, in [2, 64])
 *
 * Build: cc -std=c99 -O2 -shared -fPIC -I MOONSEED/include catch.c -o libcatch.so
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "moonseed_env.h"

struct moonseed_env {
  int rows, columns;
  int ball_row, ball_column, paddle;
  uint64_t rng; /* splitmix64 state */
  float* low;   /* the observation's bounds: 0 and 1 per cell */
  float* high;
  char error[256];
};

/* create() failures: creates never overlap (moonseed_env.h), so one buffer serves. */
static char create_error[256];

static uint64_t next_random(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static void observe(const moonseed_env* env, float* obs) {
  memset(obs, 0, sizeof(float) * (size_t)(env->rows * env->columns));
  obs[env->ball_row * env->columns + env->ball_column] = 1.f;
  obs[(env->rows - 1) * env->columns + env->paddle] = 1.f;
}

/* Reads an integer option in [low, high]; 0 and a message in create_error if it is not one. */
static int integer_option(const struct moonseed_env_option* option, int low, int high, int* out) {
  const double v = option->value;
  if (!(v >= low && v <= high) || v != (double)(int)v) {
    snprintf(create_error, sizeof create_error, "option %s must be an integer in [%d, %d], got %g", option->key,
             low, high, v);
    return 0;
  }
  *out = (int)v;
  return 1;
}

static moonseed_env* catch_create(const char* id, const struct moonseed_env_option* options, size_t num_options) {
  int rows = 10, columns = 5;
  size_t i;
  if (strcmp(id, "Catch-v0") != 0) {
    snprintf(create_error, sizeof create_error, "unknown env id \"%s\"; this plugin serves \"Catch-v0\"", id);
    return NULL;
  }
  for (i = 0; i < num_options; ++i) {
    if (strcmp(options[i].key, "rows") == 0) {
      if (!integer_option(&options[i], 3, 64, &rows)) return NULL;
    } else if (strcmp(options[i].key, "columns") == 0) {
      if (!integer_option(&options[i], 2, 64, &columns)) return NULL;
    } else {
      snprintf(create_error, sizeof create_error, "unknown option \"%s\"; Catch-v0 accepts rows and columns",
               options[i].key);
      return NULL;
    }
  }
  moonseed_env* env = calloc(1, sizeof *env);
  if (env == NULL) {
    snprintf(create_error, sizeof create_error, "out of memory");
    return NULL;
  }
  env->rows = rows;
  env->columns = columns;
  env->low = calloc((size_t)(rows * columns), sizeof(float));
  env->high = malloc(sizeof(float) * (size_t)(rows * columns));
  if (env->low == NULL || env->high == NULL) {
    free(env->low);
    free(env->high);
    free(env);
    snprintf(create_error, sizeof create_error, "out of memory");
    return NULL;
  }
  for (i = 0; i < (size_t)(rows * columns); ++i) env->high[i] = 1.f;
  env->rng = 1;
  return env;
}

static void catch_destroy(moonseed_env* env) {
  free(env->low);
  free(env->high);
  free(env);
}

static const char* catch_last_error(const moonseed_env* env) { return env == NULL ? create_error : env->error; }

static int catch_spec(const moonseed_env* env, struct moonseed_env_spec* out) {
  memset(out, 0, sizeof *out);
  out->observation.kind = MOONSEED_ENV_BOX;
  out->observation.dtype = MOONSEED_ENV_FLOAT32;
  out->observation.rank = 1;
  out->observation.shape[0] = env->rows * env->columns;
  out->observation.low = env->low;
  out->observation.high = env->high;
  out->action.kind = MOONSEED_ENV_DISCRETE;
  out->action.n = 3;
  out->max_episode_steps = 0; /* every episode ends by itself */
  return MOONSEED_ENV_OK;
}

static int catch_reset(moonseed_env* env, int has_seed, uint64_t seed, void* obs) {
  if (has_seed) env->rng = seed;
  env->ball_row = 0;
  env->ball_column = (int)(next_random(&env->rng) % (uint64_t)env->columns);
  env->paddle = (int)(next_random(&env->rng) % (uint64_t)env->columns);
  observe(env, obs);
  return MOONSEED_ENV_OK;
}

static int catch_step(moonseed_env* env, const void* action, void* obs, float* reward, int* terminated,
                      int* truncated) {
  int32_t a;
  memcpy(&a, action, sizeof a);
  if (a < 0 || a > 2) {
    snprintf(env->error, sizeof env->error, "action %d is outside [0, 3)", (int)a);
    return MOONSEED_ENV_ERROR;
  }
  env->paddle += a - 1;
  if (env->paddle < 0) env->paddle = 0;
  if (env->paddle >= env->columns) env->paddle = env->columns - 1;
  env->ball_row += 1;
  *truncated = 0;
  *terminated = env->ball_row == env->rows - 1;
  *reward = *terminated ? (env->ball_column == env->paddle ? 1.f : -1.f) : 0.f;
  observe(env, obs);
  return MOONSEED_ENV_OK;
}

/* The state: ball row, ball column, paddle, and the generator as two 32-bit halves. */
static int catch_get_state(const moonseed_env* env, double* out, size_t capacity, size_t* size) {
  *size = 5;
  if (capacity < 5) return MOONSEED_ENV_OK;
  out[0] = env->ball_row;
  out[1] = env->ball_column;
  out[2] = env->paddle;
  out[3] = (double)(env->rng >> 32);
  out[4] = (double)(env->rng & 0xFFFFFFFFull);
  return MOONSEED_ENV_OK;
}

static int catch_set_state(moonseed_env* env, const double* state, size_t size) {
  if (size != 5) {
    snprintf(env->error, sizeof env->error, "a Catch state has 5 values, got %zu", size);
    return MOONSEED_ENV_ERROR;
  }
  /* A refused state leaves the env as it was. */
  if (!(state[0] >= 0 && state[0] < env->rows - 1 && state[1] >= 0 && state[1] < env->columns &&
        state[2] >= 0 && state[2] < env->columns)) {
    snprintf(env->error, sizeof env->error, "state (%g, %g, %g) is off the %d x %d grid", state[0], state[1],
             state[2], env->rows, env->columns);
    return MOONSEED_ENV_ERROR;
  }
  env->ball_row = (int)state[0];
  env->ball_column = (int)state[1];
  env->paddle = (int)state[2];
  env->rng = ((uint64_t)state[3] << 32) | (uint64_t)state[4];
  return MOONSEED_ENV_OK;
}

static const struct moonseed_env_api catch_api = {
    MOONSEED_ENV_ABI_VERSION, sizeof(struct moonseed_env_api),
    catch_create, catch_destroy, catch_last_error, catch_spec, catch_reset, catch_step,
    catch_get_state, catch_set_state,
};

MOONSEED_ENV_EXPORT const struct moonseed_env_api* moonseed_env_plugin(void) { return &catch_api; }
