#!/usr/bin/python3
"""Writes the MinAtar reference trajectories the C++ tests replay (tests/envs/minatar/data/).

The trajectories are the behaviour of the `minatar` Python package, version 1.0.15 (commit
f674e15 of github.com/kenjyoung/MinAtar), played through the same steps its Gymnasium wrapper
takes (`minatar.gym.BaseEnv`: the action set of -v0 or -v1, `reset(seed)` seeding the package's
`Environment`). The package is not part of Moonseed and is not needed to run the tests; it is
needed only to write the data again:

    git clone https://github.com/kenjyoung/MinAtar /tmp/minatar-ref
    git -C /tmp/minatar-ref checkout f674e15
    /usr/bin/python3 tests/envs/minatar/make_reference_trajectories.py /tmp/minatar-ref

Debian's python3 with python3-numpy is enough (matplotlib is not needed).

To reach the late phases of each game (Breakout's refill, Seaquest's surfacing, SpaceInvaders'
second wave, Asterix's ramps), the actions come from small policies that look ahead: they copy the
game (its generator included, so the copy sees exactly the future the real game will have) and
avoid actions after which every tried continuation dies. The policies only choose actions; the
file records the actions and what the package answered, and the C++ test replays the actions.

File format, one line per record (text, '#' starts a comment):
    env ID STICKY RAMPING        a new env: id, sticky_action_prob, difficulty_ramping (0/1)
    reset SEED CELLS             reset(seed=SEED) ('-' = no seed); CELLS is the observation
    step ACTION REWARD TERMINAL CELLS
CELLS lists the observation's cells that changed since the previous observation (all set cells
after a reset are changes from zero), as flat indices (row * 10 + column) * C + channel in the
package's [10, 10, C] layout, three hex digits each, concatenated ('.' when none changed).
"""
import copy
import os
import sys

import numpy as np

GAMES = {
    "asterix": "Asterix",
    "breakout": "Breakout",
    "freeway": "Freeway",
    "seaquest": "Seaquest",
    "space_invaders": "SpaceInvaders",
}
FULL = ["n", "l", "u", "r", "d", "f"]


class Reference:
    """The package's Environment behind the Gymnasium wrapper's action mapping and seeding."""

    def __init__(self, minatar, game, version, sticky, ramping):
        self.game = minatar.Environment(game, sticky_action_prob=sticky,
                                        difficulty_ramping=bool(ramping))
        self.actions = (self.game.minimal_action_set() if version == 1
                        else list(range(self.game.num_actions())))
        self.id = "MinAtar/%s-v%d" % (GAMES[game], version)

    def reset(self, seed):
        if seed is not None:
            if seed < 2**32:
                self.game.seed(seed)
            else:
                # Moonseed's rule for seeds of more than 32 bits (numpy's RandomState(int)
                # refuses them): RandomState([low word, high word]).
                self.game.random = np.random.RandomState([seed & 0xFFFFFFFF, seed >> 32])
                self.game.env.random = self.game.random
        self.game.reset()
        return self.game.state()

    def step(self, action):
        return self.game.act(self.actions[action])

    def full_action(self, name):
        """The index in this env's action set of a named action, or None."""
        full = FULL.index(name)
        return self.actions.index(full) if full in self.actions else None


def cells(previous, current):
    changed = np.flatnonzero(previous.reshape(-1) != current.reshape(-1))
    return "".join("%03x" % i for i in changed) or "."


def survives(ref, action, rng, horizon, tries):
    """True if after `action` some random continuation of `horizon` steps stays alive."""
    for _ in range(tries):
        sim = copy.deepcopy(ref)
        _, done = sim.step(action)
        if done:
            continue
        alive = True
        for _ in range(horizon):
            _, done = sim.step(int(rng.randint(len(ref.actions))))
            if done:
                alive = False
                break
        if alive:
            return True
    return False


def look_ahead(preferred, horizon=8, tries=6):
    """A policy: the first action in `preferred(ref, rng)` order that survives, else any."""
    def policy(ref, rng):
        order = [a for a in preferred(ref, rng) if a is not None]
        order += [a for a in rng.permutation(len(ref.actions)) if a not in order]
        for a in order:
            if survives(ref, int(a), rng, horizon, tries):
                return int(a)
        return int(order[0])
    return policy


def best_of_rollouts(prefer, horizon, tries):
    """A policy: the action whose rollouts (continued by `prefer`, else at random) live longest
    and score most."""
    def policy(ref, rng):
        best, best_score = 0, None
        for a in range(len(ref.actions)):
            score = 0
            for _ in range(tries):
                sim = copy.deepcopy(ref)
                reward, done = sim.step(a)
                alive = 0
                while not done and alive < horizon:
                    choice = prefer(sim, rng)[0] if rng.rand() < 0.8 else None
                    b = int(rng.randint(len(ref.actions))) if choice is None else choice
                    r, done = sim.step(b)
                    reward += r
                    alive += 1
                score += alive + 4 * reward
            if best_score is None or score > best_score:
                best, best_score = a, score
        return best
    return policy


def random_policy(ref, rng):
    return int(rng.randint(len(ref.actions)))


def toward(ref, here, there, left="l", right="r"):
    if there < here:
        return ref.full_action(left)
    if there > here:
        return ref.full_action(right)
    return ref.full_action("n")


def breakout_prefer(ref, rng):
    g = ref.game.env
    return [toward(ref, g.pos, g.ball_x)]


def freeway_up(ref, rng):
    return ref.full_action("u") if rng.rand() < 0.8 else random_policy(ref, rng)


def asterix_prefer(ref, rng):
    g = ref.game.env
    golds = [e for e in g.entities if e is not None and e[3]]
    if golds:
        target = min(golds, key=lambda e: abs(e[1] - g.player_y) + abs(e[0] - g.player_x))
        if target[1] != g.player_y:
            return [toward(ref, g.player_y, target[1], "u", "d")]
        return [toward(ref, g.player_x, target[0])]
    return [random_policy(ref, rng)]


def seaquest_prefer(ref, rng):
    g = ref.game.env
    up = ref.full_action("u")
    if g.diver_count >= 6 or (g.diver_count >= 1 and g.oxygen < 30 + 10 * g.sub_y):
        return [up]
    if g.sub_y == 0:
        return [ref.full_action("d")]
    if g.divers and g.diver_count < 6:
        d = min(g.divers, key=lambda v: abs(v[1] - g.sub_y) + abs(v[0] - g.sub_x))
        if d[1] != g.sub_y:
            move = toward(ref, g.sub_y, d[1], "u", "d")
            if move == up and g.sub_y == 1:
                move = ref.full_action("n")
            return [move]
        return [toward(ref, g.sub_x, d[0])]
    return [ref.full_action("f"), random_policy(ref, rng)]


def seaquest_deep(ref, rng):
    """Stays below the surface: oxygen runs out."""
    g = ref.game.env
    if g.sub_y <= 2:
        return [ref.full_action("d")]
    return [ref.full_action("f"), ref.full_action("n"), ref.full_action("l"),
            ref.full_action("r")]


def seaquest_surface_empty(ref, rng):
    """Dives one row and comes back up with no diver: the game ends."""
    g = ref.game.env
    return [ref.full_action("d") if g.surface else ref.full_action("u")]


def invaders_prefer(ref, rng):
    g = ref.game.env
    column = g.alien_map[:, g.pos]
    if g.shot_timer == 0 and (column.sum() > 0 or rng.rand() < 0.5):
        return [ref.full_action("f")]
    columns = [c for c in range(10) if g.alien_map[:, c].sum() > 0]
    if not columns:
        return [ref.full_action("n")]
    target = min(columns, key=lambda c: abs(c - g.pos))
    return [toward(ref, g.pos, target), ref.full_action("n")]


def plain(prefer):
    def policy(ref, rng):
        return prefer(ref, rng)[0]
    return policy


def probe(game):
    g = game.env
    return {
        "bricks": np.count_nonzero(getattr(g, "brick_map", np.zeros(1))),
        "divers": getattr(g, "diver_count", None),
        "oxygen": getattr(g, "oxygen", None),
        "ramp": getattr(g, "ramp_index", None),
        "aliens": np.count_nonzero(getattr(g, "alien_map", np.zeros(1))),
    }


EVENTS = {
    "breakout": {
        "brick_refill": lambda g, b, r, d: np.count_nonzero(g.brick_map) == 30 and b["bricks"] < 30,
    },
    "freeway": {
        "time_limit_2500": lambda g, b, r, d: d and g.terminate_timer < 0,
        "crossing": lambda g, b, r, d: r > 0,
    },
    "asterix": {
        "gold": lambda g, b, r, d: r > 0,
        "ramp_3": lambda g, b, r, d: g.ramp_index >= 3,
        "all_rows_full": lambda g, b, r, d: all(e is not None for e in g.entities),
    },
    "seaquest": {
        "diver_picked": lambda g, b, r, d: g.diver_count > b["divers"],
        "surface_with_divers": lambda g, b, r, d: g.oxygen == 200 and b["oxygen"] < 200 and not d,
        "surface_with_six": lambda g, b, r, d: b["divers"] == 6 and g.diver_count < 6,
        "surface_without_divers": lambda g, b, r, d: d and g.sub_y == 0 and b["divers"] == 0,
        "out_of_oxygen": lambda g, b, r, d: d and b["oxygen"] <= 0,
        "enemy_shot": lambda g, b, r, d: r > 0 and g.sub_y > 0,
        "ramp_2": lambda g, b, r, d: g.ramp_index >= 2,
    },
    "space_invaders": {
        "new_wave": lambda g, b, r, d: b["aliens"] < 24 and np.count_nonzero(g.alien_map) == 24
                                        and r > 0,
        "second_wave_ramped": lambda g, b, r, d: g.ramp_index >= 1,
        "alien_shot": lambda g, b, r, d: r > 0,
    },
}

# Episode plans per game: (version, sticky, ramping, [(seed, policy, max_steps), ...]); the
# resets of one plan share one env, so a reset without a seed continues its generator and the
# sticky action carries over, as in the package.
LONG = 3000


def plans(game):
    ahead = {
        "breakout": look_ahead(breakout_prefer, horizon=6, tries=4),
        "asterix": look_ahead(asterix_prefer, horizon=6, tries=6),
        "seaquest": look_ahead(seaquest_prefer, horizon=8, tries=8),
        "space_invaders": best_of_rollouts(invaders_prefer, horizon=14, tries=3),
    }
    if game == "freeway":
        return [
            (1, 0.1, 1, [(1, freeway_up, LONG), (None, random_policy, 300)]),
            (0, 0.0, 0, [(9, random_policy, LONG)]),
        ]
    if game == "seaquest":
        return [
            (1, 0.1, 1, [(1, ahead["seaquest"], LONG), (None, random_policy, 200)]),
            (0, 0.0, 0, [(5, ahead["seaquest"], LONG)]),
            (0, 0.1, 1, [(2**32 + 7, look_ahead(seaquest_deep), LONG),
                         (3, plain(seaquest_surface_empty), 50)]),
        ]
    return [
        (1, 0.1, 1, [(1, ahead[game], LONG), (None, random_policy, 300)]),
        (0, 0.0, 0, [(5, ahead[game], LONG), (2**32 + 7, random_policy, 300)]),
        (0, 0.1, 0, [(11, random_policy, 400)]),
        (1, 0.0, 1, [(12, ahead[game], 1500)]),
    ]


def write_game(minatar, game, out_dir):
    seen = {name: 0 for name in EVENTS.get(game, {})}
    lines = ["# MinAtar %s from the minatar package 1.0.15 (commit f674e15), numpy %s;"
             % (GAMES[game], np.__version__),
             "# written by tests/envs/minatar/make_reference_trajectories.py (format there)."]
    policy_rng = np.random.RandomState(2024)
    for version, sticky, ramping, resets in plans(game):
        ref = Reference(minatar, game, version, sticky, ramping)
        lines.append("env %s %s %d" % (ref.id, repr(sticky), ramping))
        channels = ref.game.state_shape()[2]
        for seed, policy, max_steps in resets:
            obs = ref.reset(seed).astype(bool)
            lines.append("reset %s %s" % ("-" if seed is None else seed,
                                          cells(np.zeros_like(obs), obs)))
            for t in range(max_steps):
                before = probe(ref.game)
                action = policy(ref, policy_rng)
                reward, done = ref.step(action)
                after = ref.game.state().astype(bool)
                assert after.shape == (10, 10, channels)
                lines.append("step %d %s %d %s" % (action, repr(float(reward)), int(done),
                                                   cells(obs, after)))
                for name, event in EVENTS.get(game, {}).items():
                    if event(ref.game.env, before, reward, done):
                        seen[name] += 1
                obs = after
                if done:
                    break
            print("  %s seed %s: %d steps%s" % (ref.id, seed, t + 1, " (ended)" if done else ""),
                  flush=True)
    missing = [name for name, count in seen.items() if count == 0]
    lines.insert(2, "# covers: " + ", ".join("%s x%d" % (n, c) for n, c in sorted(seen.items())))
    path = os.path.join(out_dir, game + ".txt")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("%s: %s (%d lines) covers %s" % (game, path, len(lines), seen), flush=True)
    if missing:
        raise SystemExit("%s: the plans never reached %s" % (game, ", ".join(missing)))


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    sys.path.insert(0, sys.argv[1])
    import minatar  # noqa: E402  (the reference checkout given on the command line)
    out_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
    os.makedirs(out_dir, exist_ok=True)
    for game in (sys.argv[2:] or sorted(GAMES)):
        write_game(minatar, game, out_dir)


if __name__ == "__main__":
    main()
