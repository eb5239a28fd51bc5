#include "models/sequence_lstm.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "base/text.h"

namespace moonseed::models {
namespace {

std::string tensor_text(const torch::Tensor& t) {
  if (!t.defined()) return "an undefined tensor";
  std::ostringstream os;
  os << base::shape_text(t.sizes().vec()) << " " << t.dtype() << " on " << t.device();
  return os.str();
}

void require(const char* name, const torch::Tensor& t, const std::vector<int64_t>& shape,
             const torch::Tensor& like) {
  if (t.defined() && t.sizes() == torch::IntArrayRef(shape) && t.scalar_type() == like.scalar_type() &&
      t.device() == like.device()) {
    return;
  }
  std::ostringstream os;
  os << "lstm_sequence: " << name << " must be " << base::shape_text(shape) << " " << like.dtype() << " on "
     << like.device() << " (as x), got " << tensor_text(t);
  throw std::invalid_argument(os.str());
}

struct Sizes {
  int64_t T, B, I, H;
};

Sizes check(const torch::Tensor& x, const torch::Tensor& h0, const torch::Tensor& c0, const torch::Tensor& keep,
            const LstmWeights& w) {
  if (!x.defined() || x.dim() != 3 || !x.is_floating_point()) {
    throw std::invalid_argument("lstm_sequence: x must be a floating [T, B, I] tensor, got " + tensor_text(x));
  }
  if (!w.w_hh.defined() || w.w_hh.dim() != 2 || w.w_hh.size(0) != 4 * w.w_hh.size(1)) {
    throw std::invalid_argument("lstm_sequence: w_hh must be [4H, H], got " + tensor_text(w.w_hh));
  }
  const Sizes s{x.size(0), x.size(1), x.size(2), w.w_hh.size(1)};
  require("w_ih", w.w_ih, {4 * s.H, s.I}, x);
  require("w_hh", w.w_hh, {4 * s.H, s.H}, x);
  if (w.b_ih.defined()) require("b_ih", w.b_ih, {4 * s.H}, x);
  if (w.b_hh.defined()) require("b_hh", w.b_hh, {4 * s.H}, x);
  require("h0", h0, {s.B, s.H}, x);
  require("c0", c0, {s.B, s.H}, x);
  if (keep.defined()) require("keep", keep, {s.T, s.B}, x);
  return s;
}

// ---- kStepwise and kSplit: LibTorch's own operations ------------------------------------------

LstmSequence stepwise(const torch::Tensor& x, const torch::Tensor& h0, const torch::Tensor& c0,
                      const torch::Tensor& keep, const LstmWeights& w) {
  torch::Tensor h = h0, c = c0;
  std::vector<torch::Tensor> outs;
  outs.reserve(static_cast<size_t>(x.size(0)));
  for (int64_t t = 0; t < x.size(0); ++t) {
    if (keep.defined()) {
      const torch::Tensor k = keep[t].unsqueeze(1);
      h = h * k;
      c = c * k;
    }
    std::tie(h, c) = torch::lstm_cell(x[t], {h, c}, w.w_ih, w.w_hh, w.b_ih, w.b_hh);
    outs.push_back(h);
  }
  return {torch::stack(outs), h, c};
}

LstmSequence split_at_resets(const torch::Tensor& x, const torch::Tensor& h0, const torch::Tensor& c0,
                             const torch::Tensor& keep, const LstmWeights& w) {
  const int64_t T = x.size(0);
  // The steps before which some sequence's state is zeroed: one LibTorch call per run between them.
  std::vector<int64_t> starts{0};
  std::vector<bool> masked(static_cast<size_t>(T), false);
  if (keep.defined()) {
    const torch::Tensor any = (keep != 1).any(1).to(torch::kCPU).contiguous();
    const bool* p = any.data_ptr<bool>();
    for (int64_t t = 0; t < T; ++t) {
      masked[static_cast<size_t>(t)] = p[t];
      if (p[t] && t > 0) starts.push_back(t);
    }
  }
  starts.push_back(T);
  const bool biases = w.b_ih.defined() && w.b_hh.defined();
  std::vector<torch::Tensor> params{w.w_ih, w.w_hh};
  if (biases) {
    params.push_back(w.b_ih);
    params.push_back(w.b_hh);
  }
  torch::Tensor h = h0, c = c0;
  std::vector<torch::Tensor> outs;
  for (size_t k = 0; k + 1 < starts.size(); ++k) {
    const int64_t begin = starts[k];
    if (masked[static_cast<size_t>(begin)]) {
      const torch::Tensor m = keep[begin].unsqueeze(1);
      h = h * m;
      c = c * m;
    }
    auto r = torch::lstm(x.narrow(0, begin, starts[k + 1] - begin), {h.unsqueeze(0), c.unsqueeze(0)}, params,
                         biases, /*num_layers=*/1, /*dropout=*/0.0, /*train=*/torch::GradMode::is_enabled(),
                         /*bidirectional=*/false, /*batch_first=*/false);
    outs.push_back(std::get<0>(r));
    h = std::get<1>(r).squeeze(0);
    c = std::get<2>(r).squeeze(0);
  }
  return {outs.size() == 1 ? outs.front() : torch::cat(outs), h, c};
}

// ---- kFused -----------------------------------------------------------------------------------
//
// tanh(v) = 2 sigmoid(2 v) - 1: with the g rows of the weights doubled, one sigmoid over all four
// gates gives i, f, o and (after 2 s - 1) g; the cell's tanh is one more sigmoid over 2 c. Both are
// LibTorch's vectorized kernels; what lies between them is plain arithmetic in loops of our own.

// Rows of the batch per parallel chunk: about 32k gate values each.
int64_t grain(int64_t H) { return std::max<int64_t>(1, (32 * 1024) / (4 * H)); }

struct FusedState {
  torch::Tensor x2d;    // [T*B, I]
  torch::Tensor keep;   // [T, B]
  torch::Tensor gates;  // [T, B, 4H]: i, f, g, o after their nonlinearities
  torch::Tensor hp;     // [T, B, H]: h_{t-1} keep_t, the state step t read
  torch::Tensor cp;     // [T, B, H]: c_{t-1} keep_t
  torch::Tensor tc;     // [T, B, H]: tanh(c_t)
};

LstmSequence fused_forward(const torch::Tensor& x, const torch::Tensor& h0, const torch::Tensor& c0,
                           const torch::Tensor& keep, const LstmWeights& w, FusedState* saved) {
  const int64_t T = x.size(0), B = x.size(1), I = x.size(2), H = w.w_hh.size(1);
  torch::Tensor scale = torch::ones({4 * H, 1}, x.options());
  scale.narrow(0, 2 * H, H).fill_(2);
  const torch::Tensor x2d = x.reshape({T * B, I});
  const torch::Tensor w_hh2_t = (w.w_hh * scale).t();
  torch::Tensor gates;
  if (w.b_ih.defined() || w.b_hh.defined()) {
    torch::Tensor bias = w.b_ih.defined() ? w.b_ih : torch::zeros({4 * H}, x.options());
    if (w.b_hh.defined()) bias = bias + w.b_hh;
    gates = torch::addmm(bias * scale.squeeze(1), x2d, (w.w_ih * scale).t());
  } else {
    gates = torch::mm(x2d, (w.w_ih * scale).t());
  }
  gates = gates.reshape({T, B, 4 * H});
  torch::Tensor hp = torch::empty({T, B, H}, x.options());
  torch::Tensor cp = torch::empty({T, B, H}, x.options());
  torch::Tensor tc = torch::empty({T, B, H}, x.options());
  torch::Tensor out = torch::empty({T, B, H}, x.options());
  torch::Tensor c = torch::empty({B, H}, x.options());
  hp[0].copy_(keep.defined() ? h0 * keep[0].unsqueeze(1) : h0);
  cp[0].copy_(keep.defined() ? c0 * keep[0].unsqueeze(1) : c0);
  const torch::Tensor keep_c = keep.defined() ? keep.contiguous() : keep;

  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "lstm_sequence", [&] {
    for (int64_t t = 0; t < T; ++t) {
      torch::Tensor g = gates[t];
      g.addmm_(hp[t], w_hh2_t);
      g.sigmoid_();
      scalar_t* G = g.data_ptr<scalar_t>();
      const scalar_t* CP = cp[t].data_ptr<scalar_t>();
      scalar_t* C = c.data_ptr<scalar_t>();
      scalar_t* TC = tc[t].data_ptr<scalar_t>();
      at::parallel_for(0, B, grain(H), [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) {
          scalar_t* gb = G + b * 4 * H;
          for (int64_t j = 0; j < H; ++j) {
            const scalar_t gg = 2 * gb[2 * H + j] - 1;
            gb[2 * H + j] = gg;
            const scalar_t cv = gb[H + j] * CP[b * H + j] + gb[j] * gg;
            C[b * H + j] = cv;
            TC[b * H + j] = 2 * cv;
          }
        }
      });
      tc[t].sigmoid_();
      scalar_t* OUT = out[t].data_ptr<scalar_t>();
      scalar_t* HPN = t + 1 < T ? hp[t + 1].data_ptr<scalar_t>() : nullptr;
      scalar_t* CPN = t + 1 < T ? cp[t + 1].data_ptr<scalar_t>() : nullptr;
      const scalar_t* KN = t + 1 < T && keep_c.defined() ? keep_c[t + 1].data_ptr<scalar_t>() : nullptr;
      at::parallel_for(0, B, grain(H), [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) {
          const scalar_t* gb = G + b * 4 * H;
          const scalar_t k = KN != nullptr ? KN[b] : scalar_t(1);
          for (int64_t j = 0; j < H; ++j) {
            const int64_t e = b * H + j;
            const scalar_t tcv = 2 * TC[e] - 1;
            TC[e] = tcv;
            const scalar_t hv = gb[3 * H + j] * tcv;
            OUT[e] = hv;
            if (HPN != nullptr) {
              HPN[e] = hv * k;
              CPN[e] = C[e] * k;
            }
          }
        }
      });
    }
  });
  if (saved != nullptr) *saved = {x2d, keep_c, gates, hp, cp, tc};
  return {out, out[T - 1].clone(), c};
}

// Returns dx, dh0, dc0, dw_ih, dw_hh, db (the same for b_ih and b_hh).
std::vector<torch::Tensor> fused_backward(const FusedState& s, const torch::Tensor& w_ih, const torch::Tensor& w_hh,
                                          const torch::Tensor& dout, const torch::Tensor& dhT,
                                          const torch::Tensor& dcT) {
  const int64_t T = s.gates.size(0), B = s.gates.size(1), H = w_hh.size(1);
  const torch::TensorOptions options = s.gates.options();
  torch::Tensor dG = torch::empty({T, B, 4 * H}, options);
  torch::Tensor dh = dhT.defined() ? dhT.contiguous().clone() : torch::zeros({B, H}, options);
  torch::Tensor dc = dcT.defined() ? dcT.contiguous().clone() : torch::zeros({B, H}, options);
  const torch::Tensor dout_c = dout.defined() ? dout.contiguous() : dout;
  AT_DISPATCH_FLOATING_TYPES(s.gates.scalar_type(), "lstm_sequence_backward", [&] {
    for (int64_t t = T - 1; t >= 0; --t) {
      const scalar_t* G = s.gates[t].data_ptr<scalar_t>();
      const scalar_t* CP = s.cp[t].data_ptr<scalar_t>();
      const scalar_t* TC = s.tc[t].data_ptr<scalar_t>();
      const scalar_t* DO = dout_c.defined() ? dout_c[t].data_ptr<scalar_t>() : nullptr;
      // dh holds d(h_t) from step t+1 before that step's mask (or dhT): keep_{t+1} applies here.
      const scalar_t* KN = t + 1 < T && s.keep.defined() ? s.keep[t + 1].data_ptr<scalar_t>() : nullptr;
      scalar_t* DH = dh.data_ptr<scalar_t>();
      scalar_t* DC = dc.data_ptr<scalar_t>();
      scalar_t* DG = dG[t].data_ptr<scalar_t>();
      at::parallel_for(0, B, grain(H), [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) {
          const scalar_t* gb = G + b * 4 * H;
          scalar_t* dgb = DG + b * 4 * H;
          const scalar_t k = KN != nullptr ? KN[b] : scalar_t(1);
          for (int64_t j = 0; j < H; ++j) {
            const int64_t e = b * H + j;
            const scalar_t i = gb[j], f = gb[H + j], g = gb[2 * H + j], o = gb[3 * H + j];
            const scalar_t tcv = TC[e];
            const scalar_t dhv = DH[e] * k + (DO != nullptr ? DO[e] : scalar_t(0));
            const scalar_t dcv = DC[e] * k + dhv * o * (1 - tcv * tcv);
            dgb[j] = dcv * g * i * (1 - i);
            dgb[H + j] = dcv * CP[e] * f * (1 - f);
            dgb[2 * H + j] = dcv * i * (1 - g * g);
            dgb[3 * H + j] = dhv * tcv * o * (1 - o);
            DC[e] = dcv * f;  // d(c_{t-1} keep_t): keep_t applies at step t-1 (or at the end)
          }
        }
      });
      torch::mm_out(dh, dG[t], w_hh);  // d(h_{t-1} keep_t), before keep_t
    }
  });
  if (s.keep.defined()) {
    const torch::Tensor k0 = s.keep[0].unsqueeze(1);
    dh = dh * k0;
    dc = dc * k0;
  }
  const torch::Tensor dG2 = dG.reshape({T * B, 4 * H});
  const torch::Tensor dx = torch::mm(dG2, w_ih).reshape({T, B, w_ih.size(1)});
  const torch::Tensor dw_ih = torch::mm(dG2.t(), s.x2d);
  const torch::Tensor dw_hh = torch::mm(dG2.t(), s.hp.reshape({T * B, H}));
  return {dx, dh, dc, dw_ih, dw_hh, dG2.sum(0)};
}

class FusedLstm : public torch::autograd::Function<FusedLstm> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, torch::Tensor x,
                                                torch::Tensor h0, torch::Tensor c0, torch::Tensor keep,
                                                torch::Tensor w_ih, torch::Tensor w_hh, torch::Tensor b_ih,
                                                torch::Tensor b_hh) {
    FusedState s;
    LstmSequence r = fused_forward(x, h0, c0, keep, {w_ih, w_hh, b_ih, b_hh}, &s);
    ctx->save_for_backward({w_ih, w_hh});
    ctx->saved_data["x2d"] = s.x2d;
    ctx->saved_data["keep"] = s.keep;
    ctx->saved_data["gates"] = s.gates;
    ctx->saved_data["hp"] = s.hp;
    ctx->saved_data["cp"] = s.cp;
    ctx->saved_data["tc"] = s.tc;
    return {r.out, r.h, r.c};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto weights = ctx->get_saved_variables();
    auto tensor = [&](const char* name) { return ctx->saved_data[name].toTensor(); };
    FusedState s{tensor("x2d"), tensor("keep"), tensor("gates"), tensor("hp"), tensor("cp"), tensor("tc")};
    std::vector<torch::Tensor> d = fused_backward(s, weights[0], weights[1], grads[0], grads[1], grads[2]);
    // x, h0, c0, keep (a constant), w_ih, w_hh, b_ih, b_hh.
    return {d[0], d[1], d[2], torch::Tensor(), d[3], d[4], d[5], d[5]};
  }
};

bool needs_grad(const torch::Tensor& x, const torch::Tensor& h0, const torch::Tensor& c0, const LstmWeights& w) {
  if (!torch::GradMode::is_enabled()) return false;
  for (const torch::Tensor* t : {&x, &h0, &c0, &w.w_ih, &w.w_hh, &w.b_ih, &w.b_hh}) {
    if (t->defined() && t->requires_grad()) return true;
  }
  return false;
}

LstmSequence fused(const torch::Tensor& x, const torch::Tensor& h0, const torch::Tensor& c0,
                   const torch::Tensor& keep, const LstmWeights& w) {
  if (!x.device().is_cpu()) {
    throw std::invalid_argument("lstm_sequence: the fused kernel runs on the CPU; x is on " +
                                x.device().str() + " (LstmKernel::kAuto picks LibTorch's kernel there)");
  }
  if (!needs_grad(x, h0, c0, w)) return fused_forward(x, h0, c0, keep, w, nullptr);
  // The function takes defined tensors only: ones for no resets, zeros for a missing bias.
  const torch::Tensor k = keep.defined() ? keep : torch::ones({x.size(0), x.size(1)}, x.options());
  const int64_t H4 = w.w_hh.size(0);
  const torch::Tensor b_ih = w.b_ih.defined() ? w.b_ih : torch::zeros({H4}, x.options());
  const torch::Tensor b_hh = w.b_hh.defined() ? w.b_hh : torch::zeros({H4}, x.options());
  const auto r = FusedLstm::apply(x, h0, c0, k, w.w_ih, w.w_hh, b_ih, b_hh);
  return {r[0], r[1], r[2]};
}

}  // namespace

LstmWeights lstm_weights(const torch::nn::LSTMCellImpl& cell) {
  return {cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh};
}

const char* lstm_kernel_name(LstmKernel kernel) {
  switch (kernel) {
    case LstmKernel::kAuto: return "auto";
    case LstmKernel::kStepwise: return "stepwise";
    case LstmKernel::kSplit: return "split";
    case LstmKernel::kFused: return "fused";
  }
  return "?";
}

LstmSequence lstm_sequence(const torch::Tensor& x, const torch::Tensor& h0, const torch::Tensor& c0,
                           const torch::Tensor& keep, const LstmWeights& weights, LstmKernel kernel) {
  const Sizes s = check(x, h0, c0, keep, weights);
  if (s.T == 0) return {torch::empty({0, s.B, s.H}, x.options()), h0, c0};
  if (kernel == LstmKernel::kAuto) kernel = x.device().is_cpu() ? LstmKernel::kFused : LstmKernel::kSplit;
  switch (kernel) {
    case LstmKernel::kStepwise: return stepwise(x, h0, c0, keep, weights);
    case LstmKernel::kSplit: return split_at_resets(x, h0, c0, keep, weights);
    default: return fused(x, h0, c0, keep, weights);
  }
}

}  // namespace moonseed::models
