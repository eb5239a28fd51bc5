// Picks the torch device the learner's model lives on, and sets up the CPU
// threads that run the nets.
//
// choose_device: pure function, thread-safe. prepare_math_thread: affects the
// calling thread only.
#pragma once

#include <string>

#include <torch/torch.h>

namespace moonseed::models {

// "auto": CUDA when this LibTorch build sees a GPU, else CPU. "cpu": CPU.
// "cuda": CUDA, and std::invalid_argument when no GPU is usable (a run that
// asked for a GPU should not silently train on the CPU). Any other string
// throws std::invalid_argument naming it.
torch::Device choose_device(const std::string& want);

// Call at the start of every thread that runs nets (the learner's inference and
// training threads): LibTorch's intra-op threads for this thread (OpenMP keeps
// the count per thread), and denormal floats flushed to zero (x86's FTZ and DAZ,
// also per thread). A net whose weights, gradients or Adam moments drift to
// |x| < 1.2e-38 otherwise runs its float math on the CPU's slow path for those
// values: MinAtar's R2D2 learner fell from 11.7k to 5.5k frames/s a minute
// into a run (docs/performance.md "Denormal floats"). Returns whether the
// flush is on (false on a CPU without it; nothing else changes then).
bool prepare_math_thread(int intra_op_threads);

}  // namespace moonseed::models
