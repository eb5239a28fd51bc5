// Picks the torch device the learner's model lives on.
//
// Pure function, thread-safe.
#pragma once

#include <string>

#include <torch/torch.h>

namespace moonseed::models {

// "auto": CUDA when this LibTorch build sees a GPU, else CPU. "cpu": CPU.
// "cuda": CUDA, and std::invalid_argument when no GPU is usable (a run that
// asked for a GPU should not silently train on the CPU). Any other string
// throws std::invalid_argument naming it.
torch::Device choose_device(const std::string& want);

}  // namespace moonseed::models
