#include "engine/r2d2/recurrent_acting.h"

#include <cmath>

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "base/check.h"

namespace moonseed::engine {
namespace {

void check_epsilon(double epsilon, const std::string& where) {
  if (!(epsilon >= 0 && epsilon <= 1)) {
    std::ostringstream os;
    os << where << ": epsilon must be in [0, 1], got " << epsilon;
    throw std::invalid_argument(os.str());
  }
}

}  // namespace

RecurrentActing::RecurrentActing(std::vector<double> epsilons, int64_t lstm, torch::Device device, uint64_t seed)
    : epsilons_(std::move(epsilons)), lstm_(lstm), device_(device), rng_(seed) {
  if (epsilons_.empty()) throw std::invalid_argument("RecurrentActing: needs at least one slot");
  for (size_t i = 0; i < epsilons_.size(); ++i) {
    check_epsilon(epsilons_[i], "RecurrentActing: slot " + std::to_string(i));
  }
  if (lstm_ < 0) throw std::invalid_argument("RecurrentActing: lstm must be >= 0, got " + std::to_string(lstm_));
  if (lstm_ > 0) {
    const auto options = torch::TensorOptions().dtype(torch::kFloat32).device(device_);
    h_ = torch::zeros({num_slots(), lstm_}, options);
    c_ = torch::zeros({num_slots(), lstm_}, options);
  }
}

void RecurrentActing::check_slot(int64_t slot, const char* what) const {
  base::require_index(slot, num_slots(), "RecurrentActing::", what, ": slot");
}

double RecurrentActing::epsilon(int slot) const {
  check_slot(slot, "epsilon");
  return epsilons_[static_cast<size_t>(slot)];
}

void RecurrentActing::set_epsilon(int slot, double epsilon) {
  check_slot(slot, "set_epsilon");
  check_epsilon(epsilon, "RecurrentActing::set_epsilon: slot " + std::to_string(slot));
  epsilons_[static_cast<size_t>(slot)] = epsilon;
}

void RecurrentActing::reset_slot(int slot) {
  check_slot(slot, "reset_slot");
  if (lstm_ == 0) return;
  h_[slot].zero_();
  c_[slot].zero_();
}

ActingDecision RecurrentActing::act(models::QNetImpl& net, const std::vector<int64_t>& slots,
                                    const torch::Tensor& obs, const torch::Tensor& prev_action,
                                    const torch::Tensor& prev_reward, const torch::Tensor& reset) {
  const int64_t n = static_cast<int64_t>(slots.size());
  for (const int64_t s : slots) check_slot(s, "act");
  for (const auto& [name, t] : {std::pair<const char*, const torch::Tensor*>{"prev_action", &prev_action},
                                {"prev_reward", &prev_reward}, {"reset", &reset}}) {
    if (t->dim() != 1 || t->size(0) != n) {
      std::ostringstream os;
      os << "RecurrentActing::act: " << name << " must be [" << n << "] (one per slot), got " << t->sizes();
      throw std::invalid_argument(os.str());
    }
  }
  if (net.state_size() != lstm_) {
    throw std::invalid_argument("RecurrentActing::act: the net's LSTM has " + std::to_string(net.state_size()) +
                                " units, the states kept here " + std::to_string(lstm_));
  }

  torch::NoGradGuard no_grad;
  ActingDecision out;
  models::QNetImpl::State state;
  torch::Tensor index;
  if (lstm_ > 0) {
    index = torch::tensor(slots, torch::dtype(torch::kInt64)).to(device_);
    const torch::Tensor keep = (reset.to(device_) == 0).to(torch::kFloat32).unsqueeze(1);
    state.h = h_.index_select(0, index) * keep;
    state.c = c_.index_select(0, index) * keep;
    out.h = state.h.to(torch::kCPU);
    out.c = state.c.to(torch::kCPU);
  }
  auto [q, next] = net.step(obs, prev_action.to(device_, torch::kInt64), prev_reward.to(device_, torch::kFloat32),
                            state);
  out.q = q.to(torch::kCPU, torch::kFloat32).contiguous();
  // Before any state changes: a NaN Q-value has no greedy action.
  if (!torch::isfinite(out.q).all().item<bool>()) throw NonFiniteOutputs(nonfinite_rows(out.q));
  if (lstm_ > 0) {
    h_.index_copy_(0, index, next.h);
    c_.index_copy_(0, index, next.c);
  }
  out.actions = out.q.argmax(1).contiguous();
  const int64_t num_actions = out.q.size(1);
  int64_t* a = out.actions.data_ptr<int64_t>();
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  std::uniform_int_distribution<int64_t> any(0, num_actions - 1);
  out.behaviour_logp.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const double epsilon = epsilons_[static_cast<size_t>(slots[static_cast<size_t>(i)])];
    const int64_t greedy = a[i];
    if (coin(rng_) < epsilon) {
      a[i] = any(rng_);
      out.explored += 1;
    }
    const double p = epsilon / static_cast<double>(num_actions) + (a[i] == greedy ? 1.0 - epsilon : 0.0);
    out.behaviour_logp[static_cast<size_t>(i)] = static_cast<float>(std::log(p));
  }
  return out;
}

}  // namespace moonseed::engine
