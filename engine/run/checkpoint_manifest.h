// Checkpoint manifests (docs/reliability.md "Checkpoints and resume"): the
// file that seals a checkpoint, written after every other file of it, so that
// a later load can tell a checkpoint as it was written from one damaged since
// (bits flipped on disk, a file truncated or replaced).
//
// The manifest of FILE is FILE.sum (ckpt-1200.pt.sum, rank-1200.part.sum),
// text, a comment line then one line per file of the checkpoint:
//   # moonseed checkpoint manifest 1: CRC-32C size name
//   5f0c2a91 1843212 ckpt-1200.pt
//   0b77e3d4 52428800 ckpt-1200.pt.replay
// The CRC-32C (Castagnoli, explog/format.h) is 8 lowercase hex digits, the
// size in bytes, the name a file name in the manifest's own directory (so a
// run directory can be moved). Lines starting with '#' are comments.
//
// seal_checkpoint writes it crash-safely (FILE.sum.partial, fsync, rename,
// fsync of the directory) once FILE and its companions are complete, so a
// crash leaves no manifest (the checkpoint is unsealed) or a correct one.
// unseal_checkpoint removes it before FILE is written again (a checkpoint of
// the same step), so that an old manifest never describes new files.
//
// Thread-safety: free functions on files; callers keep one writer per file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace moonseed::engine {

// One file of a checkpoint as its manifest records it.
struct ManifestEntry {
  std::string name;  // a file name, in the manifest's directory
  uint64_t size = 0;
  uint32_t crc32c = 0;
  bool operator==(const ManifestEntry& o) const { return name == o.name && size == o.size && crc32c == o.crc32c; }
};

// FILE's manifest: FILE.sum.
std::string manifest_path(const std::string& file);

// The manifest's text for `entries` (format above).
std::string manifest_text(const std::vector<ManifestEntry>& entries);
// The entries of a manifest's text; `path` names it in errors. Throws
// std::runtime_error naming the path and the line for anything that is not
// a comment or "CRC SIZE NAME", and for a manifest that lists no file.
std::vector<ManifestEntry> parse_manifest(const std::string& text, const std::string& path);

// The file's name, size and CRC-32C, read through once. Throws
// std::runtime_error naming the path and the errno text when it cannot be read.
ManifestEntry checksum_file(const std::string& path);

// Writes FILE.sum over FILE and FILE + each suffix in `companions` (R2D2:
// ".replay"), each of which must be there. Throws std::runtime_error naming
// the file and the reason ("No space left on device"), leaving no .partial:
// the checkpoint then stays unsealed.
void seal_checkpoint(const std::string& file, const std::vector<std::string>& companions);
// Removes FILE.sum, durably (the directory is fsynced), when there is one.
// Throws std::runtime_error when it is there and cannot be removed.
void unseal_checkpoint(const std::string& file);

// What verify_checkpoint found.
struct CheckpointCheck {
  bool sealed = false;  // FILE.sum is there
  // Why the checkpoint is damaged, "" when every file its manifest lists has
  // the recorded size and CRC (or it has no manifest). Names the file and
  // both values, e.g. "CRC-32C mismatch in /…/ckpt-1200.pt (file 0x…,
  // recorded 0x…; 1843212 bytes); it was damaged after it was written".
  std::string damage;
  bool good() const { return damage.empty(); }
};

// Reads every file FILE.sum lists (FILE's own entry alone without
// `companions`: what `moonseed eval` loads) and compares it with the record.
// Without a FILE.sum: unsealed, nothing compared (a checkpoint of an older
// build, or one whose save was interrupted before its manifest). Never throws
// for a damaged checkpoint: an unreadable, missing or malformed file is `damage`.
CheckpointCheck verify_checkpoint(const std::string& file, bool companions = true);

// Writes `content` to PATH crash-safely: PATH.partial, fsync, rename over
// PATH, fsync of the directory. Throws std::runtime_error naming the file
// and the errno text; a failed write leaves no PATH.partial.
void write_file_durably(const std::string& path, const std::string& content);

}  // namespace moonseed::engine
