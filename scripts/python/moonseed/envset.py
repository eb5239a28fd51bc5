"""The envs of one Python actor, stepped one group at a time as the actor loop asks
(envs/env_set.h): each env of a call is stepped with its action, reset (seeded when the call
carries seeds), or left alone. Observations, rewards and flags are written into the caller's numpy
arrays, so the actor's C++ loop sends them without another copy.

Gymnasium semantics: `reset(seed=...) -> (obs, info)`, `step(action) -> (obs, reward, terminated,
truncated, info)`. A step that raises, or returns an observation or reward Moonseed cannot carry
(wrong shape, NaN), ends that env's episode: its observation stays the last good one, its flags say
truncated, and the error goes back to the loop, which tells the learner. A reset that fails raises
EnvSetError: without a first observation the env cannot go on.
"""
import math

import numpy as np

from .spaces import from_gym

STEP, RESET, SKIP = 0, 1, 2            # envs::EnvOp
FIRST, TERMINATED, TRUNCATED = 1, 2, 4  # envs::StepFlag


class EnvSetError(RuntimeError):
    pass


def _describe_error(e):
    return "%s: %s" % (type(e).__name__, e)


class EnvVector:
    """`num_envs` envs made by calling `make_env()`. The spaces are read from the first env's
    `observation_space` / `action_space`, unless declared (a Space or a dict, see spaces.py); every
    env must have the same ones."""

    def __init__(self, make_env, num_envs, observation_space=None, action_space=None):
        if num_envs < 1:
            raise EnvSetError("an actor needs at least one env, not %d" % num_envs)
        self.envs = []
        for i in range(num_envs):
            try:
                self.envs.append(make_env())
            except Exception as e:
                raise EnvSetError("making env %d failed: %s" % (i, _describe_error(e))) from e
        first = self.envs[0]
        self.observation = from_gym(observation_space if observation_space is not None
                                    else getattr(first, "observation_space", None), "observation_space")
        self.action = from_gym(action_space if action_space is not None
                               else getattr(first, "action_space", None), "action_space")
        if self.observation.kind != "box":
            raise EnvSetError("observation_space: Moonseed observes boxes (float32 or uint8), not %s"
                              % self.observation.describe())
        if self.action.kind == "box" and self.action.dtype != "float32":
            raise EnvSetError("action_space: a box of actions must be float32, not %s" % self.action.dtype)
        if observation_space is None and action_space is None:
            for i, env in enumerate(self.envs[1:], 1):
                obs = from_gym(getattr(env, "observation_space", None), "observation_space")
                act = from_gym(getattr(env, "action_space", None), "action_space")
                if obs != self.observation or act != self.action:
                    raise EnvSetError("env %d has spaces %s / %s, env 0 has %s / %s" % (
                        i, obs.describe(), act.describe(), self.observation.describe(), self.action.describe()))
        self.max_episode_steps = int(getattr(getattr(first, "spec", None), "max_episode_steps", None) or 0)
        self._obs_dtype = self.observation.numpy_dtype
        self._obs_shape = self.observation.shape

    def __len__(self):
        return len(self.envs)

    def close(self):
        for env in self.envs:
            close = getattr(env, "close", None)
            if close is not None:
                try:
                    close()
                except Exception:
                    pass

    def _observation(self, obs, i):
        array = np.asarray(obs)
        if array.shape != self._obs_shape:
            if array.size != int(np.prod(self._obs_shape)):
                raise EnvSetError("env %d returned an observation of shape %s; its observation_space says %s"
                                  % (i, array.shape, self._obs_shape))
            array = array.reshape(self._obs_shape)
        if self._obs_dtype == np.float32:
            array = array.astype(np.float32, copy=False)
            if not np.all(np.isfinite(array)):
                raise EnvSetError("env %d returned an observation that is not finite" % i)
        elif array.dtype != np.uint8:
            if np.any((array < 0) | (array > 255)) or np.any(array != np.floor(array)):
                raise EnvSetError("env %d returned uint8 observation values outside 0..255 or not whole" % i)
            array = array.astype(np.uint8)
        return array

    def _action(self, actions, k):
        if self.action.kind == "discrete":
            return int(actions[k])
        return actions[k].copy()

    def run(self, begin, ops, actions, seeds, observations, rewards, flags):
        """One call on envs [begin, begin + len(ops)). `actions`: int32 [count] or float32 [count, *shape];
        `seeds`: None or uint64 [count]; `observations` [count, *shape], `rewards` float32 [count] and
        `flags` uint8 [count] are written. Returns [(env index, message)] for the steps that failed."""
        errors = []
        ops = ops.tolist() if isinstance(ops, np.ndarray) else list(ops)
        discrete = self.action.kind == "discrete"
        action_list = actions.tolist() if discrete and actions is not None else None
        # Fast path: an observation that already is an array of the right shape is copied straight
        # in; float32 rows are checked for NaN and infinities once, for the whole call, and a bad
        # row gets back the observation it had (kept here) and becomes that env's error.
        check_finite = self._obs_dtype == np.float32
        before = observations.copy() if check_finite else None
        stepped = []
        for k, op in enumerate(ops):
            if op == SKIP:
                continue
            i = begin + k
            env = self.envs[i]
            if op == RESET:
                try:
                    result = env.reset(seed=None if seeds is None else int(seeds[k]))
                    obs = result[0] if isinstance(result, tuple) else result
                    observations[k] = self._observation(obs, i)
                except Exception as e:
                    raise EnvSetError("env %d: reset failed: %s" % (i, _describe_error(e))) from e
                rewards[k] = 0.0
                flags[k] = FIRST
                continue
            try:
                obs, reward, terminated, truncated, _ = env.step(
                    action_list[k] if discrete else actions[k].copy())
                reward = float(reward)
                if not math.isfinite(reward):
                    raise EnvSetError("env %d returned a reward that is not finite (%r)" % (i, reward))
                if type(obs) is np.ndarray and obs.shape == self._obs_shape and (check_finite or obs.dtype == np.uint8):
                    observations[k] = obs
                else:
                    observations[k] = self._observation(obs, i)
            except Exception as e:
                if check_finite:
                    observations[k] = before[k]
                rewards[k] = 0.0
                flags[k] = TRUNCATED
                errors.append((i, e.args[0] if isinstance(e, EnvSetError) else _describe_error(e)))
                continue
            rewards[k] = reward
            flags[k] = (TERMINATED if terminated else 0) | (TRUNCATED if truncated else 0)
            stepped.append(k)
        if check_finite and stepped:
            rows = observations[stepped].reshape(len(stepped), -1)
            bad = ~np.isfinite(rows).all(axis=1)
            for j in np.flatnonzero(bad).tolist():
                k = stepped[j]
                observations[k] = before[k]
                rewards[k] = 0.0
                flags[k] = TRUNCATED
                errors.append((begin + k, "env %d returned an observation that is not finite" % (begin + k)))
        return errors
