#include "engine/runtime/sum_tree.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "base/check.h"
#include "base/text.h"

namespace moonseed::engine {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

}  // namespace

SumTree::SumTree(int64_t capacity) : capacity_(capacity), leaves_(1) {
  if (capacity < 1) {
    throw std::invalid_argument("SumTree: capacity must be >= 1, got " + std::to_string(capacity));
  }
  while (leaves_ < capacity) leaves_ *= 2;
  sums_.assign(static_cast<size_t>(2 * leaves_), 0.0);
  mins_.assign(static_cast<size_t>(2 * leaves_), kInfinity);
}

void SumTree::check_index(int64_t index, const char* what) const {
  base::require_index<std::out_of_range>(index, capacity_, "SumTree::", what, ": index");
}

void SumTree::set(int64_t index, double priority) {
  check_index(index, "set");
  if (!std::isfinite(priority) || priority < 0) {
    throw std::invalid_argument("SumTree::set: priority " + base::number_text(priority) + " at index " +
                                std::to_string(index) + " must be finite and >= 0");
  }
  size_t node = static_cast<size_t>(leaves_ + index);
  count_set_ += (priority > 0 ? 1 : 0) - (sums_[node] > 0 ? 1 : 0);
  sums_[node] = priority;
  mins_[node] = priority > 0 ? priority : kInfinity;
  for (node /= 2; node >= 1; node /= 2) {
    sums_[node] = sums_[2 * node] + sums_[2 * node + 1];
    mins_[node] = std::min(mins_[2 * node], mins_[2 * node + 1]);
  }
}

double SumTree::get(int64_t index) const {
  check_index(index, "get");
  return sums_[static_cast<size_t>(leaves_ + index)];
}

int64_t SumTree::find(double mass) const {
  if (std::isnan(mass) || mass < 0) {
    throw std::invalid_argument("SumTree::find: mass " + base::number_text(mass) + " must be >= 0");
  }
  if (count_set_ == 0) throw std::logic_error("SumTree::find: every leaf is 0");
  // Invariant: the subtree of `node` has a sum > 0. Going right whenever the
  // right subtree is non-empty and mass >= the left sum (or the left one is
  // empty) keeps it, so the walk ends on a leaf > 0; when mass is past the
  // subtree's sum it keeps going right, to the last leaf > 0.
  size_t node = 1;
  const size_t first_leaf = static_cast<size_t>(leaves_);
  while (node < first_leaf) {
    const double left = sums_[2 * node];
    const double right = sums_[2 * node + 1];
    if (right > 0 && (mass >= left || left <= 0)) {
      mass -= left;
      node = 2 * node + 1;
    } else {
      node = 2 * node;
    }
  }
  return static_cast<int64_t>(node - first_leaf);
}

void SumTree::clear() {
  std::fill(sums_.begin(), sums_.end(), 0.0);
  std::fill(mins_.begin(), mins_.end(), kInfinity);
  count_set_ = 0;
}

}  // namespace moonseed::engine
