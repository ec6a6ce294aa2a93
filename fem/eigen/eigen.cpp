// fem::eigen (eigen.hpp): shift-invert Lanczos (Spectra's SymGEigsShiftSolver) with the
// project's operator on the factorization cache, Sturm counts from cached LDLᵀ factorizations,
// deflated restarts for missed copies of multiple eigenvalues, a dense solver for tiny problems.
#include "fem/eigen/eigen.hpp"

#include <Spectra/SymGEigsShiftSolver.h>
#include <fmt/format.h>

#include <Eigen/Core>
#include <Eigen/Eigenvalues>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "fem/error.hpp"

namespace fem::eigen {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;

struct Clock {
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
};

std::uint64_t fnv1a(std::span<const index_t> v) {
  std::uint64_t h = 1469598103934665603ull;
  for (index_t x : v)
    for (int b = 0; b < static_cast<int>(sizeof(index_t)); ++b) {
      h ^= (static_cast<std::uint64_t>(x) >> (8 * b)) & 0xffu;
      h *= 1099511628211ull;
    }
  return h;
}

// The problem on the free unknowns: K and M as store entries (the user's, or derived ones with
// the constrained rows and columns removed, M lumped on request).
struct Problem {
  Store& store;
  std::string k_key, m_key;
  std::shared_ptr<const CsrMatrix> K, M;
  Version k_version = 0, m_version = 0;
  std::vector<index_t> free;  ///< free unknown -> full numbering (empty: all free)
  index_t full_size = 0;
  index_t size() const { return K->rows(); }
};

// A with the rows and columns of `drop` (sorted) removed.
CsrMatrix without(const CsrMatrix& A, const std::vector<index_t>& index_of, index_t n_free) {
  const auto& p = A.pattern();
  std::vector<index_t> offsets{0}, cols;
  std::vector<double> values;
  offsets.reserve(static_cast<std::size_t>(n_free) + 1);
  for (index_t r = 0; r < A.rows(); ++r) {
    if (index_of[static_cast<std::size_t>(r)] < 0) continue;
    for (index_t k = p.row_offsets()[r]; k < p.row_offsets()[r + 1]; ++k) {
      const index_t c = index_of[static_cast<std::size_t>(p.col_indices()[k])];
      if (c < 0) continue;
      cols.push_back(c);
      values.push_back(A.values()[static_cast<std::size_t>(k)]);
    }
    offsets.push_back(static_cast<index_t>(cols.size()));
  }
  return CsrMatrix(std::make_shared<const CsrPattern>(
                       CsrPattern::trusted(n_free, n_free, std::move(offsets), std::move(cols))),
                   std::move(values));
}

// Row sums on the diagonal, on A's own pattern (so that K − σM keeps K's pattern).
CsrMatrix lumped(const CsrMatrix& A) {
  const auto& p = A.pattern();
  std::vector<double> values(A.nnz(), 0.0);
  for (index_t r = 0; r < A.rows(); ++r) {
    double sum = 0;
    index_t diagonal = -1;
    for (index_t k = p.row_offsets()[r]; k < p.row_offsets()[r + 1]; ++k) {
      sum += A.values()[static_cast<std::size_t>(k)];
      if (p.col_indices()[k] == r) diagonal = k;
    }
    FEM_EXPECTS(diagonal >= 0, "eigen: lumping M needs its diagonal; row {} has none", r);
    FEM_EXPECTS(sum > 0,
                "eigen: the lumped mass of row {} is {} (a mass matrix's rows sum to positive masses)", r,
                sum);
    values[static_cast<std::size_t>(diagonal)] = sum;
  }
  return CsrMatrix(A.pattern_ptr(), std::move(values));
}

Problem make_problem(Store& store, const std::string& k_key, const std::string& m_key, const Options& o) {
  auto k = store.get_versioned<CsrMatrix>(k_key);
  auto m = store.get_versioned<CsrMatrix>(m_key);
  FEM_EXPECTS(k.value->rows() == k.value->cols() && m.value->rows() == m.value->cols() &&
                  k.value->rows() == m.value->rows(),
              "eigen: K '{}' is {} x {} and M '{}' is {} x {}; both must be square, of one size", k_key,
              k.value->rows(), k.value->cols(), m_key, m.value->rows(), m.value->cols());
  FEM_EXPECTS(solve::is_symmetric(*k.value, 1e-10), "eigen: K '{}' is not symmetric", k_key);
  FEM_EXPECTS(solve::is_symmetric(*m.value, 1e-10), "eigen: M '{}' is not symmetric", m_key);
  const index_t n = k.value->rows();
  Problem p{store, k_key, m_key, k.value, m.value, k.version, m.version, {}, n};
  std::vector<index_t> fixed = o.constrained;
  std::sort(fixed.begin(), fixed.end());
  fixed.erase(std::unique(fixed.begin(), fixed.end()), fixed.end());
  if (!fixed.empty()) {
    FEM_EXPECTS(fixed.front() >= 0 && fixed.back() < n, "eigen: constrained unknown {} is outside 0 .. {}",
                fixed.front() < 0 ? fixed.front() : fixed.back(), n - 1);
    FEM_EXPECTS(static_cast<index_t>(fixed.size()) < n, "eigen: every one of the {} unknowns is constrained",
                n);
    std::vector<index_t> index_of(static_cast<std::size_t>(n), 0);
    for (index_t f : fixed) index_of[static_cast<std::size_t>(f)] = -1;
    index_t next = 0;
    for (index_t i = 0; i < n; ++i)
      if (index_of[static_cast<std::size_t>(i)] == 0) {
        index_of[static_cast<std::size_t>(i)] = next++;
        p.free.push_back(i);
      }
    const std::string tag = fmt::format("{:016x}", fnv1a(fixed));
    const auto reduce = [&](const std::string& key, const Versioned<CsrMatrix>& a, std::string& out_key,
                            std::shared_ptr<const CsrMatrix>& out, Version& out_version) {
      out_key = fmt::format("{}#eigen/free/{}", key, tag);
      out = store.get_or_compute<CsrMatrix>(out_key, {{key, a.version}},
                                            [&] { return without(*a.value, index_of, next); });
      out_version = store.version(out_key);
    };
    reduce(k_key, k, p.k_key, p.K, p.k_version);
    reduce(m_key, m, p.m_key, p.M, p.m_version);
  }
  if (o.lumped) {
    const std::string key = p.m_key + "#eigen/lumped";
    const auto from = p.M;
    p.M = store.get_or_compute<CsrMatrix>(key, {{p.m_key, p.m_version}}, [&] { return lumped(*from); });
    p.m_key = key;
    p.m_version = store.version(key);
  }
  return p;
}

// K − σM on the union of the two patterns.
CsrMatrix shifted(const CsrMatrix& K, const CsrMatrix& M, double sigma) {
  if (K.pattern_ptr() == M.pattern_ptr() || K.pattern().fingerprint() == M.pattern().fingerprint()) {
    std::vector<double> v(K.nnz());
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = K.values()[i] - sigma * M.values()[i];
    return CsrMatrix(K.pattern_ptr(), std::move(v));
  }
  const auto &pk = K.pattern(), &pm = M.pattern();
  std::vector<index_t> offsets{0}, cols;
  std::vector<double> values;
  for (index_t r = 0; r < K.rows(); ++r) {
    index_t a = pk.row_offsets()[r], ae = pk.row_offsets()[r + 1];
    index_t b = pm.row_offsets()[r], be = pm.row_offsets()[r + 1];
    while (a < ae || b < be) {
      const index_t ca = a < ae ? pk.col_indices()[a] : std::numeric_limits<index_t>::max();
      const index_t cb = b < be ? pm.col_indices()[b] : std::numeric_limits<index_t>::max();
      const index_t c = std::min(ca, cb);
      double v = 0;
      if (ca == c) v += K.values()[static_cast<std::size_t>(a++)];
      if (cb == c) v -= sigma * M.values()[static_cast<std::size_t>(b++)];
      cols.push_back(c);
      values.push_back(v);
    }
    offsets.push_back(static_cast<index_t>(cols.size()));
  }
  return CsrMatrix(std::make_shared<const CsrPattern>(
                       CsrPattern::trusted(K.rows(), K.rows(), std::move(offsets), std::move(cols))),
                   std::move(values));
}

// The store key of K − σM: derived from K and M, so a repeated shift finds it (and its
// factorization), and a new shift reuses the pattern's symbolic analysis. σ = 0 is K itself.
std::string shifted_key(Problem& p, double sigma) {
  if (sigma == 0.0) return p.k_key;
  const std::string key = fmt::format("{}#eigen/shift/{:a}/{}", p.k_key, sigma, p.m_key);
  p.store.get_or_compute<CsrMatrix>(key, {{p.k_key, p.k_version}, {p.m_key, p.m_version}},
                                    [&] { return shifted(*p.K, *p.M, sigma); });
  return key;
}

solve::Options operator_options(const Options& o) {
  solve::Options lin = o.linear;
  lin.detect_null_space = false;  // K − σM is what it is: a singular one is an error, not a null space
  return lin;
}

// The factorization of K − σM for the operator, nudging σ off an eigenvalue it hits exactly.
// `indefinite`: σ is known to lie inside the spectrum (a Sturm count), so the automatic backend
// goes to LU at once instead of trying Cholesky first.
std::shared_ptr<const solve::Factorization> operator_factorization(Problem& p, double& sigma,
                                                                   const Options& o, bool indefinite,
                                                                   Result& r) {
  solve::Options lin = operator_options(o);
  if (indefinite && lin.backend == solve::Backend::automatic)
    lin.backend = solve::available(solve::Backend::umfpack) ? solve::Backend::umfpack : solve::Backend::lu;
  for (int attempt = 0;; ++attempt) {
    try {
      const Clock clock;
      auto f = solve::factorization(p.store, shifted_key(p, sigma), lin);
      r.factorize_seconds += clock.seconds();
      return f;
    } catch (const NumericalError& e) {
      if (attempt == 2) throw;
      const double nudged = sigma + 1e-7 * std::max(std::abs(sigma), 1e-3);
      r.log.push_back(fmt::format("K - sigma M is singular at sigma = {:.6g} ({}): shifted to {:.9g}", sigma,
                                  e.what(), nudged));
      sigma = nudged;
    }
  }
}

// Eigenvalues below τ: the negative pivots of an LDLᵀ of K − τM (solve::inertia: supernodal, on
// the pattern's cached analysis; τ nudged off an eigenvalue where a pivot vanishes).
index_t sturm(Problem& p, double tau, const Options& o, Result* r) {
  for (int attempt = 0;; ++attempt) {
    const auto before = p.store.counter("solve.factorizations");
    const Clock clock;
    const solve::Inertia in = solve::inertia(p.store, shifted_key(p, tau), operator_options(o));
    if (r) r->factorize_seconds += clock.seconds();
    if (r && p.store.counter("solve.factorizations") != before) ++r->sturm_factorizations;
    p.store.count("eigen.sturm_counts");
    if (in.zero == 0 || attempt == 2) return in.negative;
    tau += 1e-9 * std::max(std::abs(tau), 1e-3);  // on an eigenvalue: just above it
  }
}

struct ShiftInvert {  // Spectra's OpType: y = (K − σM)⁻¹ x, projected M-orthogonally to X
  using Scalar = double;
  const solve::Factorization* f;
  const CsrMatrix* M;
  const MatrixXd* X;
  index_t* applications;
  Eigen::Index n;
  Eigen::Index rows() const { return n; }
  Eigen::Index cols() const { return n; }
  void set_shift(const double&) {}
  void perform_op(const double* x, double* y) const {
    const auto nn = static_cast<std::size_t>(n);
    const auto rep = f->solve(std::span<const double>(x, nn), std::span<double>(y, nn));
    if (!rep) throw NumericalError(fmt::format("eigen: a shift-invert solve failed: {}", rep.reason));
    ++*applications;
    if (X && X->cols() > 0) {
      Eigen::Map<VectorXd> yv(y, n);
      VectorXd my(n);
      M->multiply(std::span<const double>(y, nn), std::span<double>(my.data(), nn));
      const VectorXd c = X->transpose() * my;
      yv -= *X * c;
    }
  }
};

struct MassProduct {  // Spectra's BOpType
  using Scalar = double;
  const CsrMatrix* M;
  Eigen::Index rows() const { return M->rows(); }
  Eigen::Index cols() const { return M->rows(); }
  void perform_op(const double* x, double* y) const {
    const auto n = static_cast<std::size_t>(M->rows());
    M->multiply(std::span<const double>(x, n), std::span<double>(y, n));
  }
};

struct Pairs {
  std::vector<double> values;
  MatrixXd vectors;  // n × k
};

// One Lanczos run: `nev` eigenpairs nearest σ, M-orthogonal to X.
Pairs lanczos(Problem& p, const solve::Factorization& f, double sigma, index_t nev, const MatrixXd* X,
              const Options& o, Result& r, unsigned seed) {
  const index_t n = p.size();
  const index_t locked = X ? static_cast<index_t>(X->cols()) : 0;
  nev = std::min(nev, n - locked - 1);
  if (nev <= 0) return {};
  index_t ncv = o.subspace > 0 ? o.subspace : std::max(2 * nev + 1, nev + 20);
  ncv = std::min(std::max(ncv, nev + 1), n - locked);
  if (ncv <= nev) return {};
  ShiftInvert op{&f, p.M.get(), X, &r.operator_applications, n};
  MassProduct mass{p.M.get()};
  Spectra::SymGEigsShiftSolver<ShiftInvert, MassProduct, Spectra::GEigsMode::ShiftInvert> solver(
      op, mass, static_cast<Eigen::Index>(nev), static_cast<Eigen::Index>(ncv), sigma);
  VectorXd start(n);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-0.5, 0.5);
  for (auto& v : start) v = u(rng);
  if (seed == 1 && !o.start.empty())  // the caller's, on the free unknowns
    for (index_t i = 0; i < n; ++i)
      start(i) = o.start[static_cast<std::size_t>(p.free.empty() ? i : p.free[static_cast<std::size_t>(i)])];
  if (X && X->cols() > 0) {  // start in the complement of the locked vectors
    VectorXd ms(n);
    p.M->multiply(std::span<const double>(start.data(), static_cast<std::size_t>(n)),
                  std::span<double>(ms.data(), static_cast<std::size_t>(n)));
    start -= *X * (X->transpose() * ms);
  }
  solver.init(start.data());
  const auto converged = solver.compute(Spectra::SortRule::LargestMagn, o.max_iterations, o.tolerance,
                                        Spectra::SortRule::SmallestAlge);
  if (solver.info() != Spectra::CompInfo::Successful)
    r.log.push_back(fmt::format("Lanczos: {} of {} eigenvalues converged in {} iterations", converged, nev,
                                o.max_iterations));
  Pairs out;
  if (converged == 0) return out;
  const VectorXd values = solver.eigenvalues();
  out.vectors = solver.eigenvectors();
  out.values.assign(values.data(), values.data() + values.size());
  return out;
}

// Dense K x = λ M x: every pair (small problems).
Pairs dense(const Problem& p) {
  const index_t n = p.size();
  MatrixXd K = MatrixXd::Zero(n, n), M = MatrixXd::Zero(n, n);
  for (index_t r = 0; r < n; ++r) {
    for (index_t k = p.K->pattern().row_offsets()[r]; k < p.K->pattern().row_offsets()[r + 1]; ++k)
      K(r, p.K->pattern().col_indices()[k]) = p.K->values()[static_cast<std::size_t>(k)];
    for (index_t k = p.M->pattern().row_offsets()[r]; k < p.M->pattern().row_offsets()[r + 1]; ++k)
      M(r, p.M->pattern().col_indices()[k]) = p.M->values()[static_cast<std::size_t>(k)];
  }
  Eigen::GeneralizedSelfAdjointEigenSolver<MatrixXd> es(K, M);
  if (es.info() != Eigen::Success)
    throw NumericalError("eigen: the dense generalized eigensolver failed (is M positive definite?)");
  Pairs out;
  out.values.assign(es.eigenvalues().data(), es.eigenvalues().data() + n);
  out.vectors = es.eigenvectors();
  return out;
}

// Keep the pairs whose indices are in `keep`, in ascending order of eigenvalue.
Pairs select(const Pairs& all, std::vector<index_t> keep) {
  std::sort(keep.begin(), keep.end(), [&](index_t a, index_t b) {
    return all.values[static_cast<std::size_t>(a)] < all.values[static_cast<std::size_t>(b)];
  });
  Pairs out;
  out.vectors.resize(all.vectors.rows(), static_cast<Eigen::Index>(keep.size()));
  for (std::size_t j = 0; j < keep.size(); ++j) {
    out.values.push_back(all.values[static_cast<std::size_t>(keep[j])]);
    out.vectors.col(static_cast<Eigen::Index>(j)) = all.vectors.col(keep[j]);
  }
  return out;
}

Pairs merge(const Pairs& a, const Pairs& b) {
  Pairs all;
  all.values = a.values;
  all.values.insert(all.values.end(), b.values.begin(), b.values.end());
  const Eigen::Index n = a.values.empty() ? b.vectors.rows() : a.vectors.rows();
  all.vectors.resize(n, static_cast<Eigen::Index>(all.values.size()));
  if (!a.values.empty()) all.vectors.leftCols(a.vectors.cols()) = a.vectors;
  if (!b.values.empty()) all.vectors.rightCols(b.vectors.cols()) = b.vectors;
  std::vector<index_t> every(all.values.size());
  std::iota(every.begin(), every.end(), index_t{0});
  return select(all, every);
}

// The `count` eigenvalues nearest σ among `all`.
std::vector<index_t> nearest(const Pairs& all, double sigma, index_t count) {
  std::vector<index_t> idx(all.values.size());
  std::iota(idx.begin(), idx.end(), index_t{0});
  std::stable_sort(idx.begin(), idx.end(), [&](index_t a, index_t b) {
    return std::abs(all.values[static_cast<std::size_t>(a)] - sigma) <
           std::abs(all.values[static_cast<std::size_t>(b)] - sigma);
  });
  if (static_cast<index_t>(idx.size()) > count) idx.resize(static_cast<std::size_t>(count));
  return idx;
}

double gap(double lambda, double scale) { return 1e-6 * std::max(std::abs(lambda), 1e-9 * scale); }

double trace_ratio(const Problem& p) {
  double tk = 0, tm = 0;
  for (index_t r = 0; r < p.size(); ++r) {
    tk += std::abs((*p.K)(r, r));
    tm += std::abs((*p.M)(r, r));
  }
  FEM_EXPECTS(tm > 0, "eigen: M '{}' has a zero diagonal", p.m_key);
  return tk / tm;
}

void finish(const Problem& p, const Pairs& pairs, Result& r) {
  const index_t n = p.size(), k = static_cast<index_t>(pairs.values.size());
  const MatrixXd X = k > 0 ? pairs.vectors : MatrixXd(n, 0);  // none found: n × 0, not 0 × 0
  const auto nn = static_cast<std::size_t>(n);
  MatrixXd MX(n, k), KX(n, k);
  for (index_t j = 0; j < k; ++j) {
    p.M->multiply(std::span<const double>(X.col(j).data(), nn), std::span<double>(MX.col(j).data(), nn));
    p.K->multiply(std::span<const double>(X.col(j).data(), nn), std::span<double>(KX.col(j).data(), nn));
  }
  r.eigenvalues = pairs.values;
  r.residuals.resize(static_cast<std::size_t>(k));
  // The backward error of each pair (SLEPc's EPS_ERROR_BACKWARD, with ∞-norms of K and M): it
  // stays meaningful for a zero eigenvalue, where ‖Kx‖ and λ‖Mx‖ both vanish.
  const double k_norm = p.K->norm_inf(), m_norm = p.M->norm_inf();
  for (index_t j = 0; j < k; ++j) {
    const double lambda = pairs.values[static_cast<std::size_t>(j)];
    const double res = (KX.col(j) - lambda * MX.col(j)).norm();
    const double scale = (k_norm + std::abs(lambda) * m_norm) * X.col(j).norm();
    r.residuals[static_cast<std::size_t>(j)] = scale > 0 ? res / scale : res;
    r.residual_max = std::max(r.residual_max, r.residuals[static_cast<std::size_t>(j)]);
  }
  const MatrixXd G = X.transpose() * MX - MatrixXd::Identity(k, k);
  r.orthogonality_max = k ? G.cwiseAbs().maxCoeff() : 0.0;
  r.vectors.assign(static_cast<std::size_t>(p.full_size) * static_cast<std::size_t>(k), 0.0);
  for (index_t j = 0; j < k; ++j)
    for (index_t i = 0; i < n; ++i)
      r.vectors[static_cast<std::size_t>(j) * static_cast<std::size_t>(p.full_size) +
                static_cast<std::size_t>(p.free.empty() ? i : p.free[static_cast<std::size_t>(i)])] = X(i, j);
}

void check_options(const Options& o, index_t n) {
  FEM_EXPECTS(o.start.empty() || static_cast<index_t>(o.start.size()) == n,
              "eigen: the start vector has {} entries, K has {} rows", o.start.size(), n);
  FEM_EXPECTS(o.count >= 1, "eigen: count is {}; at least one eigenvalue", o.count);
  FEM_EXPECTS(o.tolerance > 0 && o.tolerance < 1, "eigen: tolerance {} is outside (0, 1)", o.tolerance);
  FEM_EXPECTS(o.max_iterations >= 1, "eigen: max_iterations is {}", o.max_iterations);
  FEM_EXPECTS(std::isfinite(o.shift), "eigen: the shift is {}", o.shift);
  if (o.which == Which::interval)
    FEM_EXPECTS(std::isfinite(o.lower) && std::isfinite(o.upper) && o.lower < o.upper,
                "eigen: the interval [{}, {}] is empty or not finite", o.lower, o.upper);
}

}  // namespace

Result solve(Store& store, const std::string& k_key, const std::string& m_key, const Options& o) {
  const Clock total;
  Problem p = make_problem(store, k_key, m_key, o);
  check_options(o, p.full_size);
  Result r;
  r.size = p.full_size;
  const index_t n = p.size();
  store.count("eigen.solves");
  const double scale = trace_ratio(p);

  if (n <= o.dense_below) {  // every pair, exactly multiple: then pick
    const Pairs all = dense(p);
    r.method = "dense (Eigen's GeneralizedSelfAdjointEigenSolver)";
    std::vector<index_t> keep;
    const auto below = [&](double t) {
      return static_cast<index_t>(
          std::count_if(all.values.begin(), all.values.end(), [&](double v) { return v < t; }));
    };
    if (o.which == Which::smallest) {
      for (index_t i = 0; i < std::min(o.count, n); ++i) keep.push_back(i);
    } else if (o.which == Which::nearest) {
      r.shift = o.shift;
      keep = nearest(all, o.shift, o.count);
      r.sturm_count = below(o.shift);
    } else {
      r.shift = 0.5 * (o.lower + o.upper);
      for (index_t i = 0; i < n; ++i)
        if (all.values[static_cast<std::size_t>(i)] >= o.lower &&
            all.values[static_cast<std::size_t>(i)] <= o.upper)
          keep.push_back(i);
      r.sturm_count = static_cast<index_t>(keep.size());
      if (static_cast<index_t>(keep.size()) > o.count) {
        r.missing = static_cast<index_t>(keep.size()) - o.count;
        keep.resize(static_cast<std::size_t>(o.count));
      }
    }
    finish(p, select(all, keep), r);
  } else {
    // The shift: just below the spectrum for the smallest (K − σM positive definite: CHOLMOD),
    // the given one, or the middle of the interval.
    double sigma = o.which == Which::smallest  ? -1e-6 * scale
                   : o.which == Which::nearest ? o.shift
                                               : 0.5 * (o.lower + o.upper);
    index_t wanted = std::min(o.count, n - 1);
    index_t expected_in_interval = -1, below_interval = 0;
    if (o.which == Which::interval) {
      below_interval = sturm(p, o.lower, o, &r);
      expected_in_interval = sturm(p, o.upper, o, &r) - below_interval;
      r.sturm_count = expected_in_interval;
      if (expected_in_interval > o.count) {
        r.missing = expected_in_interval - o.count;
        r.log.push_back(
            fmt::format("the interval [{:.6g}, {:.6g}] holds {} eigenvalues; {} were asked for: {} "
                        "not computed (raise the count)",
                        o.lower, o.upper, expected_in_interval, o.count, r.missing));
      }
      wanted = std::min(expected_in_interval, o.count);
      // All of them: from the middle; some: the lowest, from the lower end.
      if (expected_in_interval > o.count) sigma = o.lower;
    }
    if (wanted <= 0) {  // an interval without eigenvalues: nothing to factorize
      r.method = "Sturm count (an empty interval)";
      finish(p, Pairs{}, r);
      store.count("eigen.operator_applications", 0);
      r.solve_seconds = std::max(0.0, total.seconds() - r.factorize_seconds);
      return r;
    }
    // Where σ lies: the Sturm count below it (nearest), or an interval that holds eigenvalues,
    // decides between Cholesky (below the spectrum) and LU (inside it).
    bool indefinite = false;
    if (o.which == Which::nearest) {
      r.sturm_count = sturm(p, sigma, o, &r);
      indefinite = r.sturm_count > 0;
    } else if (o.which == Which::interval) {
      indefinite = expected_in_interval > 0;
    }
    const auto f = operator_factorization(p, sigma, o, indefinite, r);
    r.shift = sigma;
    const auto in = f->inertia();
    const std::string chosen =
        in && in->negative == 0 ? "cholmod" : std::string(solve::to_string(f->backend()));
    r.method = fmt::format("shift-invert Lanczos (Spectra), {}", chosen);
    r.backend = in && in->negative == 0 && f->backend() == solve::Backend::automatic ? solve::Backend::cholmod
                                                                                     : f->backend();
    r.ordering = f->ordering();
    r.factor_nonzeros = f->factor_nonzeros();
    if (o.which == Which::smallest && !(in && in->negative == 0))
      throw InvalidArgument(
          fmt::format("eigen: K - sigma M is not positive definite at sigma = {:.6g}: K '{}' has "
                      "negative eigenvalues; ask for the eigenvalues nearest a shift or in an "
                      "interval",
                      sigma, k_key));

    // Every converged pair is kept (and locked in later runs); `found` is the selection: the
    // nearest σ, or for an interval the lowest inside it.
    Pairs all, found;
    const auto reselect = [&] {
      if (o.which != Which::interval) {
        found = select(all, nearest(all, sigma, wanted));
        return;
      }
      std::vector<index_t> inside;
      for (index_t i = 0; i < static_cast<index_t>(all.values.size()); ++i)
        if (all.values[static_cast<std::size_t>(i)] >= o.lower &&
            all.values[static_cast<std::size_t>(i)] <= o.upper)
          inside.push_back(i);
      std::sort(inside.begin(), inside.end(), [&](index_t a, index_t b) {
        return all.values[static_cast<std::size_t>(a)] < all.values[static_cast<std::size_t>(b)];
      });
      if (static_cast<index_t>(inside.size()) > wanted) inside.resize(static_cast<std::size_t>(wanted));
      found = select(all, inside);
    };
    // Below the lowest end: an interval's eigenvalues nearest a lower shift compete with those
    // under it.
    const index_t slack = o.which == Which::interval && sigma == o.lower ? 4 : 0;
    if (wanted > 0) {
      all = lanczos(p, *f, sigma, wanted + slack, nullptr, o, r, 1);
      reselect();
    }
    // Sturm counts over the window of the results; missed eigenvalues (a copy of a multiple
    // one, typically) are looked for again in the M-orthogonal complement of those found.
    const auto missing_now = [&]() -> index_t {
      const auto k = static_cast<index_t>(found.values.size());
      if (k < wanted) return wanted - k;
      if (k == 0) return 0;
      const double hi = found.values.back() + gap(found.values.back(), scale);
      if (o.which == Which::interval) {
        if (expected_in_interval <= o.count) return 0;
        // The lowest `count`: none missing below the top one (copies of the top one may be cut).
        const double lo = found.values.back() - gap(found.values.back(), scale);
        const auto under = static_cast<index_t>(
            std::count_if(found.values.begin(), found.values.end(), [&](double v) { return v < lo; }));
        return sturm(p, lo, o, &r) - below_interval - under;
      }
      const index_t above = sturm(p, hi, o, &r);
      const index_t below = o.which == Which::smallest
                                ? 0
                                : sturm(p, found.values.front() - gap(found.values.front(), scale), o, &r);
      return above - below - k;
    };
    if (o.verify || o.which == Which::interval) {
      for (int pass = 0; pass < 4; ++pass) {
        const index_t missing = missing_now();
        if (missing <= 0) {
          if (missing < 0)
            r.log.push_back(
                fmt::format("the Sturm counts show {} eigenvalue(s) fewer than found: an inaccurate "
                            "eigenvalue at the window's edge",
                            -missing));
          break;
        }
        if (pass == 3) {
          r.missing += missing;
          r.converged = false;
          r.log.push_back(
              fmt::format("{} eigenvalue(s) in the window of the results were not found", missing));
          break;
        }
        ++r.restarts;
        store.count("eigen.restarts");
        const Pairs more =
            lanczos(p, *f, sigma, missing + slack, &all.vectors, o, r, 2 + static_cast<unsigned>(pass));
        if (more.values.empty()) continue;
        all = merge(all, more);
        reselect();
      }
    }
    if (static_cast<index_t>(found.values.size()) < wanted && r.missing == 0) {
      r.converged = false;
      r.log.push_back(fmt::format("{} of {} eigenvalues converged", found.values.size(), wanted));
    }
    finish(p, found, r);
  }
  store.count("eigen.operator_applications", r.operator_applications);
  store.count("solve.solves",
              r.operator_applications);  // solves with cached factorizations, as the contract counts them
  r.solve_seconds = std::max(0.0, total.seconds() - r.factorize_seconds);
  for (double res : r.residuals)
    if (!(res <= std::max(1e-8, o.tolerance))) r.converged = false;
  return r;
}

Result solve(const std::string& K, const std::string& M, const Options& options) {
  return solve(fem::store(), K, M, options);
}

index_t count_below(Store& store, const std::string& K, const std::string& M, double sigma,
                    const Options& options) {
  FEM_EXPECTS(std::isfinite(sigma), "eigen: the shift is {}", sigma);
  Problem p = make_problem(store, K, M, options);
  return sturm(p, sigma, options, nullptr);
}

}  // namespace fem::eigen
