"""docs/python-actors.md as a new user follows it: its env (the first ```python block) and its
experiment (the first ```lua block), saved side by side in an empty directory, train with
`moonseed run` on Python actors. Keeps the page's code runnable.

Usage: python_actors_walkthrough_test.py MOONSEED_BINARY SOURCE_DIR"""
import json
import os
import re
import subprocess
import sys
import tempfile


def blocks(text, language):
    return re.findall(r"```" + language + r"\n(.*?)```", text, re.S)


def main():
    binary, source = sys.argv[1], sys.argv[2]
    with open(os.path.join(source, "docs", "python-actors.md")) as f:
        page = f.read()
    env_code, experiment = blocks(page, "python")[0], blocks(page, "lua")[0]
    module = re.search(r'python = "(\w+):(\w+)"', experiment)
    assert module, "the page's experiment names no env.python"
    with tempfile.TemporaryDirectory(prefix="moonseed-walkthrough-") as work:
        with open(os.path.join(work, module.group(1) + ".py"), "w") as f:
            f.write(env_code)
        script = os.path.join(work, "experiment.lua")
        with open(script, "w") as f:
            f.write(experiment)
        runs = os.path.join(work, "runs")
        # Started from elsewhere: the module must be found beside the script, not in the working directory.
        result = subprocess.run([binary, "run", script, "runs_dir=" + runs, "stop.seconds=0", "stop.frames=40000",
                                 "log.interval_s=0.5", "--quiet"], cwd="/", capture_output=True, text=True,
                                timeout=300)
        assert result.returncode == 0, result.stderr
        assert "Python actors" in result.stderr, result.stderr
        (run,) = os.listdir(runs)
        with open(os.path.join(runs, run, "metrics.jsonl")) as f:
            rows = [json.loads(line) for line in f]
        frames = max(r.get("frames", 0) for r in rows)
        assert frames >= 40000, rows[-1]
        assert max(r.get("optimizer_steps", 0) for r in rows) > 0, rows[-1]
    print("ok: the page's env and experiment trained %d frames" % frames)


if __name__ == "__main__":
    main()
