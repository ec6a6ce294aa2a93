// Compressed sparse row patterns and matrices: the interchange between the assembly kernel
// (which fills values through a cached pattern) and the solve kernel (which factorizes them).
// A pattern is immutable and shared by every matrix of that structure, so re-assembling new
// values never copies the structure, and a solver can recognise "same pattern" cheaply.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "fem/type_name.hpp"

namespace fem {

class NullSpace;

/// Index type of rows, columns and DOFs (CHOLMOD/UMFPACK/KLU's int interface).
using index_t = std::int32_t;

class CsrPattern {
 public:
  /// Validates the structure: offsets start at 0, never decrease and end at nnz; columns are
  /// in range and strictly increasing within each row. Throws InvalidArgument naming the row.
  CsrPattern(index_t rows, index_t cols, std::vector<index_t> row_offsets, std::vector<index_t> col_indices);

  /// For builders whose rows are sorted and in range by construction (the connectivity
  /// builder): the structure is checked only in debug builds (a tenth of a connectivity build
  /// otherwise).
  static CsrPattern trusted(index_t rows, index_t cols, std::vector<index_t> row_offsets,
                            std::vector<index_t> col_indices);

  // Copies and moves read the lazily computed fingerprint atomically.
  CsrPattern(const CsrPattern& other);
  CsrPattern(CsrPattern&& other) noexcept;
  CsrPattern& operator=(const CsrPattern& other);
  CsrPattern& operator=(CsrPattern&& other) noexcept;

  index_t rows() const noexcept { return rows_; }
  index_t cols() const noexcept { return cols_; }
  std::size_t nnz() const noexcept { return col_indices_.size(); }
  std::span<const index_t> row_offsets() const noexcept { return row_offsets_; }
  std::span<const index_t> col_indices() const noexcept { return col_indices_; }
  std::span<const index_t> row(index_t r) const noexcept {
    return std::span<const index_t>(col_indices_)
        .subspan(static_cast<std::size_t>(row_offsets_[r]),
                 static_cast<std::size_t>(row_offsets_[r + 1] - row_offsets_[r]));
  }
  /// Position of (row, col) in the values array, or -1 when it is not in the pattern.
  std::int64_t find(index_t row, index_t col) const noexcept;

  /// 64-bit hash of the whole structure, computed on first use (patterns that never meet a
  /// solver cache never pay for it) and then kept. Equal patterns have equal fingerprints; use
  /// same_structure() to confirm a match. Thread-safe.
  std::uint64_t fingerprint() const noexcept;
  bool same_structure(const CsrPattern& other) const noexcept;
  std::size_t bytes() const noexcept;

 private:
  index_t rows_ = 0, cols_ = 0;
  std::vector<index_t> row_offsets_;
  std::vector<index_t> col_indices_;
  struct Unchecked {};
  CsrPattern(Unchecked, index_t rows, index_t cols, std::vector<index_t> row_offsets,
             std::vector<index_t> col_indices) noexcept;
  void validate() const;
  mutable std::uint64_t fingerprint_ = 0;  ///< 0: not computed yet (accessed through atomic_ref)
};

class CsrMatrix {
 public:
  /// Values must have pattern->nnz() entries. `null_space`: of a singular matrix (the constants
  /// of a pure Neumann problem, free rigid motions), so that the solve kernel can solve with it
  /// (see fem/null_space.hpp); its size must be the number of rows.
  CsrMatrix(std::shared_ptr<const CsrPattern> pattern, std::vector<double> values,
            std::shared_ptr<const NullSpace> null_space = nullptr);

  const std::shared_ptr<const CsrPattern>& pattern_ptr() const noexcept { return pattern_; }
  const CsrPattern& pattern() const noexcept { return *pattern_; }
  index_t rows() const noexcept { return pattern_->rows(); }
  index_t cols() const noexcept { return pattern_->cols(); }
  std::size_t nnz() const noexcept { return values_.size(); }
  std::span<const double> values() const noexcept { return values_; }
  /// The declared null space, or nullptr (an invertible matrix, or nothing declared).
  const std::shared_ptr<const NullSpace>& null_space() const noexcept { return null_space_; }
  /// Take the values back (e.g. to reuse the buffer for the next assembly).
  std::vector<double> release_values() && { return std::move(values_); }

  /// y = A x. Sizes are checked.
  void multiply(std::span<const double> x, std::span<double> y) const;
  /// y = Aᵀ x. Sizes are checked.
  void multiply_transpose(std::span<const double> x, std::span<double> y) const;
  /// max_i Σ_j |a_ij|, the ∞-norm (a cheap bound of every other norm's scale).
  double norm_inf() const noexcept;
  /// The value at (row, col), 0 when outside the pattern.
  double operator()(index_t row, index_t col) const noexcept;
  /// Values plus the pattern it holds (counted with every matrix sharing it).
  std::size_t bytes() const noexcept;

 private:
  std::shared_ptr<const CsrPattern> pattern_;
  std::vector<double> values_;
  std::shared_ptr<const NullSpace> null_space_;
};

}  // namespace fem

FEM_TYPE_NAME(fem::CsrPattern, "fem::CsrPattern");
FEM_TYPE_NAME(fem::CsrMatrix, "fem::CsrMatrix");
