// SumTree: the index of prioritized replay (Schaul et al. 2016). A fixed
// number of leaves holds non-negative priorities (already raised to the
// exponent alpha by the caller); the tree answers their total in O(1), finds
// the leaf that owns a point of [0, total) in O(log n) (proportional
// sampling), and keeps their minimum over the leaves that are set (> 0) in
// O(1), which normalises importance weights.
//
//   SumTree tree(3);
//   tree.set(0, 1.0); tree.set(2, 3.0);    // leaf 1 stays 0
//   tree.total()        // 4
//   tree.find(0.5)      // 0: [0, 1) belongs to leaf 0
//   tree.find(1.0)      // 2: leaf 1 owns nothing, [1, 4) belongs to leaf 2
//   tree.min()          // 1
//
// Layout: two complete binary trees over a power-of-two number of leaves,
// stored as arrays (node k has children 2k and 2k+1, the root is node 1): one
// of sums, one of minima where an unset leaf counts as +infinity. set()
// recomputes both along the leaf's path from its children, so internal sums
// never drift however many updates there are.
//
// Errors: a negative, NaN or infinite priority is std::invalid_argument naming
// the value and the index; an index outside [0, capacity) is std::out_of_range;
// find() on a tree whose total is 0 is std::logic_error, and a negative or NaN
// mass std::invalid_argument.
//
// Thread-safety: none; the owner (SequenceReplay) locks.
#pragma once

#include <cstdint>
#include <vector>

namespace moonseed::engine {

class SumTree {
 public:
  // All leaves start at 0. Throws std::invalid_argument unless capacity >= 1.
  explicit SumTree(int64_t capacity);

  int64_t capacity() const { return capacity_; }

  // Sets leaf `index` to `priority` (0 clears it).
  void set(int64_t index, double priority);
  double get(int64_t index) const;

  // Sum of all leaves.
  double total() const { return sums_[1]; }
  // Smallest leaf that is > 0; +infinity when no leaf is set.
  double min() const { return mins_[1]; }
  // Number of leaves that are > 0.
  int64_t count_set() const { return count_set_; }

  // The leaf i such that (sum of leaves before i) <= mass < (sum through i).
  // Leaves at 0 own an empty interval and are never returned. When rounding
  // (or a caller) puts mass at or past the total, the last leaf > 0 is
  // returned.
  int64_t find(double mass) const;

  // Clears every leaf.
  void clear();

  // Bytes of the two node arrays.
  int64_t bytes() const { return static_cast<int64_t>((sums_.size() + mins_.size()) * sizeof(double)); }

 private:
  void check_index(int64_t index, const char* what) const;

  int64_t capacity_;
  int64_t leaves_;  // capacity_ rounded up to a power of two
  int64_t count_set_ = 0;
  std::vector<double> sums_;  // [2 * leaves_], node 0 unused
  std::vector<double> mins_;  // [2 * leaves_], +infinity where nothing is set
};

}  // namespace moonseed::engine
