// The null space of a singular matrix, as PETSc's MatNullSpace: the constants of a pure Neumann
// problem, the rigid motions of an unconstrained elastic body. Attached to a CsrMatrix, it tells
// the solve kernel how to solve A x = b anyway: b must be compatible (orthogonal to the null
// space, up to a tolerance), and x is the one solution that the normalization functionals
// vanish on (e.g. zero mean).
#pragma once

#include <cstddef>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "fem/csr.hpp"

namespace fem {

class Layout;

class NullSpace {
 public:
  /// `vectors`: a basis Z of the null space (k linearly independent vectors of `size` entries,
  /// not necessarily orthogonal) with one name each ("constant", "translation x", ...).
  /// `functionals`: k vectors W fixing the free part of a solution, Wᵀx = 0, and the direction
  /// in which incompatible data are corrected; empty: W = Z (Euclidean orthogonality). With W =
  /// M Z, M the mass matrix, the solution has zero mean (∫u = 0) and the correction of the data
  /// is a constant source. Checks sizes, finiteness and that WᵀZ is invertible.
  NullSpace(index_t size, std::vector<std::vector<double>> vectors, std::vector<std::string> names,
            std::vector<std::vector<double>> functionals = {});

  index_t size() const noexcept { return n_; }
  int dimension() const noexcept { return k_; }
  std::span<const double> vector(int k) const noexcept;
  std::span<const double> functional(int k) const noexcept;
  const std::string& name(int k) const noexcept { return names_[static_cast<std::size_t>(k)]; }
  const std::vector<std::string>& names() const noexcept { return names_; }
  /// The names joined by ", ".
  std::string description() const;

  /// How far b is from the range of a symmetric A with this null space: the largest over the
  /// null vectors z of |zᵀb| / Σ|z_i b_i|. 0 for compatible data (e.g. ∫f + ∫g = 0 for the
  /// constants: every z_i = 1), 1 for data that all push along z; 0 for b = 0.
  double defect(std::span<const double> b) const;
  /// The defect that rounding alone can give (of Σ z_i b_i against Σ |z_i b_i| over n terms):
  /// accepted as compatible whatever the tolerance.
  double rounding_defect() const noexcept {
    return 1e-10 + static_cast<double>(n_) * std::numeric_limits<double>::epsilon();
  }
  /// b -= W (ZᵀW)⁻¹ Zᵀ b: afterwards Zᵀb = 0 (up to rounding).
  void make_compatible(std::span<double> b) const;
  /// x -= Z (WᵀZ)⁻¹ Wᵀ x: afterwards Wᵀx = 0, the normalized solution.
  void normalize(std::span<double> x) const;

  /// The same over the processes of `layout` (vectors, functionals and b, x: consistent local
  /// vectors of it; every sum a global one): collective. With Layout::serial() the results are
  /// those of the functions above up to rounding.
  double defect(std::span<const double> b, const Layout& layout) const;
  void make_compatible(std::span<double> b, const Layout& layout) const;
  void normalize(std::span<double> x, const Layout& layout) const;

  std::size_t bytes() const noexcept;

 private:
  index_t n_ = 0;
  int k_ = 0;
  std::vector<double> z_, w_;  // n × k, column-major
  std::vector<std::string> names_;
  std::vector<double> wz_;  // the k × k matrix (WᵀZ)_{ij} = w_iᵀ z_j, column-major
  // v -= A M⁻¹ Bᵀv with M = WᵀZ (or its transpose): A = `along`, B = `measured`, both n × k.
  void project(std::span<double> v, const std::vector<double>& along, const std::vector<double>& measured,
               bool transposed) const;
  void project(std::span<double> v, const std::vector<double>& along, const std::vector<double>& measured,
               bool transposed, const Layout& layout) const;
};

/// The null space of A within the span of `candidates` (e.g. the constants, or the rigid motions
/// from fem::assembly::rigid_body_modes), with their names: the combinations z of them with
/// ‖Âẑ‖ ≤ tolerance ‖ẑ‖ for the Jacobi-scaled Â = S⁻¹AS⁻¹, ẑ = Sz (S² = |diag A|), from the
/// singular values of ÂQ over an orthonormal basis Q of the scaled candidates; nullptr when A is
/// nonsingular on their span. The scaling makes the test independent of units and coefficient
/// contrasts, but it stays numerical: a regular matrix whose scaled smallest singular value on
/// the span is below the tolerance (e.g. M + dt K for dt beyond ~1e10) is taken as singular.
/// The default tolerance, 1e-12, is a thousand times the rounding of a true null vector's
/// product. When the constrained unknowns are known, fem::assembly::null_space decides from
/// them instead. `within`: combinations of the candidates (one coefficient per candidate each)
/// spanning the subspace to search; empty: all of their span. Costs one product with A per
/// vector searched and a few n × (candidates) dense blocks.
std::shared_ptr<const NullSpace> find_null_space(const CsrMatrix& matrix,
                                                 const std::vector<std::vector<double>>& candidates,
                                                 const std::vector<std::string>& names,
                                                 double tolerance = 1e-12,
                                                 const std::vector<std::vector<double>>& within = {});

/// The null space spanned by combinations of named candidate vectors (one coefficient per
/// candidate in each row of `combinations`), brought to reduced row echelon form so that a null
/// space that some candidates span is reported as those candidates ("translation y") and a
/// combination by its terms ("rotation z + 0.5 translation x"); nullptr for no combination.
std::shared_ptr<const NullSpace> named_null_space(index_t size,
                                                  const std::vector<std::vector<double>>& candidates,
                                                  const std::vector<std::string>& names,
                                                  std::vector<std::vector<double>> combinations);

/// S with S² = |diag A| (where the diagonal is 0: the row's 1-norm; an empty row: 1), the
/// scaling that gives S⁻¹AS⁻¹ a unit diagonal. Used to judge null vectors and residuals
/// independently of units and coefficient contrasts.
std::vector<double> jacobi_scale(const CsrMatrix& matrix);

}  // namespace fem

FEM_TYPE_NAME(fem::NullSpace, "fem::NullSpace");
