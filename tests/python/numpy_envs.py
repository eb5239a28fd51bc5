"""Envs written in Python for the tests of Python actors: a numpy CartPole (Gymnasium's CartPole-v1
dynamics, with Moonseed's CartPole-v1 spaces so a learner of that id welcomes it) and faulty ones."""
import math

import numpy as np


class Discrete:
    def __init__(self, n, start=0):
        self.n, self.start = n, start


class Box:
    def __init__(self, low, high, shape, dtype=np.float32):
        self.low, self.high = np.broadcast_to(low, shape), np.broadcast_to(high, shape)
        self.shape, self.dtype = shape, np.dtype(dtype)


class NumpyCartPole:
    """Gymnasium's CartPole-v1 dynamics in numpy (Euler, 0.02 s, 500 steps)."""

    observation_space = Box(-np.inf, np.inf, (4,))
    action_space = Discrete(2)
    spec = None

    def __init__(self, fail_at_step=None):
        self.rng = np.random.default_rng()
        self.state = None
        self.steps = 0
        self.fail_at_step = fail_at_step
        self.total_steps = 0

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.state = self.rng.uniform(-0.05, 0.05, size=4)
        self.steps = 0
        return self.state.astype(np.float32), {}

    def step(self, action):
        self.total_steps += 1
        if self.total_steps == self.fail_at_step:
            raise RuntimeError("the cart fell off the table")
        x, x_dot, theta, theta_dot = self.state
        force = 10.0 if action == 1 else -10.0
        cos, sin = math.cos(theta), math.sin(theta)
        temp = (force + 0.05 * theta_dot ** 2 * sin) / 1.1
        theta_acc = (9.8 * sin - cos * temp) / (0.5 * (4.0 / 3.0 - 0.1 * cos ** 2 / 1.1))
        x_acc = temp - 0.05 * theta_acc * cos / 1.1
        self.state = np.array([x + 0.02 * x_dot, x_dot + 0.02 * x_acc, theta + 0.02 * theta_dot,
                               theta_dot + 0.02 * theta_acc])
        self.steps += 1
        terminated = bool(abs(self.state[0]) > 2.4 or abs(self.state[2]) > 12 * 2 * math.pi / 360)
        return self.state.astype(np.float32), 1.0, terminated, self.steps >= 500, {}


class Spec:
    def __init__(self, max_episode_steps):
        self.max_episode_steps = max_episode_steps


HIGH = np.array([4.8, np.inf, 24 * math.pi / 360 * 2, np.inf], np.float32)


class MoonseedCartPole(NumpyCartPole):
    """The numpy CartPole with the spaces and limit of Moonseed's CartPole-v1."""

    observation_space = Box(-HIGH, HIGH, (4,))
    spec = Spec(500)


def cartpole(fail_at_step=None, fail_reset=0):
    """A CartPole-v1 for a learner of that id; `fail_at_step`: its step of that number (counted over
    its life) raises; `fail_reset`: every reset raises. Options arrive as floats, whether from the
    learner's Welcome or from --describe's --option: anything else is a bug this catches."""
    for name, value in (("fail_at_step", fail_at_step), ("fail_reset", fail_reset)):
        if value not in (None, 0) and not isinstance(value, float):
            raise TypeError("option %s arrived as %s, not float" % (name, type(value).__name__))
    env = MoonseedCartPole(fail_at_step=None if fail_at_step is None else int(fail_at_step))
    if fail_reset:
        def reset(seed=None, options=None):
            raise OSError("the simulator is not installed")
        env.reset = reset
    return env


def logged_cartpole():
    """A CartPole whose factory appends a line to $MOONSEED_TEST_FACTORY_LOG each time it runs:
    "describe" in the learner's description child (moonseed.actor --describe), "actor" in an
    actor. A run must describe its env once."""
    import os
    import sys
    with open(os.environ["MOONSEED_TEST_FACTORY_LOG"], "a") as log:
        log.write(("describe" if "--describe" in sys.argv else "actor") + "\n")
    return cartpole()


def five_observations():
    """Spaces that differ from CartPole-v1's: a learner of that id must refuse this actor."""
    env = MoonseedCartPole()
    env.observation_space = Box(-1, 1, (5,))
    return env


def chatty_cartpole():
    """A CartPole whose factory prints to stdout, from Python and below it (file descriptor 1): the
    learner's description of it must not be corrupted."""
    import os
    import sys
    print("chatty_cartpole: making an env")
    sys.stdout.flush()
    os.write(1, b"chatty_cartpole: written to fd 1\n")
    return cartpole()


def crashing():
    """The interpreter dies of SIGSEGV while the factory runs (a C extension that crashes)."""
    import os
    import signal
    os.kill(os.getpid(), signal.SIGSEGV)


def sleepy():
    """A factory that takes a minute (an env loading large assets, or one stuck in a loop)."""
    import time
    time.sleep(60)
    return cartpole()
