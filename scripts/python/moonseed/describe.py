"""`python3 -m moonseed.actor --env ... --describe`: what the learner reads to learn a Python env's
spec before it builds the model (docs/own-envs-design.md). One env is made and reset with seed 0;
the text comes from the C library, so it has one definition (envs/describe.h)."""
import ctypes

import numpy as np

from . import _capi
from .envset import RESET, EnvVector


def describe(make_env):
    lib = _capi.load()
    lib.moonseed_actor_describe.argtypes = [ctypes.POINTER(_capi.Spec), ctypes.c_void_p, ctypes.c_char_p,
                                            ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)]
    lib.moonseed_actor_describe.restype = ctypes.c_int
    vector = EnvVector(make_env, 1)
    try:
        obs = np.zeros((1,) + vector.observation.shape, vector.observation.numpy_dtype)
        vector.run(0, [RESET], None, np.zeros(1, np.uint64), obs, np.zeros(1, np.float32), np.zeros(1, np.uint8))
        spec, keep = _capi.Spec(), []
        _capi.fill_space(spec.observation, vector.observation, keep)
        _capi.fill_space(spec.action, vector.action, keep)
        spec.max_episode_steps = vector.max_episode_steps
        size = ctypes.c_size_t(0)
        lib.moonseed_actor_describe(ctypes.byref(spec), obs.ctypes.data, None, 0, ctypes.byref(size))
        out = ctypes.create_string_buffer(size.value + 1)
        status = lib.moonseed_actor_describe(ctypes.byref(spec), obs.ctypes.data, out, size.value + 1,
                                             ctypes.byref(size))
        text = out.value.decode("utf-8", "replace")
        if status != _capi.OK:
            raise ValueError(text)
        return text
    finally:
        vector.close()
