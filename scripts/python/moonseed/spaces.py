"""Observation and action spaces as Moonseed sees them (envs/spec.h), read from Gymnasium-like
space objects or declared by hand.

A space is a `Space`: kind "discrete" (n choices, an int32 index) or "box" (a dtype, a shape and
per-element bounds). Moonseed's observations are float32 or uint8 boxes; actions are discrete or
float32 boxes. Anything else is refused with a message that says what was found.
"""
import numpy as np

DTYPES = {"float32": np.float32, "uint8": np.uint8}
MAX_RANK = 8


class SpaceError(ValueError):
    """A space Moonseed cannot carry, with the reason."""


class Space:
    def __init__(self, kind, n=0, shape=(), dtype="float32", low=None, high=None):
        if kind not in ("discrete", "box"):
            raise SpaceError("kind must be \"discrete\" or \"box\", not %r" % (kind,))
        self.kind = kind
        if kind == "discrete":
            n = int(n)
            if n < 1 or n > 2 ** 31 - 1:
                raise SpaceError("a discrete space needs 1 <= n < 2^31, not %d" % n)
            self.n, self.shape, self.dtype, self.low, self.high = n, (), "int32", None, None
            return
        if dtype not in DTYPES:
            raise SpaceError("dtype %r is not one Moonseed carries (float32 or uint8)" % (dtype,))
        shape = tuple(int(d) for d in shape)
        if not shape or len(shape) > MAX_RANK or any(d < 1 for d in shape):
            raise SpaceError("a box needs a shape of 1 to %d positive sizes, not %r" % (MAX_RANK, shape))
        self.n, self.shape, self.dtype = 0, shape, dtype
        self.low = _bounds(low, shape, "low")
        self.high = _bounds(high, shape, "high")
        if self.low is not None and self.high is not None and np.any(self.low > self.high):
            raise SpaceError("a box's low exceeds its high")

    @property
    def numel(self):
        return 1 if self.kind == "discrete" else int(np.prod(self.shape))

    @property
    def numpy_dtype(self):
        return np.int32 if self.kind == "discrete" else DTYPES[self.dtype]

    @property
    def byte_size(self):
        return self.numel * np.dtype(self.numpy_dtype).itemsize

    def describe(self):
        if self.kind == "discrete":
            return "discrete(%d)" % self.n
        return "box %s[%s]" % ("f32" if self.dtype == "float32" else "u8", ",".join(str(d) for d in self.shape))

    def __eq__(self, other):
        if not isinstance(other, Space) or (self.kind, self.n, self.shape, self.dtype) != (
                other.kind, other.n, other.shape, other.dtype):
            return False
        return _same(self.low, other.low) and _same(self.high, other.high)

    def __repr__(self):
        return "Space(%s)" % self.describe()


def _bounds(values, shape, name):
    """float32 bounds of `shape`, or None when every element is unbounded."""
    if values is None:
        return None
    array = np.broadcast_to(np.asarray(values, dtype=np.float64), shape).astype(np.float32)
    if np.any(np.isnan(array)):
        raise SpaceError("a box's %s has NaN" % name)
    if np.all(np.isinf(array)):
        return None
    return np.ascontiguousarray(array)


def _same(a, b):
    if a is None or b is None:
        return a is None and b is None
    return a.shape == b.shape and bool(np.array_equal(a, b))


def from_gym(space, what):
    """The Space of a Gymnasium-like space object (Discrete: `.n`; Box: `.shape`, `.dtype`, `.low`,
    `.high`), or of a declaration: a Space, or a dict such as {"kind": "discrete", "n": 2} or
    {"kind": "box", "shape": [4], "dtype": "float32", "low": -1, "high": 1}. `what` names it in
    errors ("observation_space")."""
    try:
        if isinstance(space, Space):
            return space
        if isinstance(space, dict):
            return Space(**space)
        if space is None:
            raise SpaceError("it is missing: give the env an %s or declare one" % what)
        kind = type(space).__name__
        if hasattr(space, "n") and not hasattr(space, "low"):
            start = int(getattr(space, "start", 0))
            if start != 0:
                raise SpaceError("a Discrete space starting at %d (Moonseed's actions are 0..n-1)" % start)
            return Space("discrete", n=int(space.n))
        if hasattr(space, "shape") and hasattr(space, "low") and hasattr(space, "high"):
            dtype = np.dtype(getattr(space, "dtype", np.float32)).name
            if dtype == "float64":
                dtype = "float32"  # carried as float32, as Moonseed's envs are
            return Space("box", shape=space.shape, dtype=dtype, low=space.low, high=space.high)
        raise SpaceError("%s is neither Discrete-like (.n) nor Box-like (.shape, .low, .high)" % kind)
    except SpaceError as e:
        raise SpaceError("%s: %s" % (what, e)) from None
    except (TypeError, ValueError) as e:
        raise SpaceError("%s: %s" % (what, e)) from None
