// CSR pattern validation, fingerprinting and the matrix-vector products.
#include "fem/csr.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "fem/error.hpp"
#include "fem/null_space.hpp"

namespace fem {
namespace {

// A fast 64-bit hash of a run of 32-bit integers (multiply-xorshift over 64-bit words).
std::uint64_t mix(std::uint64_t h, std::uint64_t w) {
  h ^= w + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h *= 0xbf58476d1ce4e5b9ULL;
  return h ^ (h >> 31);
}

// Four independent lanes over 32-byte blocks, so the multiplies overlap instead of forming one
// dependency chain (a pattern of 1M rows hashes in ~3 ms rather than ~11).
std::uint64_t hash_span(std::uint64_t h, std::span<const index_t> v) {
  std::uint64_t lane[4] = {h, h ^ 0x243f6a8885a308d3ULL, h ^ 0x13198a2e03707344ULL,
                           h ^ 0xa4093822299f31d0ULL};
  std::size_t i = 0;
  for (; i + 8 <= v.size(); i += 8) {
    std::uint64_t w[4];
    std::memcpy(w, v.data() + i, sizeof w);
    for (int k = 0; k < 4; ++k) lane[k] = mix(lane[k], w[k]);
  }
  h = mix(mix(mix(lane[0], lane[1]), lane[2]), lane[3]);
  for (; i < v.size(); ++i) h = mix(h, static_cast<std::uint32_t>(v[i]));
  return mix(h, v.size());
}

}  // namespace

CsrPattern::CsrPattern(Unchecked, index_t rows, index_t cols, std::vector<index_t> row_offsets,
                       std::vector<index_t> col_indices) noexcept
    : rows_(rows), cols_(cols), row_offsets_(std::move(row_offsets)), col_indices_(std::move(col_indices)) {}

CsrPattern::CsrPattern(index_t rows, index_t cols, std::vector<index_t> row_offsets,
                       std::vector<index_t> col_indices)
    : CsrPattern(Unchecked{}, rows, cols, std::move(row_offsets), std::move(col_indices)) {
  validate();
}

namespace {
std::uint64_t load_fingerprint(const std::uint64_t& f) {
  return std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t&>(f)).load(std::memory_order_relaxed);
}
}  // namespace

CsrPattern::CsrPattern(const CsrPattern& o)
    : rows_(o.rows_),
      cols_(o.cols_),
      row_offsets_(o.row_offsets_),
      col_indices_(o.col_indices_),
      fingerprint_(load_fingerprint(o.fingerprint_)) {}

CsrPattern::CsrPattern(CsrPattern&& o) noexcept
    : rows_(o.rows_),
      cols_(o.cols_),
      row_offsets_(std::move(o.row_offsets_)),
      col_indices_(std::move(o.col_indices_)),
      fingerprint_(load_fingerprint(o.fingerprint_)) {}

CsrPattern& CsrPattern::operator=(const CsrPattern& o) {
  if (this != &o) *this = CsrPattern(o);
  return *this;
}

CsrPattern& CsrPattern::operator=(CsrPattern&& o) noexcept {
  rows_ = o.rows_;
  cols_ = o.cols_;
  row_offsets_ = std::move(o.row_offsets_);
  col_indices_ = std::move(o.col_indices_);
  fingerprint_ = load_fingerprint(o.fingerprint_);
  return *this;
}

CsrPattern CsrPattern::trusted(index_t rows, index_t cols, std::vector<index_t> row_offsets,
                               std::vector<index_t> col_indices) {
  CsrPattern p(Unchecked{}, rows, cols, std::move(row_offsets), std::move(col_indices));
#ifndef NDEBUG
  p.validate();
#endif
  return p;
}

void CsrPattern::validate() const {
  FEM_EXPECTS(rows_ >= 0 && cols_ >= 0, "CSR pattern of shape {}x{}: extents must be non-negative", rows_,
              cols_);
  FEM_EXPECTS(row_offsets_.size() == static_cast<std::size_t>(rows_) + 1,
              "CSR pattern with {} rows needs {} row offsets, got {}", rows_, rows_ + 1, row_offsets_.size());
  FEM_EXPECTS(row_offsets_.front() == 0, "CSR row offsets must start at 0, not {}", row_offsets_.front());
  FEM_EXPECTS(static_cast<std::size_t>(row_offsets_.back()) == col_indices_.size(),
              "CSR row offsets end at {} but there are {} column indices", row_offsets_.back(),
              col_indices_.size());
  for (index_t r = 0; r < rows_; ++r) {
    const index_t b = row_offsets_[r], e = row_offsets_[r + 1];
    FEM_EXPECTS(b <= e, "CSR row {}: offsets decrease ({} > {})", r, b, e);
    for (index_t k = b; k < e; ++k) {
      const index_t c = col_indices_[k];
      FEM_EXPECTS(c >= 0 && c < cols_, "CSR row {}: column {} is outside 0..{}", r, c, cols_ - 1);
      FEM_EXPECTS(k == b || col_indices_[k - 1] < c,
                  "CSR row {}: columns must be strictly increasing ({} then {})", r, col_indices_[k - 1], c);
    }
  }
}

std::uint64_t CsrPattern::fingerprint() const noexcept {
  std::atomic_ref<std::uint64_t> cached(fingerprint_);
  std::uint64_t h = cached.load(std::memory_order_relaxed);
  if (h == 0) {  // racing threads compute the same value
    h = hash_span(hash_span(mix(static_cast<std::uint64_t>(rows_), cols_), row_offsets_), col_indices_);
    if (h == 0) h = 1;
    cached.store(h, std::memory_order_relaxed);
  }
  return h;
}

std::int64_t CsrPattern::find(index_t row, index_t col) const noexcept {
  if (row < 0 || row >= rows_) return -1;
  const auto r = this->row(row);
  auto it = std::lower_bound(r.begin(), r.end(), col);
  if (it == r.end() || *it != col) return -1;
  return row_offsets_[row] + (it - r.begin());
}

bool CsrPattern::same_structure(const CsrPattern& other) const noexcept {
  return this == &other || (rows_ == other.rows_ && cols_ == other.cols_ && nnz() == other.nnz() &&
                            fingerprint() == other.fingerprint() && row_offsets_ == other.row_offsets_ &&
                            col_indices_ == other.col_indices_);
}

std::size_t CsrPattern::bytes() const noexcept {
  return sizeof(*this) + (row_offsets_.capacity() + col_indices_.capacity()) * sizeof(index_t);
}

CsrMatrix::CsrMatrix(std::shared_ptr<const CsrPattern> pattern, std::vector<double> values,
                     std::shared_ptr<const NullSpace> null_space)
    : pattern_(std::move(pattern)), values_(std::move(values)), null_space_(std::move(null_space)) {
  FEM_EXPECTS(pattern_ != nullptr, "CSR matrix needs a pattern");
  FEM_EXPECTS(values_.size() == pattern_->nnz(),
              "CSR matrix: pattern has {} nonzeros but {} values were given", pattern_->nnz(),
              values_.size());
  FEM_EXPECTS(!null_space_ || null_space_->size() == pattern_->rows(),
              "CSR matrix with {} rows: its null space has vectors of {} entries", pattern_->rows(),
              null_space_->size());
}

void CsrMatrix::multiply(std::span<const double> x, std::span<double> y) const {
  if (x.size() != static_cast<std::size_t>(cols()) || y.size() != static_cast<std::size_t>(rows()))
    throw DimensionMismatch(fmt::format("A·x with A of shape {}x{}: x has {} entries, y has {}", rows(),
                                        cols(), x.size(), y.size()));
  const auto off = pattern_->row_offsets();
  const auto col = pattern_->col_indices();
  for (index_t r = 0; r < rows(); ++r) {
    double s = 0.0;
    for (index_t k = off[r]; k < off[r + 1]; ++k) s += values_[k] * x[col[k]];
    y[r] = s;
  }
}

void CsrMatrix::multiply_transpose(std::span<const double> x, std::span<double> y) const {
  if (x.size() != static_cast<std::size_t>(rows()) || y.size() != static_cast<std::size_t>(cols()))
    throw DimensionMismatch(fmt::format("Aᵀ·x with A of shape {}x{}: x has {} entries, y has {}", rows(),
                                        cols(), x.size(), y.size()));
  std::fill(y.begin(), y.end(), 0.0);
  const auto off = pattern_->row_offsets();
  const auto col = pattern_->col_indices();
  for (index_t r = 0; r < rows(); ++r)
    for (index_t k = off[r]; k < off[r + 1]; ++k) y[col[k]] += values_[k] * x[r];
}

double CsrMatrix::norm_inf() const noexcept {
  const auto off = pattern_->row_offsets();
  double worst = 0;
  for (index_t r = 0; r < rows(); ++r) {
    double s = 0;
    for (index_t k = off[r]; k < off[r + 1]; ++k) s += std::abs(values_[static_cast<std::size_t>(k)]);
    worst = std::max(worst, s);
  }
  return worst;
}

double CsrMatrix::operator()(index_t row, index_t col) const noexcept {
  const std::int64_t k = pattern_->find(row, col);
  return k < 0 ? 0.0 : values_[static_cast<std::size_t>(k)];
}

std::size_t CsrMatrix::bytes() const noexcept {
  return sizeof(*this) + values_.capacity() * sizeof(double) + pattern_->bytes() +
         (null_space_ ? null_space_->bytes() : 0);
}

}  // namespace fem
