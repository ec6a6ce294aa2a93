// NullSpace: compatibility defect, correction of data and normalization of solutions through the
// small k × k system WᵀZ (k ≤ 6 for rigid motions).
#include "fem/null_space.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

#include "fem/error.hpp"
#include "fem/layout.hpp"

namespace fem {

namespace {

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
  FEM_EXPECTS(names_.size() == vectors.size(), "null space: {} vectors but {} names", vectors.size(),
              names_.size());
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
        FEM_EXPECTS(std::isfinite(from[k][i]), "null space: {} {} ('{}') has a non-finite entry at {}", what,
                    k, names_[k], i);
      out.insert(out.end(), from[k].begin(), from[k].end());
    }
    return out;
  };
  z_ = flatten(vectors, "vector");
  w_ = functionals.empty() ? z_ : flatten(functionals, "functional");

  // (WᵀZ)_{ij} = w_i · z_j, solved with at every projection (k ≤ 6); a (nearly) singular WᵀZ
  // means linearly dependent vectors, or functionals that cannot fix them.
  const auto N = static_cast<Eigen::Index>(n);
  const Eigen::MatrixXd wz = Eigen::Map<const Eigen::MatrixXd>(w_.data(), N, k_).transpose() *
                             Eigen::Map<const Eigen::MatrixXd>(z_.data(), N, k_);
  Eigen::FullPivLU<Eigen::MatrixXd> lu(wz);
  lu.setThreshold(1e-12);
  FEM_EXPECTS(lu.rank() == k_,
              "null space: the vectors ({}) are linearly dependent, or the functionals cannot normalize them",
              description());
  wz_.assign(wz.data(), wz.data() + wz.size());
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

void NullSpace::project(std::span<double> v, const std::vector<double>& along,
                        const std::vector<double>& measured, bool transposed) const {
  FEM_EXPECTS(v.size() == static_cast<std::size_t>(n_), "null space of size {}: a vector of {} entries", n_,
              v.size());
  const auto N = static_cast<Eigen::Index>(n_);
  const Eigen::Map<const Eigen::MatrixXd> A(along.data(), N, k_), B(measured.data(), N, k_);
  const Eigen::Map<const Eigen::MatrixXd> wz(wz_.data(), k_, k_);
  Eigen::Map<Eigen::VectorXd> x(v.data(), N);
  const Eigen::VectorXd y = B.transpose() * x;
  x -=
      A * (transposed ? Eigen::MatrixXd(wz.transpose()).partialPivLu().solve(y) : wz.partialPivLu().solve(y));
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
  project(b, w_, z_, /*transposed=*/true);  // Zᵀ(b - W y) = 0  ⇔  (ZᵀW) y = Zᵀb, ZᵀW = (WᵀZ)ᵀ
}

void NullSpace::normalize(std::span<double> x) const {
  project(x, z_, w_, /*transposed=*/false);  // Wᵀ(x - Z y) = 0  ⇔  (WᵀZ) y = Wᵀx
}

// Over a layout: WᵀZ and the measured components are global inner products of consistent
// vectors (k² + k reductions: k = 1 for the constants, the flow's pressure).
void NullSpace::project(std::span<double> v, const std::vector<double>& along,
                        const std::vector<double>& measured, bool transposed, const Layout& layout) const {
  FEM_EXPECTS(v.size() == static_cast<std::size_t>(n_), "null space of size {}: a vector of {} entries", n_,
              v.size());
  const auto n = static_cast<std::size_t>(n_);
  const auto column = [n](const std::vector<double>& m, int k) {
    return std::span<const double>(m).subspan(static_cast<std::size_t>(k) * n, n);
  };
  Eigen::MatrixXd wz(k_, k_);
  for (int i = 0; i < k_; ++i)
    for (int j = 0; j < k_; ++j) wz(i, j) = layout.dot(column(w_, i), column(z_, j));
  Eigen::VectorXd y(k_);
  for (int k = 0; k < k_; ++k) y(k) = layout.dot(column(measured, k), v);
  const Eigen::VectorXd c =
      transposed ? Eigen::MatrixXd(wz.transpose()).partialPivLu().solve(y) : wz.partialPivLu().solve(y);
  for (int k = 0; k < k_; ++k) {
    const auto a = column(along, k);
    for (std::size_t i = 0; i < n; ++i) v[i] -= a[i] * c(k);
  }
}

double NullSpace::defect(std::span<const double> b, const Layout& layout) const {
  FEM_EXPECTS(b.size() == static_cast<std::size_t>(n_), "null space of size {}: a vector of {} entries", n_,
              b.size());
  std::vector<double> magnitude(b.size()), z_magnitude(b.size());
  for (std::size_t i = 0; i < b.size(); ++i) magnitude[i] = std::abs(b[i]);
  double worst = 0;
  for (int k = 0; k < k_; ++k) {
    const auto z = vector(k);
    for (std::size_t i = 0; i < b.size(); ++i) z_magnitude[i] = std::abs(z[i]);
    const double along = layout.dot(z, b), size = layout.dot(z_magnitude, magnitude);
    if (size > 0) worst = std::max(worst, std::abs(along) / size);
  }
  return worst;
}

void NullSpace::make_compatible(std::span<double> b, const Layout& layout) const {
  project(b, w_, z_, /*transposed=*/true, layout);
}

void NullSpace::normalize(std::span<double> x, const Layout& layout) const {
  project(x, z_, w_, /*transposed=*/false, layout);
}

std::size_t NullSpace::bytes() const noexcept {
  std::size_t s = sizeof(*this) + (z_.capacity() + w_.capacity() + wz_.capacity()) * sizeof(double);
  for (const auto& name : names_) s += name.capacity();
  return s;
}

std::shared_ptr<const NullSpace> named_null_space(index_t size,
                                                  const std::vector<std::vector<double>>& candidates,
                                                  const std::vector<std::string>& names,
                                                  std::vector<std::vector<double>> combinations) {
  const auto n = static_cast<std::size_t>(size);
  const std::size_t k = candidates.size();
  FEM_EXPECTS(names.size() == k, "named_null_space: {} candidates but {} names", k, names.size());
  const auto m = static_cast<Eigen::Index>(combinations.size());
  if (m == 0) return nullptr;
  Eigen::MatrixXd C(m, static_cast<Eigen::Index>(k));
  for (Eigen::Index r = 0; r < m; ++r) {
    FEM_EXPECTS(combinations[static_cast<std::size_t>(r)].size() == k,
                "named_null_space: a combination of {} coefficients for {} candidates",
                combinations[static_cast<std::size_t>(r)].size(), k);
    for (std::size_t j = 0; j < k; ++j) C(r, static_cast<Eigen::Index>(j)) = combinations[r][j];
  }
  // Reduced row echelon form with partial pivoting: a null space that some candidates span comes
  // out as those candidates. Where the pivots run out (nearly dependent rows), the rows stay as given.
  Eigen::MatrixXd E = C;
  Eigen::Index row = 0;
  for (Eigen::Index col = 0; col < E.cols() && row < m; ++col) {
    Eigen::Index pivot = row;
    for (Eigen::Index r = row; r < m; ++r)
      if (std::abs(E(r, col)) > std::abs(E(pivot, col))) pivot = r;
    if (std::abs(E(pivot, col)) < 1e-6 * E.row(pivot).cwiseAbs().maxCoeff()) continue;
    E.row(row).swap(E.row(pivot));
    E.row(row) /= E(row, col);
    for (Eigen::Index r = 0; r < m; ++r)
      if (r != row) E.row(r) -= E(r, col) * E.row(row);
    ++row;
  }
  if (row == m) C = E;
  std::vector<std::vector<double>> vectors;
  std::vector<std::string> null_names;
  for (Eigen::Index r = 0; r < m; ++r) {
    // The vector from the exact coefficients; the name leaves out the terms that are rounding.
    std::vector<double> v(n, 0.0);
    std::string name;
    const double largest = C.row(r).cwiseAbs().maxCoeff();
    for (std::size_t j = 0; j < k; ++j) {
      const double c = C(r, static_cast<Eigen::Index>(j));
      if (c == 0.0) continue;
      FEM_EXPECTS(candidates[j].size() == n, "named_null_space: candidate '{}' has {} entries, not {}",
                  names[j], candidates[j].size(), n);
      for (std::size_t i = 0; i < n; ++i) v[i] += c * candidates[j][i];
      if (std::abs(c) < 1e-6 * largest) continue;
      const std::string term = format_coefficient(c) + names[j];
      name += name.empty() ? term : (c < 0 ? " - " + term.substr(1) : " + " + term);
    }
    vectors.push_back(std::move(v));
    null_names.push_back(std::move(name));
  }
  return std::make_shared<const NullSpace>(size, std::move(vectors), std::move(null_names));
}

std::vector<double> jacobi_scale(const CsrMatrix& matrix) {
  const auto off = matrix.pattern().row_offsets();
  const auto col = matrix.pattern().col_indices();
  const auto values = matrix.values();
  std::vector<double> d(static_cast<std::size_t>(matrix.rows()), 1.0);
  for (index_t r = 0; r < matrix.rows(); ++r) {
    double diagonal = 0, row = 0;
    for (index_t p = off[r]; p < off[r + 1]; ++p) {
      const double v = std::abs(values[static_cast<std::size_t>(p)]);
      row += v;
      if (col[p] == r) diagonal = v;
    }
    const double scale = diagonal > 0 ? diagonal : row;
    if (scale > 0 && std::isfinite(scale)) d[static_cast<std::size_t>(r)] = std::sqrt(scale);
  }
  return d;
}

std::shared_ptr<const NullSpace> find_null_space(const CsrMatrix& matrix,
                                                 const std::vector<std::vector<double>>& candidates,
                                                 const std::vector<std::string>& names, double tolerance,
                                                 const std::vector<std::vector<double>>& within) {
  FEM_EXPECTS(matrix.rows() == matrix.cols(), "find_null_space: the matrix is {} x {}, not square",
              matrix.rows(), matrix.cols());
  FEM_EXPECTS(names.size() == candidates.size(), "find_null_space: {} candidates but {} names",
              candidates.size(), names.size());
  const auto n = static_cast<std::size_t>(matrix.rows());
  const auto k = static_cast<Eigen::Index>(candidates.size());
  if (k == 0 || n == 0) return nullptr;
  const auto N = static_cast<Eigen::Index>(n);
  for (Eigen::Index j = 0; j < k; ++j)
    FEM_EXPECTS(candidates[j].size() == n,
                "find_null_space: candidate '{}' has {} entries, the matrix {} rows", names[j],
                candidates[j].size(), n);
  // The subspace searched: combinations F (k × m) of the candidates; all of their span by default.
  Eigen::MatrixXd F = Eigen::MatrixXd::Identity(k, k);
  if (!within.empty()) {
    F.resize(k, static_cast<Eigen::Index>(within.size()));
    for (std::size_t c = 0; c < within.size(); ++c) {
      FEM_EXPECTS(within[c].size() == candidates.size(),
                  "find_null_space: a combination of {} coefficients for {} "
                  "candidates",
                  within[c].size(), candidates.size());
      for (Eigen::Index j = 0; j < k; ++j) F(j, static_cast<Eigen::Index>(c)) = within[c][j];
    }
  }
  const Eigen::Index m = F.cols();
  Eigen::MatrixXd Z(N, m);  // the subspace's vectors
  Z.setZero();
  for (Eigen::Index j = 0; j < k; ++j)
    for (Eigen::Index c = 0; c < m; ++c)
      if (F(j, c) != 0.0)
        for (std::size_t i = 0; i < n; ++i) Z(static_cast<Eigen::Index>(i), c) += F(j, c) * candidates[j][i];
  // Judged on the Jacobi-scaled matrix Â = S⁻¹AS⁻¹ (S² = |diag A|), whose unit diagonal makes the
  // tolerance independent of the units and of coefficient contrasts; a vector z becomes Sz.
  const std::vector<double> scale = jacobi_scale(matrix);
  Eigen::MatrixXd Zs = Z;
  for (Eigen::Index c = 0; c < m; ++c)
    for (std::size_t i = 0; i < n; ++i) Zs(static_cast<Eigen::Index>(i), c) *= scale[i];
  // An orthonormal basis Q of the scaled subspace (dependent vectors dropped), Ŷ = ÂQ and its
  // singular values: ‖Âq‖ for unit q.
  const Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(Zs);
  const auto rank = qr.rank();
  if (rank == 0) return nullptr;
  const Eigen::MatrixXd Q = qr.householderQ() * Eigen::MatrixXd::Identity(N, rank);
  Eigen::MatrixXd Y(N, rank);
  std::vector<double> x(n), y(n);
  for (Eigen::Index j = 0; j < rank; ++j) {
    for (std::size_t i = 0; i < n; ++i) x[i] = Q(static_cast<Eigen::Index>(i), j) / scale[i];
    matrix.multiply(x, y);
    for (std::size_t i = 0; i < n; ++i) Y(static_cast<Eigen::Index>(i), j) = y[i] / scale[i];
  }
  const Eigen::JacobiSVD<Eigen::MatrixXd> svd(Y, Eigen::ComputeThinV);
  std::vector<Eigen::Index> null_columns;
  for (Eigen::Index j = 0; j < rank; ++j)
    if (svd.singularValues()(j) <= tolerance) null_columns.push_back(j);
  if (null_columns.empty()) return nullptr;
  // The null vectors back in A's unknowns (S⁻¹Q v), as combinations of the candidates: solve
  // Z w = S⁻¹Qv for the subspace coefficients w, then F w.
  const auto nn = static_cast<Eigen::Index>(null_columns.size());
  Eigen::MatrixXd Vn(N, nn);
  for (Eigen::Index c = 0; c < nn; ++c) {
    Vn.col(c) = Q * svd.matrixV().col(null_columns[static_cast<std::size_t>(c)]);
    for (std::size_t i = 0; i < n; ++i) Vn(static_cast<Eigen::Index>(i), c) /= scale[i];
  }
  const Eigen::MatrixXd C = F * Z.colPivHouseholderQr().solve(Vn);  // k × nn
  std::vector<std::vector<double>> combinations(static_cast<std::size_t>(nn),
                                                std::vector<double>(static_cast<std::size_t>(k)));
  for (Eigen::Index c = 0; c < nn; ++c)
    for (Eigen::Index j = 0; j < k; ++j) combinations[c][j] = C(j, c);
  return named_null_space(matrix.rows(), candidates, names, std::move(combinations));
}

}  // namespace fem
