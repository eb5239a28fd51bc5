"""Every walkthrough of README.md and docs/ run as written, so a page that stops working fails CI.

A walkthrough is the fenced blocks of one page marked with an HTML comment on the line before
each (invisible on the rendered page), run in order in one fresh directory:

    <!-- walkthrough: NAME -->             a ```sh block runs in bash (-e); a ```python block runs
                                           with Debian's /usr/bin/python3 (the project's Python)
    <!-- walkthrough: NAME file=F -->      the block (any language) is saved as F instead of run
    <!-- walkthrough: NAME expect=TEXT --> the block's output must contain TEXT as well

The directory starts with `examples/` (a link to the repository's); `moonseed` on PATH is the
build's. Usage: walkthroughs_test.py MOONSEED_BINARY SOURCE_DIR"""
import glob
import os
import re
import shlex
import subprocess
import sys
import tempfile

MARK = re.compile(r"^<!-- walkthrough: (\S+)((?: \w+=(?:\"[^\"]*\"|\S+))*) -->$")
FENCE = re.compile(r"^```(\w*)$")


def walkthroughs(path):
    """{name: [(language, code, attributes, line)]} of one page, in page order."""
    with open(path) as f:
        lines = f.read().split("\n")
    found = {}
    i = 0
    while i < len(lines):
        m = MARK.match(lines[i].strip())
        i += 1
        if not m:
            continue
        name, attrs = m.group(1), dict((k, v.strip('"')) for k, v in
                                       (a.split("=", 1) for a in shlex.split(m.group(2)) if a))
        while i < len(lines) and not lines[i].strip():
            i += 1
        fence = FENCE.match(lines[i].strip()) if i < len(lines) else None
        assert fence, "%s:%d: a walkthrough mark must be followed by a fenced block" % (path, i)
        start = i + 1
        end = start
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        found.setdefault(name, []).append((fence.group(1), "\n".join(lines[start:end]) + "\n", attrs, start))
        i = end + 1
    return found


def run(binary, source, page, name, steps):
    with tempfile.TemporaryDirectory(prefix="moonseed-walkthrough-") as work:
        os.symlink(os.path.join(source, "examples"), os.path.join(work, "examples"))
        bin_dir = os.path.join(work, ".bin")
        os.mkdir(bin_dir)
        os.symlink(os.path.abspath(binary), os.path.join(bin_dir, "moonseed"))
        env = dict(os.environ, PATH=bin_dir + ":" + os.environ.get("PATH", "/usr/bin:/bin"))
        for n, (language, code, attrs, line) in enumerate(steps):
            where = "%s:%d (walkthrough %s, block %d)" % (os.path.relpath(page, source), line, name, n + 1)
            if "file" in attrs:
                with open(os.path.join(work, attrs["file"]), "w") as f:
                    f.write(code)
                continue
            if language in ("sh", "bash", "shell"):
                argv = ["bash", "-e", "-c", code]
            elif language == "python":
                script = os.path.join(work, ".step%d.py" % n)
                with open(script, "w") as f:
                    f.write(code)
                argv = ["/usr/bin/python3", script]
            else:
                raise AssertionError("%s: a ```%s block can only be saved (file=NAME)" % (where, language))
            r = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=600,
                               stdin=subprocess.DEVNULL)
            out = r.stdout + r.stderr
            assert r.returncode == 0, "%s exited %d:\n%s\n--- its output:\n%s" % (where, r.returncode, code, out[-4000:])
            if "expect" in attrs:
                assert attrs["expect"] in out, "%s: %r not in its output:\n%s" % (where, attrs["expect"], out[-4000:])
            print("ok: %s" % where, flush=True)


def main():
    binary, source = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    pages = [os.path.join(source, "README.md")] + sorted(glob.glob(os.path.join(source, "docs", "*.md")))
    count = 0
    for page in pages:
        for name, steps in walkthroughs(page).items():
            run(binary, source, page, name, steps)
            count += 1
    assert count > 0, "no walkthrough found: the marks are gone"
    print("ok: %d walkthroughs ran as written" % count)


if __name__ == "__main__":
    main()
