"""A Moonseed actor whose envs are Python: Gymnasium-style envs stepped here and streamed to a
Moonseed learner through the project's own actor loop (libmoonseed_actor.so, loaded with ctypes).

    python3 -m moonseed.actor --connect unix:RUN_DIR/learner.sock --env mypkg.mymod:make_env

or from code: moonseed.actor.serve(make_env, connect="unix:...").

The learner's Welcome says how many envs this actor runs, their seeds and the env options;
`make_env(**options)` (or `make_env()` when there are none) builds each one. Without --env the
actor runs the learner's own env.python (the factory `moonseed run` names). docs/python-actors.md.
"""
import argparse
import ctypes
import importlib
import json
import os
import signal
import sys
import threading

import numpy as np

from . import _capi
from .envset import EnvSetError, EnvVector

EXIT_CODES = {"bye": 0, "stopped": 0, "error": 1, "unreachable": 3, "refused": 4}


class ActorError(RuntimeError):
    """The actor stopped on an error it cannot retry (an env that cannot be built or reset, a spec
    the learner does not expect)."""


def load_factory(name, what="--env"):
    """The callable `module:function` names (e.g. "mypkg.mymod:make_env"); ValueError saying why not,
    starting with `what` (where the name came from)."""
    module_name, sep, attribute = name.partition(":")
    if not sep or not module_name or not attribute:
        raise ValueError("%s %r: expected MODULE:FUNCTION, e.g. mypkg.mymod:make_env" % (what, name))
    try:
        module = importlib.import_module(module_name)
    except Exception as e:
        raise ValueError("%s %s: cannot import %s: %s: %s (sys.path: %s)"
                         % (what, name, module_name, type(e).__name__, e, ":".join(sys.path))) from None
    factory = module
    for part in attribute.split("."):
        factory = getattr(factory, part, None)
        if factory is None:
            raise ValueError("%s %s: module %s has no %s" % (what, name, module_name, attribute))
    if not callable(factory):
        raise ValueError("%s %s: %s is not callable" % (what, name, attribute))
    return factory


def _bind(make_env, options):
    return (lambda: make_env(**options)) if options else make_env


class _Callbacks:
    """The open/run callbacks of one serve(): they run on the actor loop's thread."""

    def __init__(self, lib, make_env, envs, observation_space, action_space):
        self.lib, self.make_env, self.envs = lib, make_env, envs
        self.observation_space, self.action_space = observation_space, action_space
        self.vector = None
        self.views = {}
        self.keep = []
        self.failure = None
        self.c_envs = _capi.Envs(None, _capi.OPEN(self.open), _capi.RUN(self.run))

    def fail(self, actor, message):
        self.lib.moonseed_actor_set_error(actor, message.encode("utf-8", "replace"))
        return 1

    def open(self, user, actor, num_envs, welcome_json, spec):
        try:
            welcome = json.loads(welcome_json.decode("utf-8"))
            if self.envs is not None and self.envs != num_envs:
                return self.fail(actor, "this actor was started with --envs %d but the learner runs %d envs per "
                                        "actor (topology.envs_per_actor): start it with --envs %d or without --envs"
                                 % (self.envs, num_envs, num_envs))
            if self.vector is not None:
                self.vector.close()
                self.vector = None
            make_env = self.make_env
            if make_env is None:
                make_env = self._learners_factory(welcome)
            # Lua numbers are doubles: every option is a float, as with --describe's --option.
            options = {key: float(value) for key, value in (welcome.get("options") or {}).items()}
            self.vector = EnvVector(_bind(make_env, options), num_envs,
                                    self.observation_space, self.action_space)
            self.keep = []
            self.views = {}  # the spaces may differ: views of the last ones would misread
            _capi.fill_space(spec.contents.observation, self.vector.observation, self.keep)
            _capi.fill_space(spec.contents.action, self.vector.action, self.keep)
            spec.contents.max_episode_steps = self.vector.max_episode_steps
            return _capi.OK
        except BaseException as e:  # noqa: B902 - nothing may unwind through the C loop
            return self.fail(actor, str(e) if isinstance(e, EnvSetError) else "%s: %s" % (type(e).__name__, e))

    def _learners_factory(self, welcome):
        """serve(None, ...): the env.python the learner's Welcome names."""
        name = welcome.get("python") or ""
        if not name:
            raise EnvSetError("the learner's env %r is not a Python env (its experiment sets no env.python): "
                              "give this actor --env MODULE:FUNCTION, or run moonseed-actor" % welcome.get("env_id"))
        try:
            return load_factory(name, "the learner's env.python")
        except ValueError as e:
            raise EnvSetError(str(e)) from None

    def _views(self, count, ops, actions, seeds, observations, rewards, flags):
        """numpy arrays over the loop's buffers of one call. The loop passes the same buffers for a
        group step after step, and making the views costs more than a small env's step: they are
        kept per (count, addresses) and only read during a call, while the buffers are valid."""
        key = (count, ops, actions, seeds, observations, rewards, flags)
        views = self.views.get(key)
        if views is not None:
            return views
        obs_space, act_space = self.vector.observation, self.vector.action
        ops_array = np.ctypeslib.as_array((ctypes.c_uint8 * count).from_address(ops))
        obs = np.frombuffer((ctypes.c_uint8 * (count * obs_space.byte_size)).from_address(observations),
                            dtype=obs_space.numpy_dtype).reshape((count,) + obs_space.shape)
        rew = np.ctypeslib.as_array((ctypes.c_float * count).from_address(rewards))
        flg = np.ctypeslib.as_array((ctypes.c_uint8 * count).from_address(flags))
        act = None
        if actions:
            act = np.frombuffer((ctypes.c_uint8 * (count * act_space.byte_size)).from_address(actions),
                                dtype=act_space.numpy_dtype)
            if act_space.kind == "box":
                act = act.reshape((count,) + act_space.shape)
        seed_array = None
        if seeds:
            seed_array = np.ctypeslib.as_array((ctypes.c_uint64 * count).from_address(seeds))
        if len(self.views) >= 64:  # buffers that moved: forget the old ones
            self.views.clear()
        views = self.views[key] = (ops_array, act, seed_array, obs, rew, flg)
        return views

    def run(self, user, actor, begin, count, ops, actions, seeds, observations, rewards, flags):
        try:
            ops_array, act, seed_array, obs, rew, flg = self._views(count, ops, actions, seeds, observations,
                                                                    rewards, flags)
            errors = self.vector.run(begin, ops_array, act, seed_array, obs, rew, flg)
            for env, message in errors:
                self.lib.moonseed_actor_env_error(actor, env, message.encode("utf-8", "replace"))
            return _capi.OK
        except EnvSetError as e:
            return self.fail(actor, str(e))
        except (KeyboardInterrupt, SystemExit):
            self.lib.moonseed_actor_stop(actor)
            return _capi.OK
        except BaseException as e:  # noqa: B902
            return self.fail(actor, "%s: %s" % (type(e).__name__, e))


def serve(make_env, connect, envs=None, actor_id=-1, auth_token=None, reconnect_for=60.0,
          observation_space=None, action_space=None, verbose=True):
    """Runs envs built by `make_env` for the learner at `connect` ("unix:/path" or "tcp:host:port")
    (make_env None: the factory the learner's env.python names, imported here)
    until the learner says bye, the process gets SIGINT or SIGTERM, or the learner stays unreachable
    for `reconnect_for` seconds. `envs`: the env count this actor expects (None: the learner's).
    Spaces are read from the envs, or declared here (moonseed.spaces). Returns "bye", "stopped",
    "unreachable" or "refused"; raises ActorError when it cannot go on."""
    lib = _capi.load()
    callbacks = _Callbacks(lib, make_env, envs, observation_space, action_space)
    options = _capi.Options(connect.encode(), (auth_token or "").encode(), actor_id, 0.0, float(reconnect_for),
                            1 if verbose else 0)
    handle = lib.moonseed_actor_new()
    if not handle:
        raise MemoryError("moonseed_actor_new")
    result = []

    def loop():
        result.append(lib.moonseed_actor_run(handle, ctypes.byref(options), ctypes.byref(callbacks.c_envs)))

    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, lambda *_: lib.moonseed_actor_stop(handle))
    thread = threading.Thread(target=loop, name="moonseed-actor", daemon=True)
    thread.start()
    try:
        while thread.is_alive():
            try:
                thread.join(0.2)
            except KeyboardInterrupt:
                lib.moonseed_actor_stop(handle)
        code = result[0] if result else _capi.ERROR
        message = lib.moonseed_actor_error(handle).decode("utf-8", "replace")
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        if callbacks.vector is not None:
            callbacks.vector.close()
        lib.moonseed_actor_free(handle)
    if code == _capi.ERROR:
        raise ActorError(message)
    return _capi.EXIT_NAMES[code]


def _auth_token(path):
    if path:
        with open(path) as f:
            return f.readline().strip()
    return os.environ.get("MOONSEED_AUTH_TOKEN", "")


def _parse_option(text):
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError("expected NAME=NUMBER, not %r" % text)
    try:
        return key, float(value)
    except ValueError:
        raise argparse.ArgumentTypeError("%s: %r is not a number" % (key, value)) from None


def _describe(args):
    """--describe: the description on stdout, and nothing else there: whatever the env's module prints
    (from Python or from C) goes to stderr."""
    if not args.env:
        print("moonseed actor: --describe needs --env MODULE:FUNCTION", file=sys.stderr)
        return 2
    sys.stdout.flush()
    description_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        make_env = load_factory(args.env)
    except ValueError as e:
        print("moonseed actor: %s" % e, file=sys.stderr)
        return 2
    from .describe import describe
    try:
        text = describe(_bind(make_env, dict(args.option)))
    except EnvSetError as e:  # says which env and call failed, with the env's own exception
        print("moonseed actor: %s" % e, file=sys.stderr)
        return 1
    except Exception as e:
        print("moonseed actor: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        return 1
    with os.fdopen(description_fd, "w") as out:
        out.write(text)
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python3 -m moonseed.actor",
        description="Runs Python envs for a Moonseed learner (docs/python-actors.md). Exit codes: 0 the learner "
                    "said bye or SIGINT/SIGTERM, 1 an error it cannot retry, 2 usage, 3 unreachable, 4 refused.")
    parser.add_argument("--connect", help="the learner: unix:/path/to/learner.sock or tcp:HOST:PORT")
    parser.add_argument("--env", help="MODULE:FUNCTION that makes one env, e.g. mypkg.mymod:make_env "
                                      "(default: the learner's env.python)")
    parser.add_argument("--envs", type=int, help="envs this actor expects (default: as many as the learner assigns)")
    parser.add_argument("--actor-id", type=int, default=-1, help="the actor id to ask for (default: any)")
    parser.add_argument("--auth-token-file", help="the learner's auth token, first line of FILE "
                                                  "(default: $MOONSEED_AUTH_TOKEN)")
    parser.add_argument("--reconnect-for", type=float, default=60.0, help="seconds to retry a learner that went away")
    parser.add_argument("--option", type=_parse_option, action="append", default=[],
                        help="NAME=NUMBER passed to the factory (with --describe)")
    parser.add_argument("--describe", action="store_true",
                        help="print the env's spec for the learner and exit (what `moonseed run` asks)")
    parser.add_argument("--quiet", action="store_true", help="no connect/disconnect lines")
    args = parser.parse_args(argv)
    if args.describe:
        return _describe(args)
    make_env = None
    if args.env:
        try:
            make_env = load_factory(args.env)
        except ValueError as e:
            print("moonseed actor: %s" % e, file=sys.stderr)
            return 2
    if not args.connect:
        parser.error("--connect ADDRESS is required")
    try:
        exit_name = serve(make_env, args.connect, envs=args.envs, actor_id=args.actor_id,
                          auth_token=_auth_token(args.auth_token_file), reconnect_for=args.reconnect_for,
                          verbose=not args.quiet)
    except (ActorError, _capi.LibraryError) as e:
        print("moonseed actor: %s" % e, file=sys.stderr)
        return 1
    return EXIT_CODES[exit_name]


if __name__ == "__main__":
    sys.exit(main())
