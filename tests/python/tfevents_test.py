"""TensorBoard event files of real `moonseed run`s, read by a reader of their own.

The reader here shares nothing with the writer (observe/tfevents_writer.cc)
but the message definitions: it has its own CRC-32C, checks both CRCs of every
complete record, decodes every Event with python3-protobuf (tensorboard_pb2,
generated from observe/tensorboard.proto into the build tree), and compares
the scalars with metrics.jsonl. argv: the moonseed binary, the source dir.
"""
import glob
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np

from observe import tensorboard_pb2 as tb

MOONSEED = sys.argv[1]
SOURCE_DIR = sys.argv[2]
EXAMPLE = os.path.join(SOURCE_DIR, "examples", "cartpole_vtrace.lua")


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def masked(crc):
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def read_events(path):
    """Every complete record of the file, CRCs checked, decoded; a torn tail is allowed."""
    with open(path, "rb") as f:
        data = f.read()
    events, at = [], 0
    while len(data) - at >= 12:
        (length,) = struct.unpack_from("<Q", data, at)
        if len(data) - at - 12 < length + 4:
            break  # a record cut by a crash: readers skip it
        (length_crc,) = struct.unpack_from("<I", data, at + 8)
        assert length_crc == masked(crc32c(data[at:at + 8])), f"{path}: bad length CRC at {at}"
        body = data[at + 12:at + 12 + length]
        (body_crc,) = struct.unpack_from("<I", data, at + 12 + length)
        assert body_crc == masked(crc32c(body)), f"{path}: bad data CRC at {at}"
        event = tb.Event()
        event.ParseFromString(body)
        events.append(event)
        at += 12 + length + 4
    return events


def event_files(run_dir):
    return sorted(glob.glob(os.path.join(run_dir, "events.out.tfevents.*")))


def split(events):
    """(tag, step) -> [float32 values], and (tag, step, text) of every text."""
    scalars, texts = {}, []
    for e in events:
        if e.WhichOneof("what") != "summary":
            continue
        for v in e.summary.value:
            if v.WhichOneof("value") == "simple_value":
                scalars.setdefault((v.tag, e.step), []).append(v.simple_value)
            else:
                assert v.metadata.plugin_data.plugin_name == "text", v
                assert v.tensor.dtype == tb.DT_STRING and len(v.tensor.tensor_shape.dim) == 0, v
                texts.append((v.tag, e.step, v.tensor.string_val[0].decode()))
    return scalars, texts


def metrics(run_dir):
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        return [json.loads(line) for line in f]


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def fenced(text):
    return "```\n" + text + ("" if text.endswith("\n") else "\n") + "```"


def eventually(seconds, predicate):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


class TfEventsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="moonseed-tfevents-")
        self.script = os.path.join(self.dir, "exp.lua")
        with open(EXAMPLE) as f:
            self.original = f.read()
        with open(self.script, "w") as f:
            f.write(self.original)
        self.runs = os.path.join(self.dir, "runs")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def run_dir(self):
        dirs = glob.glob(os.path.join(self.runs, "*"))
        return dirs[0] if len(dirs) == 1 else None

    def start(self, *args):
        with open(os.path.join(self.dir, "run.log"), "ab") as log:
            return subprocess.Popen([MOONSEED, "run", *args], stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL)

    def log_text(self):
        with open(os.path.join(self.dir, "run.log"), errors="replace") as f:
            return f.read()

    def ticks(self):
        d = self.run_dir()
        if not d or not os.path.exists(os.path.join(d, "metrics.jsonl")):
            return []
        return [r for r in metrics(d) if "event" not in r and "frames" in r]

    def check_scalars_match_metrics(self, run_dir, scalars):
        """Every numeric field of every point row is a scalar at its frames, as float32; nothing else is.

        Point rows: the periodic ones (no "event") and event rows marked "counters": true (the stop row).
        """
        expected = 0
        for row in metrics(run_dir):
            if "event" in row and row.get("counters") is not True:
                continue
            for key, value in row.items():
                if not is_number(value):
                    continue
                expected += 1
                got = scalars.get((key, int(row["frames"])), [])
                self.assertIn(np.float32(value), [np.float32(g) for g in got], f"{key} at {row['frames']}")
        self.assertEqual(sum(len(v) for v in scalars.values()), expected)

    def test_a_run_with_a_reload_and_a_resume(self):
        learner = self.start(self.script, "runs_dir=" + self.runs, "log.interval_s=0.25", "log.progress=false",
                             "stop.return_mean=0", "stop.seconds=0", "stop.frames=1000000000")
        try:
            self.assertTrue(eventually(60, lambda: any(r.get("optimizer_steps", 0) > 0 for r in self.ticks())),
                            self.log_text())
            run_dir = self.run_dir()
            with open(os.path.join(run_dir, "config.lua")) as f:
                config_before = f.read()
            with open(self.script + ".swp", "w") as f:
                f.write(self.original.replace("lr = 1e-3", "lr = 2.5e-4"))
            os.rename(self.script + ".swp", self.script)
            self.assertTrue(eventually(30, lambda: any(r.get("config_version") == 1 for r in self.ticks())),
                            self.log_text())
        finally:
            learner.send_signal(signal.SIGINT)
            self.assertEqual(learner.wait(60), 0, self.log_text())

        files = event_files(run_dir)
        self.assertEqual(len(files), 1, files)
        events = read_events(files[0])
        self.assertEqual(events[0].file_version, "brain.Event:2")
        scalars, texts = split(events)
        self.check_scalars_match_metrics(run_dir, scalars)
        self.assertIn(("config", 0, fenced(config_before)), texts)
        reloads = [r for r in metrics(run_dir) if r.get("event") == "reload"]
        self.assertEqual(len(reloads), 1)
        reload_texts = [t for t in texts if t[0] == "event/reload"]
        self.assertEqual(len(reload_texts), 1, texts)
        self.assertEqual(json.loads(reload_texts[0][2].strip("`\n")), reloads[0])
        stops = [t for t in texts if t[0] == "event/stop"]
        self.assertEqual(len(stops), 1, texts)
        # The stop row's counters are scalars at its frames: a curve ends at the run's last value.
        stop_rows = [r for r in metrics(run_dir) if r.get("event") == "stop"]
        self.assertEqual(len(stop_rows), 1)
        self.assertIs(stop_rows[0].get("counters"), True, stop_rows[0])
        for key in ("return_mean", "frames", "optimizer_steps", "train_time_s"):
            got = scalars.get((key, int(stop_rows[0]["frames"])), [])
            self.assertIn(np.float32(stop_rows[0][key]), [np.float32(g) for g in got], key)

        # --resume: a new event file beside the first; both read, together they hold every row.
        last_frames = max(int(r["frames"]) for r in metrics(run_dir) if "frames" in r)
        resumed = self.start("--resume", run_dir, "log.interval_s=0.25", "log.progress=false",
                             f"stop.frames={last_frames + 3000}")
        self.assertEqual(resumed.wait(120), 0, self.log_text())
        files = event_files(run_dir)
        self.assertEqual(len(files), 2, files)
        first, second = (read_events(f) for f in files)
        self.assertEqual(second[0].file_version, "brain.Event:2")
        scalars, texts = split(first + second)
        self.check_scalars_match_metrics(run_dir, scalars)
        _, resumed_texts = split(second)
        self.assertEqual([t[0] for t in resumed_texts if t[0] == "event/resume"], ["event/resume"])
        self.assertEqual([t[1] for t in resumed_texts if t[0] == "config"], [0])

    def test_log_tensorboard_false_writes_no_event_file(self):
        run = self.start(self.script, "runs_dir=" + self.runs, "log.tensorboard=false", "log.progress=false",
                         "stop.return_mean=0", "stop.seconds=0", "stop.frames=3000")
        self.assertEqual(run.wait(120), 0, self.log_text())
        self.assertTrue(os.path.exists(os.path.join(self.run_dir(), "metrics.jsonl")))
        self.assertEqual(event_files(self.run_dir()), [])


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
