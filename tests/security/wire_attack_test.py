#!/usr/bin/python3
"""Hostile clients against a real learner, over real TCP sockets (docs/security.md,
"Tests of hostile input").

Starts `moonseed run` on the CartPole example with two actor slots: one real local
actor that trains, one free slot for the attackers. Then, from this process:
  (a) a valid Hello and the same StepBatch twice,
  (b) StepBatches for envs the connection does not own, wrong counts and sizes,
      NaN observations and infinite rewards,
  (c) an 8-byte header claiming 64 MiB, before and after Hello,
  (d) idle connections and half-sent Hellos (more than the 64 waiting allowed),
      and an admitted connection that leaves a StepBatch half sent,
  (f) random bytes and mutated valid frames for a bounded count,
  (e) wrong tokens repeated from one address, then the right token from it.
Asserts: the learner lives throughout and exits 0 on SIGTERM; `frames` and
`optimizer_steps` in metrics.jsonl grow during and after the attack; the
learner's VmRSS stays under baseline + 300 MB and its descriptors come back near
the baseline; every connection is closed by the learner, and in all but (f)
with a Bye whose reason says why.

Frames are encoded and decoded with the `capnp` tool (Cap'n Proto's own text
format, from rpc/moonseed.capnp); the replies' frame kind and a Bye's reason are
read here directly, which is what the thousands of connections of (f) need.

Usage: wire_attack_test.py MOONSEED_BINARY SOURCE_DIR [CAPNP_TOOL]
"""
import json
import os
import random
import re
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

MOONSEED, SOURCE = sys.argv[1], sys.argv[2]
CAPNP = sys.argv[3] if len(sys.argv) > 3 else "capnp"
SCHEMA = os.path.join(SOURCE, "rpc", "moonseed.capnp")
EXAMPLE = os.path.join(SOURCE, "examples", "cartpole_vtrace.lua")
TOKEN = "attack-test-token"

# Frame union members (rpc/moonseed.capnp).
KINDS = ["hello", "welcome", "stepBatch", "actionBatch", "configUpdate", "bye", "actorNotice"]
RSS_BOUND_KB = 300 * 1024

# Each kind of attacker connects from its own loopback address: wrong tokens are
# throttled per address, and the real local actor (127.0.0.1) must not share one
# with a guesser.
HONEST_SOURCE = "127.0.0.1"   # right token: (a) (b) (c) (d)'s admitted connection
GUESSER_SOURCE = "127.0.0.2"  # (e)
NOISE_SOURCE = "127.0.0.3"    # (f) random bytes and mutated Hellos (a flipped token is a wrong one)
MUTANT_SOURCE = "127.0.0.4"   # (f) a valid Hello, then a mutated StepBatch
IDLE_SOURCE = "127.0.0.5"     # (d)


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


# --- frames -------------------------------------------------------------------

def capnp_encode(text):
    run = subprocess.run([CAPNP, "encode", SCHEMA, "Frame"], input=text.encode(), capture_output=True)
    check(run.returncode == 0, "capnp encode failed on %s: %s" % (text, run.stderr.decode()))
    return run.stdout


def capnp_decode(frame):
    run = subprocess.run([CAPNP, "decode", "--short", SCHEMA, "Frame"], input=frame, capture_output=True)
    return run.stdout.decode(errors="replace").strip() if run.returncode == 0 else "<undecodable>"


def data_literal(raw):
    return '0x"%s"' % raw.hex()


def hello(token=TOKEN, actor_id=-1):
    return capnp_encode('(hello = (protocolVersion = 2, actorId = %d, host = "attacker", pid = 1, authToken = "%s"))'
                        % (actor_id, token))


def step_batch(seq, env_begin, count, observations, rewards, flags):
    fields = ["seq = %d" % seq, "envBegin = %d" % env_begin, "count = %d" % count]
    # capnp's text format has no empty data literal: an empty field is left out (null).
    if observations:
        fields.append("observations = " + data_literal(observations))
    if rewards:
        fields.append("rewards = [%s]" % ", ".join(rewards))
    if flags:
        fields.append("flags = " + data_literal(bytes(flags)))
    return capnp_encode("(stepBatch = (%s))" % ", ".join(fields))


def frame_length(buf):
    """Bytes of the first whole frame in buf (stream framing), or None while incomplete."""
    if len(buf) < 4:
        return None
    segments = struct.unpack_from("<I", buf, 0)[0] + 1
    header = 4 + 4 * segments
    header += header % 8
    if len(buf) < header:
        return None
    words = sum(struct.unpack_from("<%dI" % segments, buf, 4))
    total = header + 8 * words
    return total if len(buf) >= total else None


def split_frames(buf):
    frames = []
    while True:
        n = frame_length(buf)
        if n is None:
            return frames
        frames.append(buf[:n])
        buf = buf[n:]


def word(segment, index):
    return struct.unpack_from("<Q", segment, 8 * index)[0]


def signed30(value):
    return value - (1 << 30) if value & (1 << 29) else value


def frame_kind_and_reason(frame):
    """(kind, Bye reason or None) of a one-segment frame the learner sent."""
    segments = struct.unpack_from("<I", frame, 0)[0] + 1
    if segments != 1:
        text = capnp_decode(frame)
        kind = text[1:].split(" ", 1)[0]
        match = re.search(r'reason = "((?:[^"\\]|\\.)*)"', text)
        return kind, match.group(1) if match else None
    segment = frame[8:]
    root = word(segment, 0)
    frame_struct = 1 + signed30((root >> 2) & 0x3FFFFFFF)
    data_words = (root >> 32) & 0xFFFF
    which = struct.unpack_from("<H", segment, 8 * frame_struct)[0]
    kind = KINDS[which] if which < len(KINDS) else "unknown"
    if kind != "bye":
        return kind, None
    at = frame_struct + data_words  # the Frame's pointer section: the Bye
    bye = word(segment, at)
    bye_struct = at + 1 + signed30((bye >> 2) & 0x3FFFFFFF)
    bye_pointers = bye_struct + ((bye >> 32) & 0xFFFF)
    text = word(segment, bye_pointers)
    if text == 0:
        return kind, ""
    start = bye_pointers + 1 + signed30((text >> 2) & 0x3FFFFFFF)
    length = text >> 35
    return kind, segment[8 * start:8 * start + length - 1].decode(errors="replace")


# --- connections --------------------------------------------------------------

class Learner:
    def __init__(self, host, port):
        self.host, self.port = host, port

    def connect(self, source):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind((source, 0))
        s.connect((self.host, self.port))
        return s


def read_until_closed(s, timeout):
    """Reads until the learner closes the connection or `timeout` passes.
    Returns (closed, frames as (kind, reason), seconds)."""
    start = time.monotonic()
    buf = b""
    closed = False
    s.setblocking(False)
    while not closed:
        left = timeout - (time.monotonic() - start)
        if left <= 0:
            break
        ready, _, _ = select.select([s], [], [], left)
        if not ready:
            continue
        try:
            chunk = s.recv(65536)
        except BlockingIOError:
            continue
        except ConnectionResetError:
            closed = True
            break
        if not chunk:
            closed = True
        buf += chunk
    return closed, [frame_kind_and_reason(f) for f in split_frames(buf)], time.monotonic() - start


def read_frame(s, timeout):
    """The next whole frame, or None if the connection closes or times out first."""
    s.settimeout(timeout)
    buf = b""
    try:
        while frame_length(buf) is None:
            chunk = s.recv(65536)
            if not chunk:
                return None
            buf += chunk
    except (socket.timeout, ConnectionResetError):
        return None
    n = frame_length(buf)
    return buf[:n]  # a learner sends nothing unasked after the Welcome but a ConfigUpdate


def bye_reason(frames):
    reasons = [r for kind, r in frames if kind == "bye"]
    return reasons[-1] if reasons else None


# --- the learner process ------------------------------------------------------

class Watch:
    """Samples the learner's RSS and descriptors, and that it is alive, every 0.1 s."""

    def __init__(self, process):
        self.process = process
        self.pid = process.pid
        self.peak_rss_kb = 0
        self.died = False
        self.stop = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def rss_kb(self):
        with open("/proc/%d/status" % self.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def fds(self):
        return len(os.listdir("/proc/%d/fd" % self.pid))

    def run(self):
        while not self.stop:
            if self.process.poll() is not None:
                self.died = True
                return
            try:
                self.peak_rss_kb = max(self.peak_rss_kb, self.rss_kb())
            except OSError:
                pass
            time.sleep(0.1)


def last_metrics(run_dir):
    row = {}
    try:
        with open(os.path.join(run_dir, "metrics.jsonl")) as f:
            for line in f:
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                if "optimizer_steps" in r and "frames" in r:
                    row = r
    except OSError:
        pass
    return row


def eventually(seconds, condition, step=0.1):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(step)
    return condition()


# --- the attacks --------------------------------------------------------------

class Attack:
    def __init__(self, learner, watch):
        self.learner = learner
        self.watch = watch
        self.connections = 0
        self.cases = []
        self.byes = {}

    def connect(self, source):
        self.connections += 1
        return self.learner.connect(source)

    def case(self, name):
        self.cases.append(name)
        print("attack: case %s" % name, flush=True)
        check(not self.watch.died, "the learner died before case %s" % name)

    def admitted(self, source=HONEST_SOURCE, seconds=10):
        """A connection past its Hello, and its Welcome. The attackers' slot frees
        when the learner has closed the previous attacker, so it may take a retry."""
        end = time.monotonic() + seconds
        last = None
        while time.monotonic() < end:
            s = self.connect(source)
            s.sendall(hello())
            frame = read_frame(s, 5)
            if frame is not None and frame_kind_and_reason(frame)[0] == "welcome":
                return s, frame
            last = capnp_decode(frame) if frame else "closed without a reply"
            s.close()
            time.sleep(0.05)
        raise Failure("a valid Hello was not admitted within %d s: %s" % (seconds, last))

    def expect_bye(self, s, what, contains="", timeout=10):
        closed, frames, _ = read_until_closed(s, timeout)
        s.close()
        reason = bye_reason(frames)
        check(closed, "%s: the learner did not close the connection within %d s" % (what, timeout))
        check(reason, "%s: no Bye with a reason before the close (got %s)" % (what, frames))
        check(contains in reason, "%s: the Bye says %r, expected it to contain %r" % (what, reason, contains))
        print("attack:   %s -> Bye: %s" % (what, reason), flush=True)
        return reason

    def learn_shape(self):
        s, welcome = self.admitted()
        text = capnp_decode(welcome)
        s.close()
        num_envs = int(re.search(r"numEnvs = (\d+)", text).group(1))
        shape = re.search(r"observation = \(kind = box, dtype = float32,.*?shape = \[([\d, ]+)\]", text)
        check(shape, "the Welcome's observation space is not a float32 box: " + text)
        elements = 1
        for d in shape.group(1).split(","):
            elements *= int(d)
        self.num_envs, self.obs_elements = num_envs, elements
        print("attack: Welcome: %d envs per actor, %d float32 per observation" % (num_envs, elements), flush=True)

    def observations(self, count, value=0.01):
        return struct.pack("<%df" % (count * self.obs_elements), *([value] * (count * self.obs_elements)))

    def valid_batch(self, seq, first):
        n = self.num_envs
        return step_batch(seq, 0, n, self.observations(n), ["0"] * n, [1 if first else 0] * n)

    def step_twice(self):
        self.case("a: a valid Hello, then the same StepBatch twice")
        s, _ = self.admitted()
        s.sendall(self.valid_batch(1, True))
        frame = read_frame(s, 10)
        check(frame is not None and frame_kind_and_reason(frame)[0] == "actionBatch",
              "a valid first StepBatch was not answered with an ActionBatch: %s" % (frame and capnp_decode(frame)))
        again = self.valid_batch(2, False)
        s.sendall(again + again)
        self.expect_bye(s, "StepBatch sent twice", "before its last one was answered")

    def bad_batches(self):
        self.case("b: StepBatches for envs not owned, wrong counts and sizes, NaN and inf")
        n = self.num_envs
        obs = self.observations
        nan_obs = bytearray(obs(n))
        nan_obs[8:12] = struct.pack("<f", float("nan"))
        cases = [
            ("envs beyond the actor's", step_batch(1, n - 1, 2, obs(2), ["0", "0"], [1, 1]), "outside this actor"),
            ("env_begin far away", step_batch(1, 4000000000, 1, obs(1), ["0"], [1]), "outside this actor"),
            ("count 0", step_batch(1, 0, 0, b"", [], []), "StepBatch"),
            ("observations one float short", step_batch(1, 0, n, obs(n)[:-4], ["0"] * n, [1] * n), "StepBatch"),
            ("one reward missing", step_batch(1, 0, n, obs(n), ["0"] * (n - 1), [1] * n), "StepBatch"),
            ("flags of another count", step_batch(1, 0, n, obs(n), ["0"] * n, [1] * (n + 3)), "StepBatch"),
            ("a NaN observation", step_batch(1, 0, n, bytes(nan_obs), ["0"] * n, [1] * n), "non-finite observation"),
            ("an infinite reward", step_batch(1, 0, n, obs(n), ["0"] * (n - 1) + ["inf"], [1] * n), "non-finite reward"),
            ("a NaN reward", step_batch(1, 0, n, obs(n), ["nan"] + ["0"] * (n - 1), [1] * n), "non-finite reward"),
        ]
        for what, frame, contains in cases:
            s, _ = self.admitted()
            s.sendall(frame)
            self.expect_bye(s, what, contains)

    def huge_header(self):
        self.case("c: an 8-byte header claiming 64 MiB, before and after Hello")
        header = struct.pack("<II", 0, (64 << 20) // 8)
        s = self.connect(HONEST_SOURCE)
        s.sendall(header)
        self.expect_bye(s, "64 MiB before Hello", "exceeds max_frame_bytes")
        s, _ = self.admitted()
        s.sendall(struct.pack("<II", 0, (64 << 20) // 8 + 1))
        self.expect_bye(s, "64 MiB + 8 after Hello", "exceeds max_frame_bytes")

    def start_half_step(self):
        """An admitted connection that sends half a StepBatch and stops."""
        s, _ = self.admitted()
        frame = self.valid_batch(1, True)
        s.sendall(frame[:len(frame) // 2])
        return s, time.monotonic()

    def idle(self, count=100, half_hellos=20):
        self.case("d: %d idle connections and %d half-sent Hellos" % (count, half_hellos))
        sockets = [self.connect(IDLE_SOURCE) for _ in range(count)]
        frame = hello()
        for _ in range(half_hellos):
            s = self.connect(IDLE_SOURCE)
            s.sendall(frame[:len(frame) // 2])
            sockets.append(s)
        opened = time.monotonic()
        # All of them at once: the learner must close each, within the Hello deadline (10 s).
        reasons = {}
        open_ = {s.fileno(): (s, b"") for s in sockets}
        closed_after = []
        while open_ and time.monotonic() - opened < 16:
            ready, _, _ = select.select([v[0] for v in open_.values()], [], [], 0.5)
            for s in ready:
                sock, buf = open_[s.fileno()]
                try:
                    chunk = sock.recv(65536)
                except ConnectionResetError:
                    chunk = b""
                if chunk:
                    open_[s.fileno()] = (sock, buf + chunk)
                    continue
                reason = bye_reason([frame_kind_and_reason(f) for f in split_frames(buf)]) or "<closed without a Bye>"
                reasons[reason] = reasons.get(reason, 0) + 1
                closed_after.append(time.monotonic() - opened)
                del open_[s.fileno()]
                sock.close()
        left = len(open_)
        for sock, _ in open_.values():
            sock.close()
        for reason, n in sorted(reasons.items()):
            print("attack:   %d x %s" % (n, reason), flush=True)
        check(left == 0, "%d of %d idle connections were still open 16 s after they connected" % (left, len(sockets)))
        check(all(not r.startswith("<") for r in reasons),
              "an idle connection was closed without a Bye: %s" % reasons)
        check(any("no Hello within" in r for r in reasons), "no idle connection got the Hello deadline: %s" % reasons)
        check(any("try again later" in r for r in reasons),
              "more than 64 waiting connections, and none was refused: %s" % reasons)
        print("attack:   the last idle connection was closed %.1f s after it connected" % max(closed_after), flush=True)

    def finish_half_step(self, s, started):
        closed, frames, _ = read_until_closed(s, max(1, 40 - (time.monotonic() - started)))
        s.close()
        reason = bye_reason(frames)
        check(closed, "an admitted connection with half a StepBatch was still open %.0f s later" % (time.monotonic() - started))
        check(reason, "the admitted connection with half a StepBatch was closed without a Bye: %s" % frames)
        print("attack:   half a StepBatch, admitted -> Bye after %.1f s: %s" % (time.monotonic() - started, reason),
              flush=True)

    def mutants(self, budget_s, max_connections, with_hello):
        """Random bytes and mutated valid frames, one connection each. Each is sent,
        the write side shut, and the learner must close the connection."""
        rng = random.Random(0x6d6f6f6e)
        n = self.num_envs
        seeds = [self.valid_batch(1, True), step_batch(7, 1, 1, self.observations(1), ["0.5"], [0])]
        if not with_hello:
            seeds += [hello(), hello("x" * 200, 1), hello(actor_id=0)]
        start = time.monotonic()
        count = 0
        unclosed = 0
        byes = 0
        while count < max_connections and time.monotonic() - start < budget_s:
            count += 1
            if not with_hello and rng.random() < 0.2:
                payload = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 300)))
            else:
                payload = mutate(bytearray(rng.choice(seeds)), rng)
            s = self.connect(MUTANT_SOURCE if with_hello else NOISE_SOURCE)
            try:
                s.sendall((hello() if with_hello else b"") + payload)
                s.shutdown(socket.SHUT_WR)
            except (BrokenPipeError, ConnectionResetError):
                pass
            closed, frames, _ = read_until_closed(s, 10)
            s.close()
            unclosed += not closed
            reason = bye_reason(frames)
            if reason is not None:
                byes += 1
                key = re.sub(r"\d+", "N", reason)[:90]
                self.byes[key] = self.byes.get(key, 0) + 1
            check(not self.watch.died, "the learner died on a mutated frame: %s" % payload.hex())
        check(unclosed == 0, "%d of %d connections were not closed by the learner" % (unclosed, count))
        print("attack:   %d connections in %.1f s, %d of them closed with a Bye" % (count, time.monotonic() - start, byes),
              flush=True)
        return count

    def wrong_tokens(self, tries=6):
        self.case("e: %d wrong tokens from one address, then the right one" % tries)
        reasons = []
        for i in range(tries):
            s = self.connect(GUESSER_SOURCE)
            s.sendall(hello("guess-%d" % i))
            reasons.append(self.expect_bye(s, "wrong token %d" % (i + 1)))
        check("wrong auth token" in reasons[0], "the first wrong token was not refused as one: %r" % reasons[0])
        check(any("too many wrong auth tokens" in r for r in reasons),
              "repeated wrong tokens from one address were never throttled: %s" % reasons)
        s = self.connect(GUESSER_SOURCE)
        s.sendall(hello())
        self.expect_bye(s, "the right token from the blocked address", "too many wrong auth tokens")


def mutate(frame, rng):
    for _ in range(rng.randint(1, 3)):
        choice = rng.randrange(6)
        if choice == 0 and frame:  # bit flips
            for _ in range(rng.randint(1, 4)):
                frame[rng.randrange(len(frame))] ^= 1 << rng.randrange(8)
        elif choice == 1:  # truncation
            del frame[rng.randrange(len(frame) + 1):]
        elif choice == 2 and len(frame) >= 8:  # the segment count or a size, to edge values
            offset = rng.choice([0, 4])
            old = struct.unpack_from("<I", frame, offset)[0]
            new = rng.choice([0, 1, 2, old - 1, old + 1, 511, 512, 0x7FFFFFFF, 0xFFFFFFFF, rng.getrandbits(32)])
            struct.pack_into("<I", frame, offset, new & 0xFFFFFFFF)
        elif choice == 3 and len(frame) >= 16:  # a pointer word replaced
            offset = 8 * rng.randrange(1, len(frame) // 8)
            struct.pack_into("<Q", frame, offset, rng.getrandbits(64))
        elif choice == 4 and frame:  # bytes overwritten
            for _ in range(rng.randint(1, 8)):
                frame[rng.randrange(len(frame))] = rng.getrandbits(8)
        else:  # garbage appended
            frame += bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 32)))
    return bytes(frame)


# --- the test -----------------------------------------------------------------

def main():
    began = time.monotonic()
    runs_dir = tempfile.mkdtemp(prefix="moonseed-attack-")
    token_file = os.path.join(runs_dir, "token")
    with open(os.open(token_file, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        f.write(TOKEN + "\n")
    log_path = os.path.join(runs_dir, "learner.log")
    log = open(log_path, "w")
    learner = subprocess.Popen(
        [MOONSEED, "run", EXAMPLE, "runs_dir=" + runs_dir, "log.interval_s=0.25", "stop.return_mean=0",
         "stop.seconds=0", "stop.frames=1000000000", "topology.actors=2", "topology.local_actors=1", 'topology.transport="tcp"',
         "--auth-token-file", token_file],
        stdout=log, stderr=subprocess.STDOUT)
    watch = Watch(learner)
    ok = False
    try:
        run_dir = None

        def training():
            nonlocal run_dir
            dirs = [d for d in os.listdir(runs_dir) if os.path.isdir(os.path.join(runs_dir, d))]
            if len(dirs) != 1:
                return False
            run_dir = os.path.join(runs_dir, dirs[0])
            return last_metrics(run_dir).get("optimizer_steps", 0) > 0 and os.path.exists(
                os.path.join(run_dir, "learner.address"))

        check(eventually(90, training), "the learner did not start training within 90 s")
        with open(os.path.join(run_dir, "learner.address")) as f:
            address = f.read().strip()
        match = re.fullmatch(r"tcp:([\d.]+):(\d+)", address)
        check(match, "learner.address is not a TCP address: " + address)
        time.sleep(1)  # the learner's start-up allocations settle
        base_rss, base_fds = watch.rss_kb(), watch.fds()
        watch.peak_rss_kb = base_rss
        before = last_metrics(run_dir)
        print("attack: learner %s, pid %d, baseline VmRSS %d MB, %d descriptors; frames %d, optimizer_steps %d"
              % (address, learner.pid, base_rss // 1024, base_fds, before["frames"], before["optimizer_steps"]),
              flush=True)

        attack = Attack(Learner(match.group(1), int(match.group(2))), watch)
        attack.learn_shape()
        attack.step_twice()
        attack.bad_batches()
        attack.huge_header()
        half_step = attack.start_half_step()
        attack.idle()
        during = last_metrics(run_dir)
        attack.case("f: random bytes and mutated Hellos, StepBatches and segment tables")
        mutated = attack.mutants(14, 3000, with_hello=False)
        attack.finish_half_step(*half_step)
        mutated += attack.mutants(12, 1000, with_hello=True)
        for reason, n in sorted(attack.byes.items(), key=lambda kv: -kv[1])[:12]:
            print("attack:   %5d x %s" % (n, reason), flush=True)
        attack.wrong_tokens()
        attacked = last_metrics(run_dir)

        check(not watch.died, "the learner died during the attack")
        check(during["frames"] > before["frames"] and during["optimizer_steps"] > before["optimizer_steps"],
              "training stalled during cases a-d: %s then %s" % (before, during))
        check(attacked["frames"] > during["frames"] and attacked["optimizer_steps"] > during["optimizer_steps"],
              "training stalled during cases f-e: %s then %s" % (during, attacked))
        check(eventually(10, lambda: last_metrics(run_dir)["optimizer_steps"] > attacked["optimizer_steps"]),
              "training did not go on after the attack")
        fds_back = eventually(15, lambda: watch.fds() <= base_fds + 4)
        end_fds = watch.fds()
        check(fds_back, "the learner holds %d descriptors after the attack, %d before" % (end_fds, base_fds))
        peak_delta = watch.peak_rss_kb - base_rss
        check(peak_delta < RSS_BOUND_KB, "the learner's VmRSS grew by %d MB during the attack" % (peak_delta // 1024))
        after = last_metrics(run_dir)

        watch.stop = True
        learner.send_signal(signal.SIGTERM)
        try:
            code = learner.wait(60)
        except subprocess.TimeoutExpired:
            raise Failure("the learner did not exit within 60 s of SIGTERM")
        check(code == 0, "the learner exited %d on SIGTERM" % code)
        print("attack: PASSED in %.0f s: cases %s; %d connections (%d random or mutated); peak VmRSS +%d MB; "
              "descriptors %d -> %d; frames %d -> %d, optimizer_steps %d -> %d"
              % (time.monotonic() - began, " ".join(c[0] for c in attack.cases), attack.connections, mutated,
                 peak_delta // 1024, base_fds, end_fds, before["frames"], after["frames"],
                 before["optimizer_steps"], after["optimizer_steps"]), flush=True)
        ok = True
    except Failure as failure:
        print("attack: FAILED: %s" % failure, flush=True)
    finally:
        watch.stop = True
        if learner.poll() is None:
            learner.kill()
            learner.wait()
        log.close()
        if not ok:
            with open(log_path, errors="replace") as f:
                lines = f.readlines()
            sys.stdout.write("--- last lines of %s ---\n%s" % (log_path, "".join(lines[-60:])))
        else:
            subprocess.run(["rm", "-rf", runs_dir])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
