// The one-process process group and layout (the distributed ones are fem::dist's).
#include "fem/layout.hpp"

#include <algorithm>
#include <limits>

namespace fem {

std::vector<int> Processes::merge(std::vector<int> set) const {
  std::sort(set.begin(), set.end());
  set.erase(std::unique(set.begin(), set.end()), set.end());
  return set;
}

const Processes& Processes::one() {
  static const Processes p;
  return p;
}

double Layout::dot(std::span<const double> a, std::span<const double> b) const {
  FEM_EXPECTS(a.size() == b.size(), "dot of vectors of {} and {} entries", a.size(), b.size());
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

std::int64_t Layout::count_owned(std::span<const index_t> entries) const {
  std::int64_t mine = 0;
  for (index_t i : entries) mine += owns(i) ? 1 : 0;
  return processes().sum(mine);
}

std::pair<double, double> Layout::range(std::span<const double> v) const {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (double x : v) lo = std::min(lo, x), hi = std::max(hi, x);
  lo = processes().min(lo), hi = processes().max(hi);
  if (!(lo <= hi)) return {0.0, 0.0};
  return {lo, hi};
}

const Layout& Layout::serial() {
  static const Layout l;
  return l;
}

}  // namespace fem
