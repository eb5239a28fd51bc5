"""Catch, an env written in Python for Moonseed's Python actors (docs/python-actors.md).

A ball falls from the top row of a `rows` x `columns` grid, one row per step; the paddle on the
bottom row moves left, stays or moves right (actions 0, 1, 2). Reward +1 for a catch, -1 for a
miss, when the ball reaches the bottom row (the episode ends there). The observation is the grid,
flattened: 1 at the ball and at the paddle, 0 elsewhere. The same env as the C plugin example
(examples/plugin_env/catch.c), so the two can be compared.

Only numpy: any object with Gymnasium's reset/step methods and observation_space/action_space
works; Gymnasium itself is not needed.
"""
import numpy as np


class Box:
    """A Gymnasium-like box space: shape, dtype, low, high."""

    def __init__(self, low, high, shape, dtype=np.float32):
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)
        self.low, self.high = np.full(shape, low, dtype), np.full(shape, high, dtype)


class Discrete:
    """A Gymnasium-like discrete space: actions 0 .. n-1."""

    def __init__(self, n):
        self.n = n


class Catch:
    def __init__(self, rows=10, columns=5):
        self.rows, self.columns = int(rows), int(columns)
        if self.rows < 3 or self.columns < 2:
            raise ValueError("Catch needs rows >= 3 and columns >= 2, got %d x %d" % (self.rows, self.columns))
        self.observation_space = Box(0.0, 1.0, (self.rows * self.columns,))
        self.action_space = Discrete(3)
        self.rng = np.random.default_rng()

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.ball_row = 0
        self.ball_column = int(self.rng.integers(self.columns))
        self.paddle = int(self.rng.integers(self.columns))
        return self._observation(), {}

    def step(self, action):
        self.paddle = min(max(self.paddle + int(action) - 1, 0), self.columns - 1)
        self.ball_row += 1
        terminated = self.ball_row == self.rows - 1
        reward = (1.0 if self.ball_column == self.paddle else -1.0) if terminated else 0.0
        return self._observation(), reward, terminated, False, {}

    def _observation(self):
        grid = np.zeros((self.rows, self.columns), np.float32)
        grid[self.ball_row, self.ball_column] = 1.0
        grid[self.rows - 1, self.paddle] = 1.0
        return grid.reshape(-1)


def make_env(rows=10, columns=5):
    """What env.python names: Moonseed calls it once per env, with env.options as keyword
    arguments (numbers arrive as floats)."""
    return Catch(rows, columns)
