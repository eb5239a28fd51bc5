#!/usr/bin/python3
"""ms.start keeps a run's output in RUN_DIR/run.log, and runs started at the
same moment from two consoles stay apart (they used to share /tmp files named
from the time and an unseeded math.random). Real `moonseed script` processes
start real runs.

usage: start_log_test.py MOONSEED SOURCE_DIR
"""
import os
import subprocess
import sys
import tempfile
import unittest

MOONSEED, SOURCE = sys.argv[1:3]
EXAMPLE = os.path.join(SOURCE, "examples", "cartpole_vtrace.lua")

START = """
local ms = require "moonseed"
local runs = arg[1]
local run = ms.start(%r, { "runs_dir=" .. runs, "stop.frames=200", "stop.return_mean=0", "topology.actors=1" })
print("DIR " .. run.dir)
print("LOG " .. run.log)
print("CODE " .. tostring(run:wait(120)))
""" % EXAMPLE


class StartLog(unittest.TestCase):
    def test_two_consoles_start_runs_at_once_and_each_output_lands_in_its_run_directory(self):
        with tempfile.TemporaryDirectory(prefix="moonseed-start-test-") as tmp:
            script = os.path.join(tmp, "start.lua")
            with open(script, "w") as f:
                f.write(START)
            scratch = os.path.join(tmp, "tmpdir")  # ms.start's private directories go here
            os.mkdir(scratch)
            env = dict(os.environ, TMPDIR=scratch)
            consoles = []
            for n in range(2):
                runs = os.path.join(tmp, "runs-%d" % n)
                os.mkdir(runs)
                consoles.append((runs, subprocess.Popen([MOONSEED, "script", script, runs], env=env, text=True,
                                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)))
            for runs, console in consoles:
                out, _ = console.communicate(timeout=240)
                self.assertEqual(console.returncode, 0, out)
                fields = dict(line.split(" ", 1) for line in out.splitlines() if line[:4] in ("DIR ", "LOG ", "CODE"))
                self.assertEqual(fields.get("CODE"), "0", out)
                run_dir = fields["DIR"]
                self.assertEqual(os.path.dirname(run_dir), runs, out)  # its own run, not the other console's
                self.assertEqual(fields["LOG"], os.path.join(run_dir, "run.log"), out)
                with open(fields["LOG"]) as f:
                    self.assertIn("moonseed: stopped:", f.read())
            self.assertEqual(os.listdir(scratch), [], "ms.start left its scratch files")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
