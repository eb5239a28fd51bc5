"""Envs for build/bench/actor_bench (docs/performance.md "Python actors"): their spaces are those of
Moonseed's CartPole-v1, so the bench's learner welcomes C++ and Python actors alike."""
import math

import numpy as np

HIGH = np.array([4.8, np.inf, 24 * math.pi / 360 * 2, np.inf], np.float32)


class Space:
    def __init__(self, **fields):
        self.__dict__.update(fields)


class CartPole:
    """Gymnasium's CartPole-v1 dynamics, one env, numpy and Python floats."""

    observation_space = Space(shape=(4,), dtype=np.float32, low=-HIGH, high=HIGH)
    action_space = Space(n=2)
    spec = Space(max_episode_steps=500)

    def __init__(self):
        self.rng = np.random.default_rng()
        self.state = (0.0, 0.0, 0.0, 0.0)
        self.steps = 0

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.state = tuple(self.rng.uniform(-0.05, 0.05, size=4))
        self.steps = 0
        return np.array(self.state, np.float32), {}

    def step(self, action):
        x, x_dot, theta, theta_dot = self.state
        force = 10.0 if action == 1 else -10.0
        cos, sin = math.cos(theta), math.sin(theta)
        temp = (force + 0.05 * theta_dot * theta_dot * sin) / 1.1
        theta_acc = (9.8 * sin - cos * temp) / (0.5 * (4.0 / 3.0 - 0.1 * cos * cos / 1.1))
        x_acc = temp - 0.05 * theta_acc * cos / 1.1
        self.state = (x + 0.02 * x_dot, x_dot + 0.02 * x_acc, theta + 0.02 * theta_dot, theta_dot + 0.02 * theta_acc)
        self.steps += 1
        terminated = abs(self.state[0]) > 2.4 or abs(self.state[2]) > 12 * 2 * math.pi / 360
        return np.array(self.state, np.float32), 1.0, terminated, self.steps >= 500, {}


class Idle:
    """Does nothing: what is left is the binding and the Python loop."""

    observation_space = CartPole.observation_space
    action_space = CartPole.action_space
    spec = CartPole.spec
    obs = np.zeros(4, np.float32)

    def reset(self, seed=None, options=None):
        return self.obs, {}

    def step(self, action):
        return self.obs, 0.0, False, False, {}


def cartpole():
    return CartPole()


def idle():
    return Idle()
