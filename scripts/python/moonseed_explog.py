"""Reader for Moonseed experience logs (docs/experience-log-format.md).

Needs only numpy and lz4 (Debian: python3-numpy, python3-lz4).

    import moonseed_explog
    log = moonseed_explog.LogReader("runs/cartpole/experience")   # a directory or one file
    print(log.schema.run_id, [c.name for c in log.schema.columns])
    for rec in log.records(episode_id=12):
        print(rec.actor_id, rec.first_step, rec.steps, rec.columns["reward"])
    print(log.problems)   # torn tail after a crash, unusable footer, skipped files
    print(log.verify())   # [] when every checksum holds

A record's columns are numpy arrays of shape (steps, *column shape), as they
were written: a column stored with a filter (Column.filter "xor_previous") is
unfiltered when read. Segments of one log share their columns; each segment's
own codec and filters are in segment.schema. Opening
reads the headers and the index only (footer, or a scan of chunk headers for a
segment without footer); chunk data is read when records are asked for, and
the filters skip chunks by their index entry without reading them.

Header CRCs are always checked. Data CRCs are checked when check_data_crc is
true (the CRC is computed in pure Python, about 10 MB/s), and always by
verify(). A chunk that cannot be decoded raises FormatError from records();
verify() lists them all instead.
"""

import mmap
import os
import struct

import numpy as np
import lz4.block

FORMAT_VERSION = 2         # written by this build's writer
OLDEST_FORMAT_VERSION = 1  # version 1 has no column filters
FILE_MAGIC = b"MSEXPLOG"
CHUNK_MAGIC = b"MSCK"
FOOTER_MAGIC = b"MSFT"
TRAILER_MAGIC = b"MSEXPEND"
CHUNK_FIXED_SIZE = 64
TRAILER_SIZE = 20

IS_FIRST, IS_LAST, TERMINATED, TRUNCATED = 1, 2, 4, 8

DTYPES = {1: np.dtype("<u1"), 2: np.dtype("<i4"), 3: np.dtype("<i8"), 4: np.dtype("<f4"),
          5: np.dtype("<f8")}
DTYPE_NAMES = {1: "u8", 2: "i32", 3: "i64", 4: "f32", 5: "f64"}
FILTERS = {0: "none", 1: "xor_previous"}

# One record's meta in the meta block: 56 bytes, packed, little-endian.
META_DTYPE = np.dtype([
    ("episode_id", "<i8"), ("first_step", "<i8"), ("wall_time_ns", "<i8"),
    ("learner_step", "<i8"), ("config_version", "<u8"), ("actor_id", "<i4"),
    ("env_id", "<i4"), ("steps", "<i4"), ("flags", "u1"), ("reserved", "V3")])
assert META_DTYPE.itemsize == 56

_CHUNK_FIXED = struct.Struct("<4sIII qqqq QII")
_FOOTER_ENTRY = struct.Struct("<QII qqqq")


class FormatError(Exception):
    """A file or chunk that does not decode; the message says what and where."""


def _crc_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC_TABLE = _crc_table()


def crc32c(data, crc=0):
    """CRC-32C (Castagnoli); crc continues an earlier result."""
    table = _CRC_TABLE
    c = crc ^ 0xFFFFFFFF
    for b in bytes(data):
        c = table[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


class Column:
    def __init__(self, name, dtype_code, shape, filter_code=0):
        if dtype_code not in DTYPES:
            raise FormatError("column %r has unknown dtype code %d" % (name, dtype_code))
        if filter_code not in FILTERS:
            raise FormatError("column %r has unknown filter %d" % (name, filter_code))
        self.name = name
        self.filter = FILTERS[filter_code]
        self.dtype = DTYPES[dtype_code]
        self.dtype_name = DTYPE_NAMES[dtype_code]
        self.shape = tuple(shape)
        self.step_bytes = self.dtype.itemsize * int(np.prod(self.shape, dtype=np.int64))

    def __repr__(self):
        return "Column(%r, %s, %s)" % (self.name, self.dtype_name, list(self.shape))


class Schema:
    def __init__(self, run_id, codec, spec, columns):
        self.run_id = run_id
        self.codec = codec
        self.spec = spec          # the writer's free-form (JSON) text
        self.columns = columns    # list of Column

    def layout(self):
        """What the segments of one log share; codec and filters are per segment."""
        return [(c.name, c.dtype_name, c.shape) for c in self.columns]


class Chunk:
    """An index entry: where a chunk is and what its records cover."""

    def __init__(self, segment, index, offset, record_count, min_wall_time_ns, max_wall_time_ns,
                 min_episode_id, max_episode_id, actor_ids):
        self.segment = segment
        self.index = index          # within its file
        self.offset = offset
        self.record_count = record_count
        self.min_wall_time_ns = min_wall_time_ns
        self.max_wall_time_ns = max_wall_time_ns
        self.min_episode_id = min_episode_id
        self.max_episode_id = max_episode_id
        self.actor_ids = tuple(actor_ids)

    def where(self):
        return "chunk %d at offset %d of %s" % (self.index, self.offset, self.segment.path)


class Segment:
    def __init__(self, path, data, header_size, schema):
        self.path = path
        self.schema = schema        # this segment's header: its codec and column filters
        self.data = data            # mmap (or b"" for an empty file)
        self.size = len(data)
        self.header_size = header_size
        self.has_footer = False
        self.data_end = self.size
        self.torn_at = None
        self.chunks = []


class Record:
    """One unroll: the meta fields as attributes, columns by name."""

    __slots__ = ("actor_id", "env_id", "episode_id", "first_step", "steps", "flags",
                 "wall_time_ns", "learner_step", "config_version", "columns")

    @property
    def is_first(self):
        return bool(self.flags & IS_FIRST)

    @property
    def is_last(self):
        return bool(self.flags & IS_LAST)

    @property
    def terminated(self):
        return bool(self.flags & TERMINATED)

    @property
    def truncated(self):
        return bool(self.flags & TRUNCATED)


def _read_str(buf, pos):
    (n,) = struct.unpack_from("<I", buf, pos)
    pos += 4
    if pos + n > len(buf):
        raise FormatError("file header ends inside a string")
    return bytes(buf[pos:pos + n]).decode("utf-8"), pos + n


def _decode_file_header(data):
    if len(data) < 16:
        raise FormatError("file of %d bytes has no complete header" % len(data))
    magic, version, body_size = struct.unpack_from("<8sII", data, 0)
    if magic != FILE_MAGIC:
        raise FormatError("bad file header magic")
    if not OLDEST_FORMAT_VERSION <= version <= FORMAT_VERSION:
        raise FormatError("format version %d, this reader reads %d to %d"
                          % (version, OLDEST_FORMAT_VERSION, FORMAT_VERSION))
    size = 16 + body_size + 4
    if size > len(data):
        raise FormatError("file of %d bytes has no complete header" % len(data))
    (crc,) = struct.unpack_from("<I", data, size - 4)
    if crc32c(data[:size - 4]) != crc:
        raise FormatError("file header checksum mismatch")
    body = bytes(data[16:size - 4])
    run_id, pos = _read_str(body, 0)
    codec, pos = _read_str(body, pos)
    spec, pos = _read_str(body, pos)
    (ncols,) = struct.unpack_from("<I", body, pos)
    pos += 4
    columns = []
    for _ in range(ncols):
        name, pos = _read_str(body, pos)
        dtype_code, rank = struct.unpack_from("<BB", body, pos)
        pos += 2
        shape = struct.unpack_from("<%dq" % rank, body, pos)
        pos += 8 * rank
        filter_code = 0
        if version >= 2:
            (filter_code,) = struct.unpack_from("<B", body, pos)
            pos += 1
        columns.append(Column(name, dtype_code, shape, filter_code))
    if codec not in ("lz4", "none"):
        raise FormatError("unknown codec %r" % codec)
    return Schema(run_id, codec, spec, columns), size


def _decode_chunk_header(data, offset, end, ncols):
    """(header dict) for the chunk header at offset; FormatError if bad or past end."""
    if end - offset < CHUNK_FIXED_SIZE:
        raise FormatError("chunk header runs past offset %d" % end)
    (magic, header_size, records, nblocks, min_wall, max_wall, min_ep, max_ep, data_size,
     data_crc, nactors) = _CHUNK_FIXED.unpack_from(data, offset)
    if magic != CHUNK_MAGIC:
        raise FormatError("bad chunk magic")
    if nblocks != ncols + 1:
        raise FormatError("chunk has %d blocks, the schema needs %d" % (nblocks, ncols + 1))
    if records == 0 or nactors == 0 or nactors > records:
        raise FormatError("chunk claims %d records of %d actors" % (records, nactors))
    if header_size != CHUNK_FIXED_SIZE + 8 * nblocks + 4 * nactors + 4:
        raise FormatError("chunk header size %d is inconsistent" % header_size)
    if header_size > end - offset:
        raise FormatError("chunk header runs past offset %d" % end)
    (crc,) = struct.unpack_from("<I", data, offset + header_size - 4)
    if crc32c(data[offset:offset + header_size - 4]) != crc:
        raise FormatError("chunk header checksum mismatch")
    sizes = struct.unpack_from("<%dI" % (2 * nblocks), data, offset + CHUNK_FIXED_SIZE)
    blocks = [(sizes[2 * i], sizes[2 * i + 1]) for i in range(nblocks)]
    actors = struct.unpack_from("<%di" % nactors, data, offset + CHUNK_FIXED_SIZE + 8 * nblocks)
    if sum(s for _, s in blocks) != data_size:
        raise FormatError("chunk blocks do not add up to its data size")
    if blocks[0][0] != 56 * records:
        raise FormatError("meta block of %d bytes for %d records" % (blocks[0][0], records))
    return {"header_size": header_size, "records": records, "min_wall": min_wall,
            "max_wall": max_wall, "min_ep": min_ep, "max_ep": max_ep, "data_size": data_size,
            "data_crc": data_crc, "blocks": blocks, "actors": actors}


class LogReader:
    """Opens one segment file or a directory of them (*.mslog, *.mslog.partial, by name)."""

    def __init__(self, path, check_data_crc=False):
        self.path = path
        self.check_data_crc = check_data_crc
        self.schema = None
        self.segments = []
        self.chunks = []
        self.problems = []  # strings: torn tails, unusable footers, skipped files
        if os.path.isdir(path):
            names = sorted(n for n in os.listdir(path)
                           if n.endswith(".mslog") or n.endswith(".mslog.partial"))
            files = [os.path.join(path, n) for n in names
                     if os.path.isfile(os.path.join(path, n))]
        elif os.path.isfile(path):
            files = [path]
        else:
            raise FileNotFoundError("%s is neither a segment file nor a directory" % path)
        for f in files:
            self._open_file(f)
        if not self.segments:
            raise FormatError("no readable segment in %s%s" % (
                path, (": " + self.problems[0]) if self.problems else ""))

    def _open_file(self, path):
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        try:
            schema, header_size = _decode_file_header(data)
        except (FormatError, struct.error) as e:
            if "no complete header" in str(e):
                self.problems.append("torn at offset 0 of %s (0 complete chunks before it): %s"
                                     % (path, e))
            else:
                self.problems.append("%s: %s" % (path, e))
            return
        if self.schema is None:
            self.schema = schema
        elif schema.layout() != self.schema.layout():
            self.problems.append("%s: columns differ from %s; segment skipped"
                                 % (path, self.segments[0].path))
            return
        seg = Segment(path, data, header_size, schema)
        self.segments.append(seg)
        if not self._index_by_footer(seg):
            self._index_by_scan(seg)
        self.chunks.extend(seg.chunks)

    def _index_by_footer(self, seg):
        if seg.size < seg.header_size + TRAILER_SIZE:
            return False
        footer_offset, footer_crc, magic = struct.unpack_from("<QI8s", seg.data,
                                                              seg.size - TRAILER_SIZE)
        if magic != TRAILER_MAGIC:
            return False
        try:
            end = seg.size - TRAILER_SIZE
            if not seg.header_size <= footer_offset <= end - 16:
                raise FormatError("trailer points at offset %d" % footer_offset)
            footer = seg.data[footer_offset:end]
            if footer[:4] != FOOTER_MAGIC:
                raise FormatError("bad footer magic")
            if crc32c(footer) != footer_crc:
                raise FormatError("footer checksum mismatch")
            count, total = struct.unpack_from("<IQ", footer, 4)
            pos, chunks = 16, []
            for i in range(count):
                (offset, records, nactors, min_wall, max_wall, min_ep,
                 max_ep) = _FOOTER_ENTRY.unpack_from(footer, pos)
                pos += _FOOTER_ENTRY.size
                actors = struct.unpack_from("<%di" % nactors, footer, pos)
                pos += 4 * nactors
                if offset < seg.header_size or offset >= footer_offset or (
                        chunks and offset <= chunks[-1].offset):
                    raise FormatError("footer entry %d has offset %d" % (i, offset))
                chunks.append(Chunk(seg, i, offset, records, min_wall, max_wall, min_ep, max_ep,
                                    actors))
            if pos != len(footer) or sum(c.record_count for c in chunks) != total:
                raise FormatError("footer totals do not match its entries")
        except (FormatError, struct.error) as e:
            self.problems.append("footer at offset %d of %s is unusable (%s); index rebuilt by "
                                 "scanning chunk headers" % (footer_offset, seg.path, e))
            return False
        seg.chunks = chunks
        seg.has_footer = True
        seg.data_end = footer_offset
        return True

    def _find_next_chunk(self, seg, start):
        ncols = len(self.schema.columns)
        pos = seg.data.find(CHUNK_MAGIC, start)
        while pos >= 0:
            try:
                h = _decode_chunk_header(seg.data, pos, seg.size, ncols)
                if h["header_size"] + h["data_size"] <= seg.size - pos:
                    return pos
            except (FormatError, struct.error):
                pass
            pos = seg.data.find(CHUNK_MAGIC, pos + 1)
        return None

    def _index_by_scan(self, seg):
        ncols = len(self.schema.columns)
        pos, complete = seg.header_size, 0
        while pos < seg.size:
            if seg.data[pos:pos + 4] == FOOTER_MAGIC:
                seg.data_end = pos
                return
            try:
                h = _decode_chunk_header(seg.data, pos, seg.size, ncols)
                total = h["header_size"] + h["data_size"]
                if total <= seg.size - pos:
                    seg.chunks.append(Chunk(seg, complete, pos, h["records"], h["min_wall"],
                                            h["max_wall"], h["min_ep"], h["max_ep"], h["actors"]))
                    complete += 1
                    pos += total
                    continue
                why = "its data runs past the end of the file"
            except (FormatError, struct.error) as e:
                why = str(e)
            nxt = self._find_next_chunk(seg, pos + 1)
            if nxt is None:
                seg.torn_at = seg.data_end = pos
                self.problems.append("torn at offset %d of %s (%d complete chunks before it): %s"
                                     % (pos, seg.path, complete, why))
                return
            self.problems.append("chunk %d at offset %d of %s has a bad header (%s); skipped to "
                                 "the next chunk at offset %d" % (complete, pos, seg.path, why, nxt))
            pos = nxt

    def close(self):
        """Unmaps the files; records already read stay valid."""
        for s in self.segments:
            if isinstance(s.data, mmap.mmap):
                s.data.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def record_count(self):
        return sum(c.record_count for c in self.chunks)

    def read_chunk(self, chunk, check_data_crc=None):
        """The records of one Chunk (an entry of self.chunks); FormatError names it."""
        try:
            return self._decode_chunk(chunk, self.check_data_crc if check_data_crc is None
                                      else check_data_crc)
        except (FormatError, struct.error, lz4.block.LZ4BlockError, ValueError) as e:
            raise FormatError("%s: %s" % (chunk.where(), e)) from None

    def _decode_chunk(self, chunk, check_crc):
        seg = chunk.segment
        h = _decode_chunk_header(seg.data, chunk.offset, seg.data_end, len(self.schema.columns))
        start = chunk.offset + h["header_size"]
        if h["data_size"] > seg.data_end - start:
            raise FormatError("chunk data runs past offset %d" % seg.data_end)
        data = seg.data[start:start + h["data_size"]]
        if check_crc and crc32c(data) != h["data_crc"]:
            raise FormatError("chunk data checksum mismatch")
        raws, pos = [], 0
        for i, (raw_size, stored_size) in enumerate(h["blocks"]):
            stored = data[pos:pos + stored_size]
            pos += stored_size
            if raw_size == 0:
                raw = b""
            elif seg.schema.codec == "none":
                raw = stored
            else:
                raw = lz4.block.decompress(stored, uncompressed_size=raw_size)
            if len(raw) != raw_size:
                raise FormatError("block %d decompresses to %d bytes, the header says %d"
                                  % (i, len(raw), raw_size))
            raws.append(raw)
        meta = np.frombuffer(raws[0], dtype=META_DTYPE)
        records = []
        for m in meta:
            r = Record()
            for name in ("actor_id", "env_id", "episode_id", "first_step", "steps", "flags",
                         "wall_time_ns", "learner_step", "config_version"):
                setattr(r, name, int(m[name]))
            r.columns = {}
            records.append(r)
        for col, raw in zip(seg.schema.columns, raws[1:]):
            pos = 0
            for r in records:
                n = col.step_bytes * r.steps
                if pos + n > len(raw):
                    raise FormatError("column %r block is shorter than its records' steps need"
                                      % col.name)
                if col.filter == "xor_previous" and r.steps > 1:
                    # Stored: the first step, then each step XOR the one before;
                    # a running XOR over the steps gives the values back.
                    steps = np.frombuffer(raw, dtype=np.uint8, count=n, offset=pos)
                    values = np.bitwise_xor.accumulate(steps.reshape(r.steps, col.step_bytes),
                                                       axis=0).view(col.dtype).reshape(-1)
                else:
                    values = np.frombuffer(raw, dtype=col.dtype, count=n // col.dtype.itemsize,
                                           offset=pos)
                r.columns[col.name] = values.reshape((r.steps,) + col.shape)
                pos += n
            if pos != len(raw):
                raise FormatError("column %r block is %d bytes, its records' steps need %d"
                                  % (col.name, len(raw), pos))
        return records

    def find_chunks(self, episode_id=None, actor_id=None, min_wall_time_ns=None,
                    max_wall_time_ns=None):
        """The index entries that may hold matching records (no chunk data is read)."""
        out = []
        for c in self.chunks:
            if episode_id is not None and not c.min_episode_id <= episode_id <= c.max_episode_id:
                continue
            if actor_id is not None and actor_id not in c.actor_ids:
                continue
            if min_wall_time_ns is not None and c.max_wall_time_ns < min_wall_time_ns:
                continue
            if max_wall_time_ns is not None and c.min_wall_time_ns > max_wall_time_ns:
                continue
            out.append(c)
        return out

    def records(self, episode_id=None, actor_id=None, min_wall_time_ns=None,
                max_wall_time_ns=None):
        """Yields the matching Records in log order (wall-time bounds inclusive)."""
        for chunk in self.find_chunks(episode_id, actor_id, min_wall_time_ns, max_wall_time_ns):
            for r in self.read_chunk(chunk):
                if episode_id is not None and r.episode_id != episode_id:
                    continue
                if actor_id is not None and r.actor_id != actor_id:
                    continue
                if min_wall_time_ns is not None and r.wall_time_ns < min_wall_time_ns:
                    continue
                if max_wall_time_ns is not None and r.wall_time_ns > max_wall_time_ns:
                    continue
                yield r

    def verify(self):
        """Every problem: those found at open, then each chunk that fails a check."""
        out = list(self.problems)
        for c in self.chunks:
            try:
                self.read_chunk(c, check_data_crc=True)
            except FormatError as e:
                out.append(str(e))
        return out
