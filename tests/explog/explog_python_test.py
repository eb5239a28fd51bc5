"""The Python reader (scripts/python/moonseed_explog.py) against the C++ writer.

Run by ctest through explog_python_test.sh: argv[1] is explog_test_writer,
which writes N known records (tests/explog/explog_test_records.h: every
value is a formula of the record index i, repeated below).
"""

import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

import moonseed_explog as mx

N = 50


def expect_known(r, i):
    assert r.actor_id == i % 3, (i, r.actor_id)
    assert r.env_id == 100 + i
    assert r.episode_id == i // 2 - 5
    assert r.first_step == i * 10
    assert r.steps == i % 5
    assert r.flags == i % 16
    assert r.is_first == bool(i & 1) and r.is_last == bool(i & 2)
    assert r.terminated == bool(i & 4) and r.truncated == bool(i & 8)
    assert r.wall_time_ns == 1000000000000 + i * 1000
    assert r.learner_step == i * 7
    assert r.config_version == 0xFFFFFFFF00000000 + i
    t = np.arange(r.steps)
    e6 = np.arange(6)
    obs = (i * 31 + t[:, None] * 7 + e6[None, :]) % 256
    assert r.columns["obs"].dtype == np.uint8 and r.columns["obs"].shape == (r.steps, 2, 3)
    assert np.array_equal(r.columns["obs"], obs.reshape(r.steps, 2, 3).astype(np.uint8))
    assert r.columns["action"].dtype == np.int32 and r.columns["action"].shape == (r.steps,)
    assert np.array_equal(r.columns["action"], i * 100 + t - 50)
    sign = 1 if i % 2 == 0 else -1
    count = sign * ((i << 40) + t[:, None] * 2 + np.arange(2)[None, :])
    assert r.columns["count"].dtype == np.int64 and r.columns["count"].shape == (r.steps, 2)
    assert np.array_equal(r.columns["count"], count)
    assert r.columns["logp"].dtype == np.float32
    assert np.array_equal(r.columns["logp"], (-0.5 * i - 0.25 * t).astype(np.float32))
    assert r.columns["reward"].dtype == np.float64
    assert np.array_equal(r.columns["reward"], i + t / 8.0)


def main():
    writer = sys.argv[1]
    tmp = tempfile.mkdtemp(prefix="explog-py-")
    try:
        log_dir = os.path.join(tmp, "log")
        out = subprocess.run([writer, "known", log_dir, str(N)], check=True,
                             stdout=subprocess.PIPE, universal_newlines=True).stdout
        assert "durable=%d" % N in out, out

        log = mx.LogReader(log_dir, check_data_crc=True)
        assert log.schema.run_id == "run-known"
        assert '"action": {"n": 4}' in log.schema.spec
        assert log.schema.codec == "lz4"
        assert [(c.name, c.dtype_name, c.shape) for c in log.schema.columns] == [
            ("obs", "u8", (2, 3)), ("action", "i32", ()), ("count", "i64", (2,)),
            ("logp", "f32", ()), ("reward", "f64", ())]
        assert len(log.segments) >= 2 and all(s.has_footer for s in log.segments)
        assert len(log.chunks) > len(log.segments)
        assert log.problems == [] and log.verify() == []
        records = list(log.records())
        assert len(records) == N
        for i, r in enumerate(records):
            expect_known(r, i)

        # Filters: episode 3 is records 16 and 17; actor 1 has i % 3 == 1.
        assert [r.env_id - 100 for r in log.records(episode_id=3)] == [16, 17]
        assert [r.env_id - 100 for r in log.records(actor_id=1)] == list(range(1, N, 3))
        lo, hi = 1000000000000 + 10 * 1000, 1000000000000 + 12 * 1000
        assert [r.env_id - 100 for r in log.records(min_wall_time_ns=lo,
                                                    max_wall_time_ns=hi)] == [10, 11, 12]

        # A torn tail: the first segment without its footer, cut inside its last chunk.
        first = log.segments[0]
        last = first.chunks[-1]
        kept = sum(c.record_count for c in first.chunks[:-1])
        torn_dir = os.path.join(tmp, "torn")
        os.mkdir(torn_dir)
        torn = os.path.join(torn_dir, "experience-000001.mslog.partial")
        with open(first.path, "rb") as f:
            data = f.read()
        with open(torn, "wb") as f:
            f.write(data[:last.offset + 40])
        torn_log = mx.LogReader(torn_dir)
        assert len(torn_log.problems) == 1, torn_log.problems
        want = "torn at offset %d of %s (%d complete chunks before it)" % (
            last.offset, torn, len(first.chunks) - 1)
        assert torn_log.problems[0].startswith(want), torn_log.problems
        torn_records = list(torn_log.records())
        assert len(torn_records) == kept
        for i, r in enumerate(torn_records):
            expect_known(r, i)

        # A flipped data byte: verify() names the chunk and its offset.
        bad_dir = os.path.join(tmp, "bad")
        os.mkdir(bad_dir)
        bad = os.path.join(bad_dir, "experience-000001.mslog")
        second = first.chunks[1]
        corrupt = bytearray(data)
        corrupt[first.chunks[2].offset - 3] ^= 0x10
        with open(bad, "wb") as f:
            f.write(corrupt)
        problems = mx.LogReader(bad_dir).verify()
        assert problems == ["chunk 1 at offset %d of %s: chunk data checksum mismatch"
                            % (second.offset, bad)], problems

        # Filtered columns, and a log whose segments were written with other
        # settings (a resumed run): each segment is decoded with its own.
        mixed_dir = os.path.join(tmp, "mixed")
        for mode in ("known", "filtered"):
            subprocess.run([writer, mode, mixed_dir, str(N)], check=True, stdout=subprocess.PIPE)
        mixed = mx.LogReader(mixed_dir, check_data_crc=True)
        assert mixed.problems == [] and mixed.verify() == [], mixed.problems
        filters = {tuple(c.filter for c in seg.schema.columns) for seg in mixed.segments}
        assert filters == {("none",) * 5, ("xor_previous",) * 5}, filters
        mixed_records = list(mixed.records())
        assert len(mixed_records) == 2 * N
        for i, r in enumerate(mixed_records):
            expect_known(r, i % N)
    finally:
        shutil.rmtree(tmp)
    print("explog python reader: OK")


if __name__ == "__main__":
    main()
