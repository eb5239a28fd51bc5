"""The Python actor's per-call cost alone, in one process: moonseed.actor's run callback on envs that do
nothing (bench/python_envs.py:Idle), with its numpy views of the loop's buffers kept across calls
(what the actor does) against made afresh each call (the baseline, measured in the same run).

    /usr/bin/python3 bench/python_callback_bench.py [BUILD_DIR=build] [group sizes=4,8,32]

Prints microseconds per env step and the ratio to the baseline (docs/performance.md "Python actors")."""
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def measure(callbacks, args, fresh, calls=2000, repeats=5):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            if fresh:
                callbacks.views = {}
            callbacks.run(*args)
        best = min(best, (time.perf_counter() - start) / calls)
    return best


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, os.pardir, "build")
    sizes = [int(s) for s in (sys.argv[2] if len(sys.argv) > 2 else "4,8,32").split(",")]
    sys.path[:0] = [os.path.join(build, "python"), HERE]
    import moonseed.actor as actor
    import python_envs
    from moonseed.envset import EnvVector

    class Lib:  # the two calls run() may make into the C library, as no-ops
        def moonseed_actor_env_error(self, *args):
            pass

        def moonseed_actor_set_error(self, *args):
            raise RuntimeError(args)

    print("%6s %14s %14s %8s" % ("group", "fresh us/env", "kept us/env", "kept/fresh"))
    for n in sizes:
        callbacks = actor._Callbacks.__new__(actor._Callbacks)
        callbacks.lib, callbacks.views = Lib(), {}
        callbacks.vector = EnvVector(python_envs.Idle, n)
        ops, actions = np.zeros(n, np.uint8), np.zeros(n, np.int32)
        obs, rewards, flags = np.zeros((n, 4), np.float32), np.zeros(n, np.float32), np.zeros(n, np.uint8)
        args = (None, None, 0, n, ops.ctypes.data, actions.ctypes.data, 0, obs.ctypes.data, rewards.ctypes.data,
                flags.ctypes.data)
        fresh = measure(callbacks, args, True) / n * 1e6
        kept = measure(callbacks, args, False) / n * 1e6
        print("%6d %14.2f %14.2f %8.2f" % (n, fresh, kept, kept / fresh))


if __name__ == "__main__":
    main()
