// Writes the fuzz target's seed corpus (tests/rpc/fuzz_corpus/, committed, used
// by .ci/fuzz): the encoded sample frames, one file each.
// Usage: fuzz_corpus_writer DIR          writes DIR/frame-NN
//        fuzz_corpus_writer --check DIR  exits 1 unless DIR holds exactly those files
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/rpc/sample_messages.h"

namespace {

std::string name_of(size_t index) {
  char name[32];
  std::snprintf(name, sizeof name, "frame-%02zu", index);
  return name;
}

std::vector<uint8_t> read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

int main(int argc, char** argv) {
  const bool check = argc == 3 && std::strcmp(argv[1], "--check") == 0;
  if (argc != 2 && !check) {
    std::fprintf(stderr, "usage: fuzz_corpus_writer [--check] DIR\n");
    return 2;
  }
  const std::filesystem::path dir = argv[argc - 1];
  const std::vector<std::vector<uint8_t>> frames = moonseed::rpc::testing::sample_frames();
  if (check) {
    size_t files = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) files += entry.is_regular_file();
    bool same = files == frames.size();
    for (size_t i = 0; i < frames.size() && same; ++i) same = read_bytes(dir / name_of(i)) == frames[i];
    if (!same) {
      std::fprintf(stderr, "%s is not the current corpus (%zu frames); rewrite it with: fuzz_corpus_writer %s\n",
                   dir.c_str(), frames.size(), dir.c_str());
      return 1;
    }
    std::printf("fuzz_corpus_writer: %s holds the %zu current frames\n", dir.c_str(), frames.size());
    return 0;
  }
  std::filesystem::create_directories(dir);
  for (size_t i = 0; i < frames.size(); ++i) {
    std::ofstream out(dir / name_of(i), std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(frames[i].data()), static_cast<std::streamsize>(frames[i].size()));
    if (!out) {
      std::fprintf(stderr, "cannot write %s\n", (dir / name_of(i)).c_str());
      return 1;
    }
  }
  std::printf("fuzz_corpus_writer: wrote %zu frames to %s\n", frames.size(), dir.c_str());
  return 0;
}
