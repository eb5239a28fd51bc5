#!/usr/bin/python3
"""`moonseed --version`, `moonseed-actor --version`, RUN/engine.json, and the
build step that writes the commit (cmake/build_info.cmake), with the real
binaries, a real short run and real git repositories.

usage: version_test.py MOONSEED MOONSEED_ACTOR SOURCE_DIR PROJECT_VERSION
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

MOONSEED, ACTOR, SOURCE, VERSION = sys.argv[1:5]
COMMIT = r"([0-9a-f]{40}|unknown)"


def output(*argv):
    done = subprocess.run(list(argv), capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise AssertionError("%s exited %d: %s" % (argv, done.returncode, done.stderr))
    return done.stdout


def is_commit_of_this_repository(commit):
    return subprocess.run(["git", "-C", SOURCE, "cat-file", "-e", commit + "^{commit}"],
                          capture_output=True).returncode == 0


class Version(unittest.TestCase):
    def test_moonseed_prints_version_commit_libtorch_and_device(self):
        text = output(MOONSEED, "--version")
        self.assertEqual(output(MOONSEED, "version"), text)
        lines = text.splitlines()
        self.assertEqual(len(lines), 4, text)
        self.assertEqual(lines[0], "moonseed " + VERSION)
        m = re.fullmatch(r"commit %s( \(modified: .*\))?" % COMMIT, lines[1])
        self.assertTrue(m, lines[1])
        if m.group(1) != "unknown" and os.path.exists(os.path.join(SOURCE, ".git")):
            self.assertTrue(is_commit_of_this_repository(m.group(1)), m.group(1))
        self.assertRegex(lines[2], r"^libtorch \d+\.\d+\.\d+")
        self.assertRegex(lines[3], r'^device (cpu|cuda) \(inference\.device = "auto"\)$')

    def test_actor_prints_the_same_version_and_commit(self):
        moonseed = output(MOONSEED, "--version").splitlines()
        commit = moonseed[1].split()[1]
        modified = ", modified" if "(modified" in moonseed[1] else ""
        expected = "moonseed-actor %s (commit %s%s)\n" % (VERSION, commit, modified)
        self.assertEqual(output(ACTOR, "--version"), expected)
        self.assertEqual(output(MOONSEED, "actor", "--version"), expected)

    def test_a_run_directory_records_the_engine_that_made_it(self):
        moonseed = output(MOONSEED, "--version").splitlines()
        with tempfile.TemporaryDirectory(prefix="moonseed-version-") as runs:
            output(MOONSEED, "run", os.path.join(SOURCE, "examples", "cartpole_vtrace.lua"), "runs_dir=" + runs,
                   "stop.frames=100", "stop.return_mean=0", "topology.actors=1")
            (run_dir,) = [d for d in os.listdir(runs) if os.path.isdir(os.path.join(runs, d))]
            with open(os.path.join(runs, run_dir, "engine.json")) as f:
                engine = json.load(f)
        self.assertEqual(engine["version"], VERSION)
        self.assertEqual(engine["commit"], moonseed[1].split()[1])
        self.assertEqual(engine["dirty"], "(modified" in moonseed[1])
        self.assertEqual("libtorch " + engine["libtorch"], moonseed[2])
        self.assertEqual(engine["device"], moonseed[3].split()[1])


class BuildInfoScript(unittest.TestCase):
    """cmake/build_info.cmake, run the way the build runs it."""

    def generate(self, source_dir, out):
        subprocess.run(["cmake", "-DSOURCE_DIR=" + source_dir, "-DOUT=" + out, "-DVERSION=9.8.7", "-P",
                        os.path.join(SOURCE, "cmake", "build_info.cmake")], check=True, capture_output=True)
        with open(out) as f:
            return f.read()

    def git(self, repo, *args):
        return subprocess.run(["git", "-C", repo, "-c", "user.name=test", "-c", "user.email=test@example.com"]
                              + list(args), check=True, capture_output=True, text=True).stdout.strip()

    def test_outside_git_the_commit_is_unknown(self):
        with tempfile.TemporaryDirectory() as tmp:
            text = self.generate(tmp, os.path.join(tmp, "out.cc"))
        self.assertIn('build_version() { return "9.8.7"; }', text)
        self.assertIn('build_commit() { return "unknown"; }', text)
        self.assertIn("build_dirty() { return false; }", text)

    def test_the_commit_and_a_modified_tree_are_recorded_and_an_unchanged_file_is_not_rewritten(self):
        with tempfile.TemporaryDirectory() as tmp:
            repo = os.path.join(tmp, "repo")
            os.mkdir(repo)
            self.git(repo, "init", "-q")
            with open(os.path.join(repo, "a.txt"), "w") as f:
                f.write("one\n")
            self.git(repo, "add", "a.txt")
            self.git(repo, "commit", "-q", "-m", "one")
            head = self.git(repo, "rev-parse", "HEAD")
            out = os.path.join(tmp, "out.cc")
            text = self.generate(repo, out)
            self.assertIn('build_commit() { return "%s"; }' % head, text)
            self.assertIn("build_dirty() { return false; }", text)

            # The same state again: the file keeps its time, so nothing recompiles.
            os.utime(out, (1000000000, 1000000000))
            self.generate(repo, out)
            self.assertEqual(os.stat(out).st_mtime, 1000000000)

            with open(os.path.join(repo, "untracked.txt"), "w") as f:
                f.write("not part of the build's commit\n")
            self.assertIn("build_dirty() { return false; }", self.generate(repo, out))
            with open(os.path.join(repo, "a.txt"), "w") as f:
                f.write("two\n")
            self.assertIn("build_dirty() { return true; }", self.generate(repo, out))


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
