#!/usr/bin/python3
"""A long run with everything at once (docs/reliability.md "Soak").

For each env (CartPole V-trace, MinAtar Breakout V-trace) it trains twice on the same number of
frames: undisturbed (the baselines: --baselines runs on consecutive seeds, the first also measuring
the frame rate the frame count is chosen from), then once under a random mix of faults, one every few seconds:

  actor_kill     SIGKILL a local actor (the run restarts it)
  actor_stop     SIGSTOP a local actor past topology.actor_timeout_s (found hung, killed), then SIGCONT
  learner_kill   SIGKILL the learner, then `moonseed run --resume RUN_DIR`
  disk_full      fill the run directory's disk (a tmpfs of its own; root only) for a few seconds
  garbage        a client that sends the actor port random bytes and a frame that claims 8 GiB
  wrong_token    `moonseed actor` with a wrong auth token
  control_flood  a control-socket client that sends requests and never reads the replies

Then it checks what a user relies on: the run ended by its own rule (stop.frames, exit 0),
nothing was lost (metrics rows continuous across resumes: frames and time never go back except
to the checkpoint a resume row names; every checkpoint loads: `moonseed eval` of the newest; the
experience log verifies, a torn tail allowed only where the learner was killed), and the final
policy's evaluation return (greedy) is near what undisturbed runs reach (at least --eval-ratio of the
lowest baseline's: one seed's return alone varies too much to stand for "an undisturbed run"). Every kind of fault is caused once (in a random order) before the mix goes on at random.

  /usr/bin/python3 tests/soak/soak.py --moonseed build/moonseed --minutes 60 --out /tmp/soak
  (the CI variant: --minutes 2 --envs cartpole --baselines 1)

Prints one line per fault and a summary table; exits 1 when a check fails. Needs the project's
build; root only for disk_full (skipped otherwise).
"""
import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

ENVS = {
    # CartPole trains ~100k frames/s here: recording it for an hour would fill any tmpfs, so only
    # MinAtar records (its uint8 frames delta-coded).
    "cartpole": {"script": "examples/cartpole_vtrace.lua", "extra": ["record.enabled=false"], "share": 0.35},
    "minatar": {"script": "examples/minatar_vtrace.lua", "extra": ["record.enabled=true", "record.delta=true"],
                "share": 0.65},
}
FAULTS = ["actor_kill", "actor_stop", "learner_kill", "disk_full", "garbage", "wrong_token", "control_flood"]
TOKEN = "soak-token-0123456789abcdef"


def not_regular(directory, names):
    """shutil.copytree's ignore: the names in `directory` that are neither files nor directories."""
    return [n for n in names if not (os.path.isfile(os.path.join(directory, n)) or
                                     os.path.isdir(os.path.join(directory, n)))]


def log(line):
    print("soak: " + line, flush=True)


def rows_of(run_dir):
    rows = []
    try:
        with open(os.path.join(run_dir, "metrics.jsonl")) as f:
            for line in f:
                line = line.strip()
                if line:
                    rows.append(json.loads(line))
    except FileNotFoundError:
        pass
    return rows


def newest_dir(runs_dir):
    dirs = [os.path.join(runs_dir, d) for d in os.listdir(runs_dir) if os.path.isdir(os.path.join(runs_dir, d))]
    return max(dirs, key=os.path.getmtime) if dirs else None


class Learner:
    """One `moonseed run` (or --resume) process, its output appended to a log file."""

    def __init__(self, args, out_path, env):
        self.out = open(out_path, "ab")
        self.proc = subprocess.Popen(args, stdout=self.out, stderr=subprocess.STDOUT, env=env,
                                     stdin=subprocess.DEVNULL)

    def wait(self, timeout):
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def kill(self):
        self.proc.kill()
        self.proc.wait()


class Soak:
    def __init__(self, opts):
        self.opts = opts
        self.rng = random.Random(opts.seed)
        self.env = dict(os.environ, MOONSEED_AUTH_TOKEN=TOKEN)
        self.root = os.geteuid() == 0
        self.failures = []
        self.summary = []

    def moonseed(self, *args, timeout=600, check=False):
        r = subprocess.run([self.opts.moonseed, *args], capture_output=True, text=True, timeout=timeout,
                           env=self.env, stdin=subprocess.DEVNULL)
        if check and r.returncode != 0:
            raise RuntimeError("moonseed %s failed (%d): %s" % (" ".join(args), r.returncode, r.stderr[-2000:]))
        return r

    def fail(self, what):
        log("CHECK FAILED: " + what)
        self.failures.append(what)

    # ---- runs -----------------------------------------------------------------------------------

    def run_args(self, spec, runs_dir, frames, seed=None):
        return [self.opts.moonseed, "run", os.path.join(ROOT, spec["script"]), "runs_dir=" + runs_dir,
                "stop.frames=%d" % frames, "stop.seconds=0", "stop.return_mean=0", "log.interval_s=1",
                "checkpoint.interval_s=5", "topology.actor_timeout_s=3",
                # The soak kills actors far more often than any env fails: that is the fault being
                # tested, not a slot to give up on (docs/reliability.md "Actors that die").
                "topology.actor_deaths_to_park=0", "topology.actor_max_backoff_s=1",
                "seed=%d" % (self.opts.seed if seed is None else seed)] + spec["extra"]

    def baseline(self, name, spec, seconds):
        """Undisturbed runs for `seconds` each; returns (frames, [eval per seed], wall of the first).

        A probe stopped by time first measures the frame rate, which sets the frames every run trains.
        Baseline k trains on seed --seed + k; the soak itself trains on --seed."""
        runs = os.path.join(self.opts.out, name, "baseline")
        os.makedirs(runs, exist_ok=True)
        probe = Learner(self.run_args(spec, runs, 10**12), os.path.join(runs, "probe.out"), self.env)
        time.sleep(max(10.0, seconds * 0.25))
        probe_dir = newest_dir(runs)
        self.moonseed("ctl", probe_dir, "stop", timeout=60)
        probe.wait(120)
        rows = [r for r in rows_of(probe_dir) if "frames" in r and "time_s" in r and r.get("event") is None]
        fps = (rows[-1]["frames"] - rows[0]["frames"]) / max(1e-9, rows[-1]["time_s"] - rows[0]["time_s"]) \
            if len(rows) >= 2 else 1000.0
        frames = max(20000, int(fps * seconds))
        shutil.rmtree(probe_dir, ignore_errors=True)
        log("%s: %.0f frames/s undisturbed; every run trains %d frames" % (name, fps, frames))
        evals, walls = [], []
        for k in range(self.opts.baselines):
            seed = self.opts.seed + k
            start = time.time()
            run = Learner(self.run_args(spec, runs, frames, seed), os.path.join(runs, "run%d.out" % k), self.env)
            code = run.wait(seconds * 10 + 300)
            run_dir = newest_dir(runs)
            if code != 0:
                self.fail("%s baseline run (seed %d) exited %s (%s)" % (name, seed, code, run_dir))
            walls.append(time.time() - start)
            evals.append(self.evaluate("%s baseline (seed %d)" % (name, seed), run_dir))
            log("%s: baseline seed %d: evaluation return %.1f" % (name, seed, evals[-1]))
        return frames, evals, walls[0]

    def evaluate(self, what, run_dir):
        r = self.moonseed("eval", run_dir, "--episodes", str(self.opts.eval_episodes), "--greedy", timeout=900)
        if r.returncode != 0:
            self.fail("%s: moonseed eval failed: %s" % (what, r.stderr[-1500:]))
            return float("nan")
        for line in r.stdout.splitlines():
            # "return: mean M, std S, min A, max B; length: mean L"
            if line.startswith("return: mean "):
                return float(line.split()[2].rstrip(","))
        self.fail("%s: no mean in moonseed eval's output:\n%s" % (what, r.stdout[-1500:]))
        return float("nan")

    # ---- faults ---------------------------------------------------------------------------------

    def actor_pids(self, run_dir):
        pids = []
        adir = os.path.join(run_dir, "actors")
        for name in os.listdir(adir) if os.path.isdir(adir) else []:
            if name.endswith(".pid"):
                try:
                    pid = int(open(os.path.join(adir, name)).read().strip())
                    os.kill(pid, 0)
                    pids.append(pid)
                except (ValueError, OSError):
                    pass
        return pids

    def address(self, run_dir, name):
        try:
            return open(os.path.join(run_dir, name)).read().strip()
        except OSError:
            return ""

    def connect(self, address):
        if address.startswith("unix:"):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(5)
            s.connect(address[5:])
            return s
        host, port = address.split(":", 1)[1].rsplit(":", 1) if address.startswith("tcp:") else address.rsplit(":", 1)
        return socket.create_connection((host, int(port)), timeout=5)

    def fault(self, kind, run_dir, state):
        """Causes one fault; returns a line saying what was done, or None when it could not be."""
        return getattr(self, "fault_" + kind)(run_dir, state)

    def some_actor(self, run_dir):
        """A running local actor's pid, chosen at random, or None."""
        pids = self.actor_pids(run_dir)
        return self.rng.choice(pids) if pids else None

    def fault_actor_kill(self, run_dir, state):
        pid = self.some_actor(run_dir)
        if pid is None:
            return None
        os.kill(pid, signal.SIGKILL)
        return "SIGKILL actor pid %d" % pid

    def fault_actor_stop(self, run_dir, state):
        pid = self.some_actor(run_dir)
        if pid is None:
            return None
        os.kill(pid, signal.SIGSTOP)
        time.sleep(4.5)  # past topology.actor_timeout_s=3: the run finds it hung and kills it
        try:
            os.kill(pid, signal.SIGCONT)
        except OSError:
            pass
        return "SIGSTOP actor pid %d for 4.5 s" % pid

    def fault_learner_kill(self, run_dir, state):
        state["learner"].kill()
        time.sleep(0.5)
        state["learner"] = Learner([self.opts.moonseed, "run", "--resume", run_dir], state["out"], self.env)
        state["kills"] += 1
        return "SIGKILL learner, then --resume"

    def fault_disk_full(self, run_dir, state):
        if not state.get("disk"):
            return None
        filler = os.path.join(state["disk"], "filler")
        try:
            with open(filler, "wb") as f:
                for size in (1 << 20, 4096, 1):
                    try:
                        while True:
                            f.write(b"\0" * size)
                            f.flush()
                    except OSError:
                        pass
        except OSError:
            pass  # full already: the run's own files filled it
        time.sleep(4)
        if os.path.exists(filler):
            os.unlink(filler)
        return "filled the run directory's disk for 4 s"

    def fault_garbage(self, run_dir, state):
        address = self.address(run_dir, "learner.address")
        if not address:
            return None
        try:
            s = self.connect(address)
            s.sendall(bytes(self.rng.getrandbits(8) for _ in range(4096)))
            s.close()
            s = self.connect(address)
            s.sendall(b"\x00\x00\x00\x00\x00\x00\x00\x40" + b"\xff" * 64)  # one segment of 2^30 words: 8 GiB
            time.sleep(1)
            s.close()
        except OSError as e:
            return "garbage client could not connect (%s)" % e
        return "sent the actor port 4 KiB of random bytes and a frame claiming 8 GiB"

    def fault_wrong_token(self, run_dir, state):
        address = self.address(run_dir, "learner.address")
        if not address:
            return None
        env = dict(self.env, MOONSEED_AUTH_TOKEN="not-" + TOKEN)
        p = subprocess.Popen([self.opts.moonseed, "actor", "--connect", address], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        time.sleep(2)
        p.kill()
        p.wait()
        return "an actor with a wrong auth token tried for 2 s"

    def fault_control_flood(self, run_dir, state):
        address = self.address(run_dir, "control.address")
        if not address:
            return None
        try:
            s = self.connect(address)
            s.setblocking(False)
            sent = 0
            deadline = time.time() + 2
            while time.time() < deadline:
                try:
                    sent += s.send(b"status\n" * 512)
                except BlockingIOError:
                    time.sleep(0.05)
            s.close()
        except OSError as e:
            return "control flood could not connect (%s)" % e
        return "a control client sent %d bytes of requests in 2 s and read nothing" % sent

    # ---- the disturbed run ----------------------------------------------------------------------

    def disturbed(self, name, spec, frames, seconds):
        runs = os.path.join(self.opts.out, name, "soak")
        os.makedirs(runs, exist_ok=True)
        state = {"kills": 0, "out": os.path.join(runs, "run.out"), "disk": None}
        if self.root:
            # The run directory on a tmpfs of its own that a fault fills; large enough for the run.
            disk = os.path.join(runs, "disk")
            os.makedirs(disk, exist_ok=True)
            if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%dm" % self.opts.disk_mb, "tmpfs", disk]).returncode == 0:
                state["disk"] = disk
                runs = disk
        counts = {k: 0 for k in FAULTS}
        # Every kind once, in a random order, then a random mix.
        first = FAULTS[:]
        self.rng.shuffle(first)
        try:
            state["learner"] = Learner(self.run_args(spec, runs, frames), state["out"], self.env)
            run_dir = None
            start = time.time()
            while run_dir is None or not os.path.exists(os.path.join(run_dir, "learner.address")):
                time.sleep(0.2)
                run_dir = newest_dir(runs) if os.listdir(runs) else None
                if run_dir is not None and os.path.basename(run_dir) == "lost+found":
                    run_dir = None
                if time.time() - start > 120:
                    self.fail("%s: the run did not start: %s" % (name, open(state["out"]).read()[-2000:]))
                    return None
            # Faults until the run ends by its rule.
            while True:
                code = state["learner"].wait(self.rng.uniform(1.5, 4.0))
                if code is not None:
                    break
                kind = first.pop() if first else self.rng.choice(FAULTS)
                # A disk still full when the run reaches its rule would cost the stop row itself
                # (metrics.jsonl cannot be written then): no disk fault in the last tenth.
                rows = rows_of(run_dir)
                if kind == "disk_full" and rows and rows[-1].get("frames", 0) >= 0.9 * frames:
                    kind = "actor_kill"
                if kind == "learner_kill" and state["kills"] >= self.opts.max_learner_kills:
                    kind = "actor_kill"
                done = self.fault(kind, run_dir, state)
                if done:
                    counts[kind] += 1
                    log("%s %6.1f s: %s" % (name, time.time() - start, done))
                if time.time() - start > seconds * 20 + 600:
                    self.fail("%s: the disturbed run did not end in %.0f s" % (name, time.time() - start))
                    state["learner"].kill()
                    return None
            wall = time.time() - start
            if code != 0:
                self.fail("%s: the disturbed run exited %d, not by its rule (see %s)" % (name, code, state["out"]))
            self.check_run(name, run_dir, frames, state["kills"], "record.enabled=true" in spec["extra"])
            result = self.evaluate(name + " soak", run_dir)
            # Keep the run beside the results once its tmpfs goes.
            if state["disk"]:
                keep = os.path.join(self.opts.out, name, "soak", "run")
                # Regular files and directories: a socket (learner.sock, control.sock) cannot be copied.
                shutil.copytree(run_dir, keep, dirs_exist_ok=True, ignore=not_regular)
            return result, counts, wall, state["kills"]
        finally:
            if state["disk"]:
                subprocess.run(["umount", "-l", state["disk"]])

    def check_run(self, name, run_dir, frames, learner_kills, recorded):
        rows = rows_of(run_dir)
        stops = [r for r in rows if r.get("event") == "stop"]
        if not stops or stops[-1].get("frames", 0) < frames:
            self.fail("%s: the run's last stop row does not reach stop.frames=%d" % (name, frames))
        resumes = [r for r in rows if r.get("event") == "resume"]
        if len(resumes) < learner_kills:
            self.fail("%s: %d learner kills but %d resume rows" % (name, learner_kills, len(resumes)))
        # Continuity: frames and time go back only at a resume row, and only to its checkpoint's counters.
        last_frames, last_time = -1, -1.0
        for r in rows:
            if r.get("event") == "resume":
                last_frames, last_time = r.get("frames", 0), r.get("time_s", 0.0)
                continue
            if "frames" in r and r["frames"] < last_frames:
                self.fail("%s: frames went back from %d to %d without a resume row" % (name, last_frames, r["frames"]))
                break
            if "time_s" in r and r["time_s"] + 1e-6 < last_time:
                self.fail("%s: time_s went back from %.3f to %.3f without a resume row" % (name, last_time, r["time_s"]))
                break
            last_frames = r.get("frames", last_frames)
            last_time = r.get("time_s", last_time)
        # The experience log: every problem a torn tail, at most one per learner kill.
        exp = os.path.join(run_dir, "experience")
        if not recorded:
            return
        if os.path.isdir(exp):
            r = self.moonseed("log", "verify", exp, timeout=900)
            problems = [l for l in r.stdout.splitlines() + r.stderr.splitlines() if "torn" in l or "problem" in l]
            torn = [l for l in problems if "torn" in l]
            if r.returncode != 0 and len(torn) > learner_kills:
                self.fail("%s: the experience log does not verify (%d torn tails for %d learner kills):\n%s" %
                          (name, len(torn), learner_kills, (r.stdout + r.stderr)[-3000:]))
        else:
            self.fail("%s: no experience log in %s" % (name, run_dir))

    # ---- all of it ------------------------------------------------------------------------------

    def main(self):
        os.makedirs(self.opts.out, exist_ok=True)
        total = self.opts.minutes * 60.0
        shares = sum(ENVS[e]["share"] for e in self.opts.envs)
        for name in self.opts.envs:
            spec = ENVS[name]
            # the probe (0.25), each baseline (1) and the slower soak (1.35)
            seconds = total * spec["share"] / shares / (1.6 + self.opts.baselines)
            frames, base_evals, base_wall = self.baseline(name, spec, seconds)
            base_eval = min(base_evals)
            soaked = self.disturbed(name, spec, frames, seconds)
            if soaked is None:
                continue
            soak_eval, counts, soak_wall, kills = soaked
            if not soak_eval >= self.opts.eval_ratio * base_eval:
                self.fail("%s: evaluation return %.1f after the soak, below %.2f of the lowest undisturbed run's %.1f" %
                          (name, soak_eval, self.opts.eval_ratio, base_eval))
            self.summary.append((name, frames, base_wall, soak_wall, base_evals, soak_eval, counts))
        log("summary")
        print("%-9s %10s %9s %9s %12s %9s  %s" % ("env", "frames", "base s", "soak s", "base evals", "soak eval",
                                                    "faults"))
        for name, frames, bw, sw, be, se, counts in self.summary:
            faults = ", ".join("%s %d" % (k, v) for k, v in counts.items() if v)
            evals = "/".join("%.1f" % e for e in be)
            print("%-9s %10d %9.0f %9.0f %12s %9.1f  %s" % (name, frames, bw, sw, evals, se, faults))
        if self.failures:
            log("%d check(s) failed" % len(self.failures))
            return 1
        log("every check passed")
        return 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--moonseed", default=os.path.join(ROOT, "build", "moonseed"))
    p.add_argument("--minutes", type=float, default=60)
    p.add_argument("--envs", default="cartpole,minatar")
    p.add_argument("--out", default="/tmp/moonseed-soak")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--eval-episodes", type=int, default=20)
    p.add_argument("--eval-ratio", type=float, default=0.7)
    p.add_argument("--baselines", type=int, default=2, help="undisturbed runs, on seeds --seed, --seed + 1, ...")
    p.add_argument("--max-learner-kills", type=int, default=6)
    p.add_argument("--disk-mb", type=int, default=2048)
    opts = p.parse_args()
    if opts.baselines < 1:
        p.error("--baselines must be at least 1")
    opts.envs = [e for e in opts.envs.split(",") if e]
    for e in opts.envs:
        if e not in ENVS:
            p.error("unknown env %s (one of %s)" % (e, ", ".join(ENVS)))
    if os.path.exists(opts.out):
        shutil.rmtree(opts.out)
    return Soak(opts).main()


if __name__ == "__main__":
    sys.exit(main())
