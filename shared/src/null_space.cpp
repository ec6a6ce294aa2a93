// NullSpace: compatibility defect, correction of data and normalization of solutions through the
// small k × k system WᵀZ (k ≤ 6 for rigid motions).
#include "fem/null_space.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

#include "fem/error.hpp"

namespace fem {

namespace {

double norm_inf(const CsrMatrix& a) {
  const auto off = a.pattern().row_offsets();
  const auto values = a.values();
  double worst = 0;
  for (index_t r = 0; r < a.rows(); ++r) {
    double s = 0;
    for (index_t p = off[r]; p < off[r + 1]; ++p) s += std::abs(values[static_cast<std::size_t>(p)]);
    worst = std::max(worst, s);
  }
  return worst;
}

double norm2(std::span<const double> v) {
  double s = 0;
  for (double x : v) s += x * x;
  return std::sqrt(s);
}

std::string format_coefficient(double c) {
  std::string s = fmt::format("{:.3g}", c);
  return s == "1" ? "" : s == "-1" ? "-" : s + " ";
}

}  // namespace

NullSpace::NullSpace(index_t size, std::vector<std::vector<double>> vectors, std::vector<std::string> names,
                     std::vector<std::vector<double>> functionals)
    : n_(size), k_(static_cast<int>(vectors.size())), names_(std::move(names)) {
  FEM_EXPECTS(size >= 0, "null space of negative size {}", size);
  FEM_EXPECTS(k_ >= 1, "a null space needs at least one vector");
  FEM_EXPECTS(k_ <= size, "a null space of {} vectors in a space of size {}", k_, size);
  FEM_EXPECTS(names_.size() == vectors.size(), "null space: {} vectors but {} names", vectors.size(), names_.size());
  FEM_EXPECTS(functionals.empty() || functionals.size() == vectors.size(),
              "null space: {} vectors but {} normalization functionals", vectors.size(), functionals.size());
  const auto n = static_cast<std::size_t>(size);
  auto flatten = [&](const std::vector<std::vector<double>>& from, const char* what) {
    std::vector<double> out;
    out.reserve(n * from.size());
    for (std::size_t k = 0; k < from.size(); ++k) {
      FEM_EXPECTS(from[k].size() == n, "null space: {} {} ('{}') has {} entries, the matrix {} rows", what, k,
                  names_[k], from[k].size(), n);
      for (std::size_t i = 0; i < n; ++i)
        FEM_EXPECTS(std::isfinite(from[k][i]), "null space: {} {} ('{}') has a non-finite entry at {}", what, k,
                    names_[k], i);
      out.insert(out.end(), from[k].begin(), from[k].end());
    }
    return out;
  };
  z_ = flatten(vectors, "vector");
  w_ = functionals.empty() ? z_ : flatten(functionals, "functional");

  // LU with partial pivoting of (WᵀZ)_{ij} = w_i · z_j; a (nearly) singular WᵀZ means linearly
  // dependent vectors, or functionals that cannot fix them.
  const int k = k_;
  wz_lu_.assign(static_cast<std::size_t>(k * k), 0.0);
  double scale = 0;
  for (int i = 0; i < k; ++i)
    for (int j = 0; j < k; ++j) {
      double s = 0;
      for (std::size_t r = 0; r < n; ++r) s += w_[i * n + r] * z_[j * n + r];
      wz_lu_[static_cast<std::size_t>(i * k + j)] = s;
      scale = std::max(scale, std::abs(s));
    }
  wz_pivot_.resize(static_cast<std::size_t>(k));
  for (int c = 0; c < k; ++c) {
    int p = c;
    for (int r = c + 1; r < k; ++r)
      if (std::abs(wz_lu_[r * k + c]) > std::abs(wz_lu_[p * k + c])) p = r;
    FEM_EXPECTS(std::abs(wz_lu_[p * k + c]) > 1e-12 * scale,
                "null space: the vectors ({}) are linearly dependent, or the functionals cannot normalize them",
                description());
    wz_pivot_[c] = p;
    if (p != c)
      for (int j = 0; j < k; ++j) std::swap(wz_lu_[c * k + j], wz_lu_[p * k + j]);
    for (int r = c + 1; r < k; ++r) {
      const double f = wz_lu_[r * k + c] /= wz_lu_[c * k + c];
      for (int j = c + 1; j < k; ++j) wz_lu_[r * k + j] -= f * wz_lu_[c * k + j];
    }
  }
}

std::span<const double> NullSpace::vector(int k) const noexcept {
  const auto n = static_cast<std::size_t>(n_);
  return std::span<const double>(z_).subspan(static_cast<std::size_t>(k) * n, n);
}

std::span<const double> NullSpace::functional(int k) const noexcept {
  const auto n = static_cast<std::size_t>(n_);
  return std::span<const double>(w_).subspan(static_cast<std::size_t>(k) * n, n);
}

std::string NullSpace::description() const {
  std::string s;
  for (const auto& name : names_) s += (s.empty() ? "" : ", ") + name;
  return s;
}

void NullSpace::solve_small(std::vector<double>& r, bool transpose) const {
  const int k = k_;
  const double* a = wz_lu_.data();
  if (!transpose) {  // P A = L U: solve L U y = P r
    for (int c = 0; c < k; ++c) std::swap(r[c], r[wz_pivot_[c]]);
    for (int i = 0; i < k; ++i)
      for (int j = 0; j < i; ++j) r[i] -= a[i * k + j] * r[j];
    for (int i = k - 1; i >= 0; --i) {
      for (int j = i + 1; j < k; ++j) r[i] -= a[i * k + j] * r[j];
      r[i] /= a[i * k + i];
    }
  } else {  // Aᵀ = Uᵀ Lᵀ P: solve Uᵀ s = r, Lᵀ t = s, y = Pᵀ t
    for (int i = 0; i < k; ++i) {
      for (int j = 0; j < i; ++j) r[i] -= a[j * k + i] * r[j];
      r[i] /= a[i * k + i];
    }
    for (int i = k - 1; i >= 0; --i)
      for (int j = i + 1; j < k; ++j) r[i] -= a[j * k + i] * r[j];
    for (int c = k - 1; c >= 0; --c) std::swap(r[c], r[wz_pivot_[c]]);
  }
}

double NullSpace::defect(std::span<const double> b) const {
  FEM_EXPECTS(b.size() == static_cast<std::size_t>(n_), "null space of size {}: a vector of {} entries", n_,
              b.size());
  double worst = 0;
  for (int k = 0; k < k_; ++k) {
    const auto z = vector(k);
    double along = 0, size = 0;
    for (std::size_t i = 0; i < b.size(); ++i) {
      along += z[i] * b[i];
      size += std::abs(z[i] * b[i]);
    }
    if (size > 0) worst = std::max(worst, std::abs(along) / size);
  }
  return worst;
}

void NullSpace::make_compatible(std::span<double> b) const {
  FEM_EXPECTS(b.size() == static_cast<std::size_t>(n_), "null space of size {}: a vector of {} entries", n_,
              b.size());
  // Zᵀ(b - W y) = 0  ⇔  (ZᵀW) y = Zᵀb, and ZᵀW = (WᵀZ)ᵀ.
  std::vector<double> y(static_cast<std::size_t>(k_));
  for (int k = 0; k < k_; ++k) {
    const auto z = vector(k);
    for (std::size_t i = 0; i < b.size(); ++i) y[k] += z[i] * b[i];
  }
  solve_small(y, /*transpose=*/true);
  for (int k = 0; k < k_; ++k) {
    const auto w = functional(k);
    for (std::size_t i = 0; i < b.size(); ++i) b[i] -= w[i] * y[k];
  }
}

void NullSpace::normalize(std::span<double> x) const {
  FEM_EXPECTS(x.size() == static_cast<std::size_t>(n_), "null space of size {}: a vector of {} entries", n_,
              x.size());
  // Wᵀ(x - Z y) = 0  ⇔  (WᵀZ) y = Wᵀx.
  std::vector<double> y(static_cast<std::size_t>(k_));
  for (int k = 0; k < k_; ++k) {
    const auto w = functional(k);
    for (std::size_t i = 0; i < x.size(); ++i) y[k] += w[i] * x[i];
  }
  solve_small(y, /*transpose=*/false);
  for (int k = 0; k < k_; ++k) {
    const auto z = vector(k);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] -= z[i] * y[k];
  }
}

std::size_t NullSpace::bytes() const noexcept {
  std::size_t s = sizeof(*this) + (z_.capacity() + w_.capacity() + wz_lu_.capacity()) * sizeof(double);
  for (const auto& name : names_) s += name.capacity();
  return s;
}

std::shared_ptr<const NullSpace> find_null_space(const CsrMatrix& matrix,
                                                 const std::vector<std::vector<double>>& candidates,
                                                 const std::vector<std::string>& names, double tolerance) {
  FEM_EXPECTS(matrix.rows() == matrix.cols(), "find_null_space: the matrix is {} x {}, not square", matrix.rows(),
              matrix.cols());
  FEM_EXPECTS(names.size() == candidates.size(), "find_null_space: {} candidates but {} names", candidates.size(),
              names.size());
  const auto n = static_cast<std::size_t>(matrix.rows());
  const int k = static_cast<int>(candidates.size());
  if (k == 0 || n == 0) return nullptr;
  // The candidates, each scaled to unit length (a zero candidate is left out).
  Eigen::MatrixXd Z(static_cast<Eigen::Index>(n), k);
  std::vector<int> used;
  for (int j = 0; j < k; ++j) {
    FEM_EXPECTS(candidates[j].size() == n, "find_null_space: candidate '{}' has {} entries, the matrix {} rows",
                names[j], candidates[j].size(), n);
    const double length = norm2(candidates[j]);
    if (!(length > 0) || !std::isfinite(length)) continue;
    for (std::size_t i = 0; i < n; ++i) Z(static_cast<Eigen::Index>(i), j) = candidates[j][i] / length;
    used.push_back(j);
  }
  if (used.empty()) return nullptr;
  Eigen::MatrixXd Zu(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(used.size()));
  for (std::size_t j = 0; j < used.size(); ++j) Zu.col(static_cast<Eigen::Index>(j)) = Z.col(used[j]);
  // An orthonormal basis Q of their span (Z = Q R), dependent candidates dropped.
  const Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(Zu);
  const auto rank = qr.rank();
  if (rank == 0) return nullptr;
  const Eigen::MatrixXd Q =
      qr.householderQ() * Eigen::MatrixXd::Identity(static_cast<Eigen::Index>(n), rank);
  // Y = A Q and the eigenpairs of YᵀY: the singular values of A on the span.
  Eigen::MatrixXd Y(static_cast<Eigen::Index>(n), rank);
  std::vector<double> y(n);
  for (Eigen::Index j = 0; j < rank; ++j) {
    matrix.multiply(std::span<const double>(Q.col(j).data(), n), y);
    for (std::size_t i = 0; i < n; ++i) Y(static_cast<Eigen::Index>(i), j) = y[i];
  }
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(Y.transpose() * Y);
  const double scale = norm_inf(matrix);
  std::vector<Eigen::Index> null_columns;
  for (Eigen::Index j = 0; j < rank; ++j)
    if (std::sqrt(std::max(eig.eigenvalues()(j), 0.0)) <= tolerance * scale) null_columns.push_back(j);
  if (null_columns.empty()) return nullptr;
  // The null vectors as combinations of the (unit) candidates, in reduced row echelon form so that
  // a null space spanned by some of the candidates themselves is reported as those candidates.
  const Eigen::Index m = static_cast<Eigen::Index>(null_columns.size());
  Eigen::MatrixXd V(static_cast<Eigen::Index>(n), m);
  for (Eigen::Index c = 0; c < m; ++c) V.col(c) = Q * eig.eigenvectors().col(null_columns[c]);
  Eigen::MatrixXd C = Zu.colPivHouseholderQr().solve(V).transpose();  // m × used: rows = null vectors
  Eigen::Index row = 0;
  for (Eigen::Index col = 0; col < C.cols() && row < m; ++col) {
    Eigen::Index pivot = row;
    for (Eigen::Index r = row; r < m; ++r)
      if (std::abs(C(r, col)) > std::abs(C(pivot, col))) pivot = r;
    if (std::abs(C(pivot, col)) < 1e-6) continue;
    C.row(row).swap(C.row(pivot));
    C.row(row) /= C(row, col);
    for (Eigen::Index r = 0; r < m; ++r)
      if (r != row) C.row(r) -= C(r, col) * C.row(row);
    ++row;
  }
  std::vector<std::vector<double>> vectors;
  std::vector<std::string> null_names;
  for (Eigen::Index r = 0; r < row; ++r) {
    std::vector<double> v(n, 0.0);
    std::string name;
    for (Eigen::Index j = 0; j < C.cols(); ++j) {
      const double c = std::abs(C(r, j)) < 1e-6 ? 0.0 : C(r, j);
      if (c == 0.0) continue;
      for (std::size_t i = 0; i < n; ++i) v[i] += c * Zu(static_cast<Eigen::Index>(i), j);
      const std::string term = format_coefficient(c) + names[used[static_cast<std::size_t>(j)]];
      name += name.empty() ? term : (c < 0 ? " - " + term.substr(1) : " + " + term);
    }
    vectors.push_back(std::move(v));
    null_names.push_back(std::move(name));
  }
  return std::make_shared<const NullSpace>(matrix.rows(), std::move(vectors), std::move(null_names));
}

}  // namespace fem
