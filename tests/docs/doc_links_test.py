#!/usr/bin/python3
"""Every relative link in README.md and docs/*.md resolves.

A link [text](target) or [text]: target that is not a URL must name a file or
folder of the repository, and its #anchor, if any, a heading of that Markdown
file as GitHub makes anchors: lower case, punctuation other than - and _
dropped, spaces turned into -, repeated headings numbered -1, -2, ...
Links inside code (fenced blocks and `spans`) are not links. A Markdown file
named in plain text (`REFERENCE.md`, `../notes/x.md`) must exist too, beside
the page or from the repository's root: a reader follows those as well.

usage: doc_links_test.py SOURCE_DIR   (exit 0 when every link resolves; 1 with
one line per broken link: file:line: target: why)
"""
import glob
import os
import re
import sys

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$")
HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")
CODE_SPAN = re.compile(r"(`+)(?:.+?)\1")
BARE_MD = re.compile(r"(?<![\w./-])((?:\.\.?/)*[\w-][\w./-]*\.md)(?![\w/])")


def github_anchor(heading):
    """The anchor GitHub gives a heading's text (before de-duplication)."""
    text = re.sub(r"`([^`]*)`", r"\1", heading)                 # code spans keep their text
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)      # links keep their text
    text = re.sub(r"<[^>]+>", "", text)                         # inline HTML goes
    text = text.strip().lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def lines_outside_code(path):
    """(line number, text) of the lines not in fenced code blocks."""
    fenced = None
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            m = FENCE.match(line)
            if m:
                if fenced is None:
                    fenced = m.group(1)
                elif m.group(1) == fenced:
                    fenced = None
                continue
            if fenced is None:
                yield number, line.rstrip("\n")


_anchors = {}


def anchors_of(path):
    if path not in _anchors:
        seen = {}
        found = set()
        for _, line in lines_outside_code(path):
            for name in HTML_ANCHOR.findall(line):
                found.add(name)
            m = HEADING.match(line)
            if not m:
                continue
            base = github_anchor(m.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else "%s-%d" % (base, n))
        _anchors[path] = found
    return _anchors[path]


def links_of(path):
    for number, line in lines_outside_code(path):
        m = REFERENCE.match(line)
        if m:
            yield number, m.group(1)
            continue
        for target in INLINE.findall(CODE_SPAN.sub("", line)):
            yield number, target


def bare_names_of(path):
    """Markdown file names in plain text: not in code, not a link target, not a URL."""
    for number, line in lines_outside_code(path):
        if REFERENCE.match(line):
            continue
        text = INLINE.sub(lambda m: m.group(0)[: m.group(0).index("](") + 1], CODE_SPAN.sub("", line))
        text = re.sub(r"[a-zA-Z][a-zA-Z0-9+.-]*://\S+", "", text)
        for name in BARE_MD.findall(text):
            yield number, name


def problems(source_dir):
    root = os.path.realpath(source_dir)
    files = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    out = []
    for path in files:
        shown = os.path.relpath(path, root)
        for number, target in links_of(path):
            if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):
                continue  # a URL (https:, mailto:): not checked here
            where = "%s:%d: %s: " % (shown, number, target)
            name, _, anchor = target.partition("#")
            resolved = os.path.realpath(os.path.join(os.path.dirname(path), name)) if name else path
            if not (resolved == root or resolved.startswith(root + os.sep)):
                out.append(where + "outside the repository")
                continue
            if not os.path.exists(resolved):
                out.append(where + "no such file " + os.path.relpath(resolved, root))
                continue
            if anchor and resolved.endswith(".md") and anchor not in anchors_of(resolved):
                out.append(where + "no heading with anchor #" + anchor + " in " + os.path.relpath(resolved, root))
        for number, name in bare_names_of(path):
            beside = os.path.realpath(os.path.join(os.path.dirname(path), name))
            from_root = os.path.realpath(os.path.join(root, name))
            if not any(p.startswith(root + os.sep) and os.path.exists(p) for p in (beside, from_root)):
                out.append("%s:%d: %s: named in the text, but no such file in the repository" % (shown, number, name))
    return out


def self_test():
    """The anchor rules on headings whose anchors GitHub is known to make."""
    cases = {
        "Rooms and libraries": "rooms-and-libraries",
        "A full disk: checkpoints and metrics": "a-full-disk-checkpoints-and-metrics",
        "What `moonseed ctl` does": "what-moonseed-ctl-does",
        "Replay (R2D2)": "replay-r2d2",
        "Episode ends: \"next step\" autoreset": "episode-ends-next-step-autoreset",
        "metrics.jsonl / status": "metricsjsonl--status",
        "snake_case names": "snake_case-names",
    }
    for heading, anchor in cases.items():
        got = github_anchor(heading)
        if got != anchor:
            sys.exit("anchor rule: %r gives %r, GitHub gives %r" % (heading, got, anchor))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    self_test()
    found = problems(sys.argv[1])
    for p in found:
        print(p)
    if found:
        print("%d broken link(s) in README.md and docs/*.md" % len(found))
        sys.exit(1)
    print("every relative link in README.md and docs/*.md resolves")
