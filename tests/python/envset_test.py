"""The Python actor's env set (scripts/python/moonseed/envset.py, spaces.py) on envs written here."""
import sys
import unittest

import numpy as np

from moonseed.envset import FIRST, RESET, SKIP, STEP, TERMINATED, TRUNCATED, EnvSetError, EnvVector
from moonseed.spaces import Space, SpaceError, from_gym
from numpy_envs import Box, Discrete, NumpyCartPole


def buffers(n, shape=(4,), dtype=np.float32):
    return np.full((n,) + shape, 7, dtype=dtype), np.full(n, -7, np.float32), np.full(n, 0xFF, np.uint8)


class SpacesTest(unittest.TestCase):
    def test_reads_gym_like_spaces_and_declarations(self):
        self.assertEqual(from_gym(Discrete(3), "action_space"), Space("discrete", n=3))
        box = from_gym(Box(0, 255, (10, 10, 4), np.uint8), "observation_space")
        self.assertEqual((box.kind, box.shape, box.dtype, box.byte_size), ("box", (10, 10, 4), "uint8", 400))
        self.assertEqual(float(box.high[0, 0, 0]), 255.0)
        unbounded = from_gym({"kind": "box", "shape": [4], "dtype": "float32"}, "observation_space")
        self.assertIsNone(unbounded.low)
        self.assertEqual(from_gym(Box(-1, 1, (2,), np.float64), "action_space").dtype, "float32")

    def test_refuses_what_moonseed_cannot_carry_and_says_why(self):
        cases = [(Discrete(3, start=1), "starting at 1"), (Box(0, 1, (2,), np.int64), "int64"),
                 (object(), "neither Discrete-like"), (None, "missing"),
                 ({"kind": "box", "shape": []}, "shape"), ({"kind": "discrete", "n": 0}, "n")]
        for space, words in cases:
            with self.assertRaises(SpaceError) as caught:
                from_gym(space, "observation_space")
            self.assertIn("observation_space", str(caught.exception))
            self.assertIn(words, str(caught.exception))


class EnvVectorTest(unittest.TestCase):
    def test_resets_steps_and_skips_as_each_envs_operation_says(self):
        envs = EnvVector(NumpyCartPole, 3)
        self.assertEqual((len(envs), envs.observation.shape, envs.action.n), (3, (4,), 2))
        obs, rewards, flags = buffers(3)
        errors = envs.run(0, [RESET] * 3, None, np.array([11, 12, 13], np.uint64), obs, rewards, flags)
        self.assertEqual(errors, [])
        self.assertEqual(list(flags), [FIRST] * 3)
        np.testing.assert_array_equal(obs[1], NumpyCartPole().reset(seed=12)[0])
        before = obs.copy()
        rewards, flags = np.full(3, -7, np.float32), np.full(3, 0xFF, np.uint8)
        envs.run(0, [STEP, SKIP, STEP], np.array([1, 1, 0], np.int32), None, obs, rewards, flags)
        lone = NumpyCartPole()
        lone.reset(seed=11)
        np.testing.assert_array_equal(obs[0], lone.step(1)[0])
        self.assertEqual((rewards[0], flags[0]), (1.0, 0))
        self.assertEqual((rewards[1], flags[1]), (-7.0, 0xFF))
        np.testing.assert_array_equal(obs[1], before[1])
        self.assertFalse(np.array_equal(obs[2], before[2]))
        np.testing.assert_array_equal(obs[1], NumpyCartPole().reset(seed=12)[0])

    def test_a_call_on_a_subrange_writes_its_own_rows_from_zero(self):
        envs = EnvVector(NumpyCartPole, 4)
        obs, rewards, flags = buffers(2)
        envs.run(2, [RESET, RESET], None, np.array([5, 6], np.uint64), obs, rewards, flags)
        np.testing.assert_array_equal(obs[1], NumpyCartPole().reset(seed=6)[0])

    def test_episodes_end_terminated_or_truncated(self):
        envs = EnvVector(NumpyCartPole, 1)
        obs, rewards, flags = buffers(1)
        envs.run(0, [RESET], None, np.array([3], np.uint64), obs, rewards, flags)
        steps = 0
        while True:
            envs.run(0, [STEP], np.array([1], np.int32), None, obs, rewards, flags)
            steps += 1
            if flags[0]:
                break
        self.assertEqual(flags[0], TERMINATED)  # always pushing right drops the pole
        self.assertLess(steps, 100)

    def test_a_failing_step_ends_only_that_episode_and_keeps_the_last_observation(self):
        made = []

        def make():
            made.append(NumpyCartPole(fail_at_step=2 if len(made) == 1 else None))
            return made[-1]

        envs = EnvVector(make, 2)
        obs, rewards, flags = buffers(2)
        envs.run(0, [RESET, RESET], None, np.array([1, 2], np.uint64), obs, rewards, flags)
        envs.run(0, [STEP, STEP], np.array([0, 0], np.int32), None, obs, rewards, flags)
        last_good = obs[1].copy()
        errors = envs.run(0, [STEP, STEP], np.array([0, 0], np.int32), None, obs, rewards, flags)
        self.assertEqual(errors, [(1, "RuntimeError: the cart fell off the table")])
        self.assertEqual((flags[1], rewards[1]), (TRUNCATED, 0.0))
        np.testing.assert_array_equal(obs[1], last_good)
        self.assertEqual((flags[0], rewards[0]), (0, 1.0))

    def test_observations_and_rewards_moonseed_cannot_carry_are_step_errors(self):
        class Bad(NumpyCartPole):
            mode = None

            def step(self, action):
                obs, r, te, tr, info = super().step(action)
                if Bad.mode == "nan":
                    obs[0] = np.nan
                elif Bad.mode == "shape":
                    obs = obs[:3]
                elif Bad.mode == "reward":
                    r = float("inf")
                return obs, r, te, tr, info

        envs = EnvVector(Bad, 1)
        obs, rewards, flags = buffers(1)
        envs.run(0, [RESET], None, None, obs, rewards, flags)
        for mode, words in (("nan", "not finite"), ("shape", "shape (3,)"), ("reward", "reward that is not finite")):
            Bad.mode = mode
            errors = envs.run(0, [STEP], np.array([0], np.int32), None, obs, rewards, flags)
            self.assertEqual(len(errors), 1, mode)
            self.assertIn(words, errors[0][1])
            self.assertTrue(np.all(np.isfinite(obs)))

    def test_a_failing_reset_or_factory_raises_with_the_env_and_the_reason(self):
        class NoReset(NumpyCartPole):
            def reset(self, seed=None, options=None):
                raise OSError("no display")

        envs = EnvVector(NoReset, 2)
        obs, rewards, flags = buffers(2)
        with self.assertRaises(EnvSetError) as caught:
            envs.run(0, [RESET, RESET], None, None, obs, rewards, flags)
        self.assertEqual(str(caught.exception), "env 0: reset failed: OSError: no display")

        def broken():
            raise ImportError("no module named mujoco_py")

        with self.assertRaises(EnvSetError) as caught:
            EnvVector(broken, 1)
        self.assertIn("making env 0 failed: ImportError", str(caught.exception))

    def test_envs_of_different_spaces_are_refused(self):
        made = []

        def make():
            env = NumpyCartPole()
            if made:
                env.action_space = Discrete(3)
            made.append(env)
            return env

        with self.assertRaises(EnvSetError) as caught:
            EnvVector(make, 2)
        self.assertIn("env 1 has spaces", str(caught.exception))


if __name__ == "__main__":
    sys.exit(unittest.main())
