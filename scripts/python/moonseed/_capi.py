"""ctypes binding of libmoonseed_actor.so (actor_api/moonseed_actor.h), the project's own actor
loop behind a small C API, so the wire format is defined once, in rpc/.

The library is found at $MOONSEED_ACTOR_LIBRARY, else beside the package in a build directory
(BUILD/python/moonseed -> BUILD/libmoonseed_actor.so)."""
import ctypes
import os

import numpy as np

API_VERSION = 1
MAX_RANK = 8
OK = 0

BYE, STOPPED, ERROR, UNREACHABLE, REFUSED = 0, 1, 2, 3, 4
EXIT_NAMES = {BYE: "bye", STOPPED: "stopped", ERROR: "error", UNREACHABLE: "unreachable", REFUSED: "refused"}

DISCRETE, BOX = 0, 1
FLOAT32, UINT8 = 0, 1


class Space(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int32), ("dtype", ctypes.c_int32), ("n", ctypes.c_int64),
                ("rank", ctypes.c_int32), ("shape", ctypes.c_int64 * MAX_RANK),
                ("low", ctypes.POINTER(ctypes.c_float)), ("high", ctypes.POINTER(ctypes.c_float))]


class Spec(ctypes.Structure):
    _fields_ = [("observation", Space), ("action", Space), ("max_episode_steps", ctypes.c_int32)]


OPEN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_char_p,
                        ctypes.POINTER(Spec))
RUN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint32,
                       ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                       ctypes.c_void_p)


class Envs(ctypes.Structure):
    _fields_ = [("user", ctypes.c_void_p), ("open", OPEN), ("run", RUN)]


class Options(ctypes.Structure):
    _fields_ = [("address", ctypes.c_char_p), ("auth_token", ctypes.c_char_p), ("actor_id", ctypes.c_int32),
                ("connect_timeout_s", ctypes.c_double), ("reconnect_for_s", ctypes.c_double),
                ("verbose", ctypes.c_int)]


class LibraryError(RuntimeError):
    pass


def library_path():
    path = os.environ.get("MOONSEED_ACTOR_LIBRARY")
    if path:
        return path
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.normpath(os.path.join(here, os.pardir, os.pardir, "libmoonseed_actor.so"))


_library = None


def load():
    """The loaded library, its functions typed; LibraryError saying where it looked."""
    global _library
    if _library is not None:
        return _library
    path = library_path()
    if not os.path.exists(path):
        raise LibraryError("libmoonseed_actor.so not found at %s: put BUILD/python on PYTHONPATH (the build "
                           "directory holds the library beside it) or set MOONSEED_ACTOR_LIBRARY" % path)
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise LibraryError("cannot load %s: %s" % (path, e)) from None
    lib.moonseed_actor_api_version.restype = ctypes.c_uint32
    version = lib.moonseed_actor_api_version()
    if version != API_VERSION:
        raise LibraryError("%s has C API version %d; this package speaks %d: use the package of the same build"
                           % (path, version, API_VERSION))
    lib.moonseed_actor_new.restype = ctypes.c_void_p
    lib.moonseed_actor_free.argtypes = [ctypes.c_void_p]
    lib.moonseed_actor_run.argtypes = [ctypes.c_void_p, ctypes.POINTER(Options), ctypes.POINTER(Envs)]
    lib.moonseed_actor_run.restype = ctypes.c_int
    lib.moonseed_actor_stop.argtypes = [ctypes.c_void_p]
    lib.moonseed_actor_set_error.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    lib.moonseed_actor_env_error.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_char_p]
    lib.moonseed_actor_error.argtypes = [ctypes.c_void_p]
    lib.moonseed_actor_error.restype = ctypes.c_char_p
    _library = lib
    return lib


def fill_space(c_space, space, keep):
    """Fills a C space from a moonseed.spaces.Space; `keep` holds the bound arrays alive."""
    if space.kind == "discrete":
        c_space.kind, c_space.n = DISCRETE, space.n
        return
    c_space.kind = BOX
    c_space.dtype = FLOAT32 if space.dtype == "float32" else UINT8
    c_space.rank = len(space.shape)
    for i, d in enumerate(space.shape):
        c_space.shape[i] = d
    low, high = space.low, space.high
    if low is None and high is None:
        c_space.low = c_space.high = None
        return
    # Moonseed's bounds are both or neither: an unbounded side is infinite.
    if low is None:
        low = np.full(space.shape, -np.inf, np.float32)
    if high is None:
        high = np.full(space.shape, np.inf, np.float32)
    for name, bound in (("low", low), ("high", high)):
        array = np.ascontiguousarray(bound, dtype=np.float32)
        keep.append(array)
        setattr(c_space, name, array.ctypes.data_as(ctypes.POINTER(ctypes.c_float)))
