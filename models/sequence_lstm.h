// lstm_sequence: one LSTM layer over a whole stored sequence, with the state
// zeroed where an episode starts, in one call (docs/recurrent-design.md).
//
//   x [T, B, I], h0 and c0 [B, H], keep [T, B] (0 zeroes the state before step t;
//   an undefined tensor: no resets) -> out [T, B, H] (h_t of every step) and the
//   state (h, c) after step T-1.
//
// The cell is torch::nn::LSTMCell's: gates i, f, g, o stacked in that order in
// w_ih [4H, I], w_hh [4H, H], b_ih [4H], b_hh [4H] (biases may be undefined);
//   i, f, o = sigmoid(.), g = tanh(.) of  x_t w_ih^T + b_ih + (h_{t-1} keep_t) w_hh^T + b_hh
//   c_t = f (c_{t-1} keep_t) + i g,   h_t = o tanh(c_t)
// so T steps of LSTMCell, with the state multiplied by keep_t before step t,
// give the same result (within float rounding).
//
// Kernels (the same function; tests hold them equal, forward and gradients):
//   kStepwise  a loop of LSTMCell steps: the reference, and the slowest.
//   kSplit     LibTorch's multi-step torch::lstm (cuDNN's on a GPU), one call per
//              run of steps in which no sequence resets; the state is masked
//              between calls.
//   kFused     our own autograd function: the input projection of all steps in one
//              GEMM, per step one addmm and one pass over the gates (activations,
//              cell update and reset mask together); backward per step one pass and
//              one GEMM, then the weight and input gradients as GEMMs over all steps.
//   kAuto      the fastest measured (bench/lstm_bench): kFused on the CPU, kSplit
//              on other devices (cuDNN; not measured here, which has no GPU).
// Differentiable in x, h0, c0 and the weights (keep is a constant). Without
// grad mode, or when nothing needs a gradient, kFused keeps no activations.
//
// Errors: std::invalid_argument naming the argument, its expected and received
// shape, for inputs whose shapes or dtypes disagree.
// Thread-safety: a pure function of its arguments; kFused's CPU loops use
// LibTorch's intra-op thread pool as its GEMMs do.
#pragma once

#include <torch/torch.h>

namespace moonseed::models {

struct LstmWeights {
  torch::Tensor w_ih, w_hh, b_ih, b_hh;
};

// The weights of `cell`, as views (training them trains the cell).
LstmWeights lstm_weights(const torch::nn::LSTMCellImpl& cell);

enum class LstmKernel { kAuto, kStepwise, kSplit, kFused };
const char* lstm_kernel_name(LstmKernel kernel);

struct LstmSequence {
  torch::Tensor out;   // [T, B, H]
  torch::Tensor h, c;  // [B, H]: the state after step T-1
};

LstmSequence lstm_sequence(const torch::Tensor& x, const torch::Tensor& h0, const torch::Tensor& c0,
                           const torch::Tensor& keep, const LstmWeights& weights,
                           LstmKernel kernel = LstmKernel::kAuto);

}  // namespace moonseed::models
