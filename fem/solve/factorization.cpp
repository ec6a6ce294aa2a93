// The backend-independent half of fem::solve: phases and checks of Factorization, the factory,
// iterative refinement, symmetry detection and the automatic choice of backend.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <fem/norm.hpp>
#include <fem/solve/detail/backends.hpp>
#include <fem/solve/solve.hpp>
#include <limits>
#include <optional>

#ifdef FEM_SOLVE_HAVE_METIS
#include <metis.h>
#endif

namespace fem::solve {

namespace {
std::atomic<std::int64_t> g_live_factor_bytes{0};
}

void detail::add_live_factor_bytes(std::int64_t delta) noexcept {
  g_live_factor_bytes.fetch_add(delta, std::memory_order_relaxed);
}
std::int64_t live_factor_bytes() noexcept { return g_live_factor_bytes.load(std::memory_order_relaxed); }

std::string_view to_string(Backend backend) noexcept {
  switch (backend) {
    case Backend::automatic:
      return "automatic";
    case Backend::cholmod:
      return "cholmod";
    case Backend::umfpack:
      return "umfpack";
    case Backend::klu:
      return "klu";
    case Backend::ldlt:
      return "ldlt";
    case Backend::lu:
      return "lu";
    case Backend::mumps:
      return "mumps";
    case Backend::gamg:
      return "gamg";
    case Backend::hypre:
      return "hypre";
    case Backend::fieldsplit:
      return "fieldsplit";
  }
  return "?";
}

namespace {
template <class E>
E from_name(std::string_view name, std::string_view what, std::initializer_list<E> all) {
  if (name == "auto" || name == "automatic") return *all.begin();  // automatic comes first
  std::string known = "auto";
  for (E e : all) {
    if (e != *all.begin() && to_string(e) == name) return e;
    if (e != *all.begin()) known += fmt::format(", {}", to_string(e));
  }
  throw InvalidArgument(fmt::format("{} '{}': one of {}", what, name, known));
}
}  // namespace

Backend backend_from_name(std::string_view name, std::string_view what) {
  using enum Backend;
  return from_name(name, what, {automatic, cholmod, umfpack, klu, ldlt, lu, mumps, gamg, hypre, fieldsplit});
}

Ordering ordering_from_name(std::string_view name, std::string_view what) {
  using enum Ordering;
  return from_name(name, what, {automatic, amd, colamd, metis, natural});
}

bool distributed(Backend backend) noexcept {
  return backend == Backend::mumps || backend == Backend::gamg || backend == Backend::hypre ||
         backend == Backend::fieldsplit;
}

std::string_view to_string(Ordering ordering) noexcept {
  switch (ordering) {
    case Ordering::automatic:
      return "automatic";
    case Ordering::amd:
      return "amd";
    case Ordering::colamd:
      return "colamd";
    case Ordering::metis:
      return "metis";
    case Ordering::natural:
      return "natural";
  }
  return "?";
}

std::string_view to_string(Status status) noexcept {
  switch (status) {
    case Status::success:
      return "success";
    case Status::not_analyzed:
      return "not_analyzed";
    case Status::not_factorized:
      return "not_factorized";
    case Status::singular:
      return "singular";
    case Status::not_positive_definite:
      return "not_positive_definite";
    case Status::non_finite_input:
      return "non_finite_input";
    case Status::invalid_input:
      return "invalid_input";
    case Status::out_of_memory:
      return "out_of_memory";
    case Status::backend_error:
      return "backend_error";
    case Status::incompatible:
      return "incompatible";
    case Status::inaccurate:
      return "inaccurate";
    case Status::too_large:
      return "too_large";
  }
  return "?";
}

bool available(Backend backend) noexcept {
  switch (backend) {
    case Backend::cholmod:
    case Backend::umfpack:
    case Backend::klu:
#ifdef FEM_SOLVE_HAVE_SUITESPARSE
      return true;
#else
      return false;
#endif
    case Backend::mumps:
    case Backend::gamg:
    case Backend::hypre:
    case Backend::fieldsplit:
      return false;
    default:
      return true;
  }
}

bool available(Ordering ordering) noexcept {
#ifndef FEM_SOLVE_HAVE_METIS
  if (ordering == Ordering::metis) return false;
#endif
  (void)ordering;
  return true;
}

namespace {
// The dimension of the mesh behind a pattern, from how a breadth-first ball grows: in d
// dimensions the ball of radius r holds ~r^d unknowns, so doubling the radius multiplies it by
// 2^d. One BFS from unknown 0, O(nnz); vector-valued unknowns do not change the exponent.
double estimated_dimension(const CsrPattern& pattern) {
  const index_t n = pattern.rows();
  if (n < 64) return 1.0;
  std::vector<index_t> level(static_cast<std::size_t>(n), -1), queue;
  queue.reserve(static_cast<std::size_t>(n));
  std::vector<std::size_t> count;  // unknowns at each level
  level[0] = 0;
  queue.push_back(0);
  for (std::size_t head = 0; head < queue.size(); ++head) {
    const index_t v = queue[head];
    const auto l = static_cast<std::size_t>(level[static_cast<std::size_t>(v)]);
    if (count.size() <= l) count.resize(l + 1, 0);
    ++count[l];
    for (index_t w : pattern.row(v))
      if (level[static_cast<std::size_t>(w)] < 0) {
        level[static_cast<std::size_t>(w)] = static_cast<index_t>(l + 1);
        queue.push_back(w);
      }
  }
  const std::size_t levels = count.size();
  if (levels < 8) return 3.0;  // tiny diameter for its size: densely connected
  std::size_t quarter = 0, half = 0;
  for (std::size_t l = 0; l < levels; ++l) {
    if (l <= levels / 4) quarter += count[l];
    if (l <= levels / 2) half += count[l];
  }
  const double r1 = static_cast<double>(levels / 4) + 1, r2 = static_cast<double>(levels / 2) + 1;
  return std::log(static_cast<double>(half) / static_cast<double>(quarter)) / std::log(r2 / r1);
}
}  // namespace

// Nested dissection pays off early in 3D (large separators' fill grows fastest), only for
// very large problems in 2D: at 1.05M DOFs (2D P1) METIS' ordering costs 4.7 s against AMD's
// 0.5 s, for 21 instead of 27 GFlop per factorization that CHOLMOD runs in the same time
// (bench/newton; see docs/solve.md).
Ordering detail::resolve_ordering(Backend backend, Ordering requested, const CsrPattern& pattern) {
  if (requested != Ordering::automatic) return requested;
  const index_t n = pattern.rows();
  bool big = false;
  if (n >= 10000) {
    const double dimension = estimated_dimension(pattern);
    big = dimension > 2.5 ? n >= 10000 : n >= 4000000;
  }
  (void)backend;  // FE patterns are (nearly) symmetric: AMD on A + Aᵀ beats COLAMD for LU too
  if (big && available(Ordering::metis)) return Ordering::metis;
  return Ordering::amd;
}

std::vector<int> detail::metis_order(int n, const int* offsets, const int* indices) {
#ifdef FEM_SOLVE_HAVE_METIS
  // Graph of A + Aᵀ without the diagonal, as METIS wants it.
  std::vector<int> degree(static_cast<std::size_t>(n), 0);
  for (int i = 0; i < n; ++i)
    for (int p = offsets[i]; p < offsets[i + 1]; ++p)
      if (indices[p] != i) {
        ++degree[static_cast<std::size_t>(i)];
        ++degree[static_cast<std::size_t>(indices[p])];
      }
  std::vector<idx_t> xadj(static_cast<std::size_t>(n) + 1, 0);
  for (int i = 0; i < n; ++i) xadj[i + 1] = xadj[i] + degree[static_cast<std::size_t>(i)];
  std::vector<idx_t> adj(static_cast<std::size_t>(xadj[n]));
  std::vector<idx_t> fill(xadj.begin(), xadj.end() - 1);
  for (int i = 0; i < n; ++i)
    for (int p = offsets[i]; p < offsets[i + 1]; ++p) {
      const int j = indices[p];
      if (j == i) continue;
      adj[static_cast<std::size_t>(fill[i]++)] = j;
      adj[static_cast<std::size_t>(fill[j]++)] = i;
    }
  // Duplicates (from symmetric entries) are removed row by row.
  std::vector<idx_t> cxadj(static_cast<std::size_t>(n) + 1, 0);
  std::vector<idx_t> cadj;
  cadj.reserve(adj.size() / 2 + 1);
  std::vector<int> mark(static_cast<std::size_t>(n), -1);
  for (int i = 0; i < n; ++i) {
    for (idx_t p = xadj[i]; p < xadj[i + 1]; ++p) {
      const idx_t j = adj[static_cast<std::size_t>(p)];
      if (mark[static_cast<std::size_t>(j)] != i) {
        mark[static_cast<std::size_t>(j)] = i;
        cadj.push_back(j);
      }
    }
    cxadj[i + 1] = static_cast<idx_t>(cadj.size());
  }
  std::vector<int> perm(static_cast<std::size_t>(n)), iperm(static_cast<std::size_t>(n));
  if (n == 0) return perm;
  idx_t nv = n;
  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  if (cadj.empty()) cadj.push_back(0);  // METIS dislikes a null adjacency
  const int rc = METIS_NodeND(&nv, cxadj.data(), cadj.data(), nullptr, options,
                              reinterpret_cast<idx_t*>(perm.data()), reinterpret_cast<idx_t*>(iperm.data()));
  if (rc != METIS_OK) throw NumericalError(fmt::format("METIS_NodeND failed (code {})", rc));
  // METIS' `perm` is new → old: row k of the permuted matrix is row perm[k] of A.
  return perm;
#else
  (void)n, (void)offsets, (void)indices;
  throw NotCompiled("METIS", "the metis ordering");
#endif
}

Result detail::check_finite(const CsrMatrix& matrix) {
  const auto values = matrix.values();
  const auto offsets = matrix.pattern().row_offsets();
  const auto cols = matrix.pattern().col_indices();
  for (std::size_t p = 0; p < values.size(); ++p) {
    if (!std::isfinite(values[p])) [[unlikely]] {
      const auto it = std::upper_bound(offsets.begin(), offsets.end(), static_cast<index_t>(p));
      const auto row = static_cast<index_t>(it - offsets.begin() - 1);
      return {Status::non_finite_input, fmt::format("matrix entry ({}, {}) is {}", row, cols[p], values[p]),
              row, cols[p]};
    }
  }
  return {};
}

SolveReport detail::check_finite(std::span<const double> data, index_t n, index_t nrhs, Backend backend) {
  for (std::size_t p = 0; p < data.size(); ++p) {
    if (!std::isfinite(data[p])) [[unlikely]] {
      const auto row = static_cast<index_t>(n > 0 ? static_cast<index_t>(p) % n : 0);
      const auto column = static_cast<index_t>(n > 0 ? static_cast<index_t>(p) / n : 0);
      SolveReport r;
      r.status = Status::non_finite_input;
      r.reason = fmt::format("{}: the right-hand side{} has entry {} = {} (a solve needs finite data)",
                             to_string(backend), nrhs > 1 ? fmt::format(" {}", column) : "", row, data[p]);
      return r;
    }
  }
  return {};
}

bool is_symmetric(const CsrMatrix& matrix, double relative_tolerance) {
  const CsrPattern& pattern = matrix.pattern();
  if (pattern.rows() != pattern.cols()) return false;
  const auto values = matrix.values();
  const auto offsets = pattern.row_offsets();
  const auto cols = pattern.col_indices();
  for (index_t i = 0; i < pattern.rows(); ++i) {
    for (index_t p = offsets[i]; p < offsets[i + 1]; ++p) {
      const index_t j = cols[p];
      if (j <= i) continue;
      const double a = values[p];
      const std::int64_t q = pattern.find(j, i);
      const double b = q < 0 ? 0.0 : values[static_cast<std::size_t>(q)];
      if (std::abs(a - b) > relative_tolerance * std::max(std::abs(a), std::abs(b))) return false;
    }
    // Entries below the diagonal without a partner above must be zero.
    for (index_t p = offsets[i]; p < offsets[i + 1]; ++p) {
      const index_t j = cols[p];
      if (j >= i) break;
      if (values[p] != 0.0 && pattern.find(j, i) < 0) return false;
    }
  }
  return true;
}

std::vector<Backend> detail::automatic_backends(const CsrMatrix& matrix) {
  const Backend cholesky = available(Backend::cholmod) ? Backend::cholmod : Backend::ldlt;
  const Backend lu = available(Backend::umfpack) ? Backend::umfpack : Backend::lu;
  if (is_symmetric(matrix)) return {cholesky, lu};
  return {lu};
}

bool detail::may_fall_back(Status status) noexcept {
  return status == Status::not_positive_definite || status == Status::singular;
}

// --- Factorization -----------------------------------------------------------------------

Factorization::~Factorization() = default;

Ordering Factorization::ordering() const noexcept {
  return symbolic_ ? symbolic_->ordering() : options_.ordering;
}

Result Factorization::analyze(std::shared_ptr<const CsrPattern> pattern) {
  FEM_EXPECTS(pattern != nullptr, "analyze: null pattern");
  if (pattern->rows() != pattern->cols())
    throw DimensionMismatch(fmt::format("{}: cannot factorize a non-square {} x {} matrix",
                                        to_string(backend()), pattern->rows(), pattern->cols()));
  // Backends disagree on an empty matrix (CHOLMOD: "status -4"); there is nothing to factorize.
  if (pattern->rows() == 0)
    throw InvalidArgument(
        fmt::format("{}: the matrix is 0 x 0: a system without unknowns has nothing to "
                    "factorize or solve",
                    to_string(backend())));
  const Ordering ordering = detail::resolve_ordering(backend(), options_.ordering, *pattern);
  if (!available(ordering)) throw NotCompiled("METIS", "the metis ordering");
  n_ = pattern->rows();
  factorized_ = false;
  symbolic_.reset();
  symbolic_ = do_analyze(std::move(pattern), ordering);
  ++counts_.symbolic_analyses;
  status_ = {Status::not_factorized, "analyzed, not factorized", -1, -1};
  return {};
}

void Factorization::use_symbolic(std::shared_ptr<const Symbolic> symbolic) {
  FEM_EXPECTS(symbolic != nullptr, "use_symbolic: null analysis");
  FEM_EXPECTS(symbolic->backend() == backend(), "use_symbolic: an analysis of {} given to {}",
              to_string(symbolic->backend()), to_string(backend()));
  symbolic_ = std::move(symbolic);
  n_ = symbolic_->pattern().rows();
  factorized_ = false;
  status_ = {Status::not_factorized, "analyzed, not factorized", -1, -1};
}

Result Factorization::factorize(const CsrMatrix& matrix) {
  if (matrix.rows() != matrix.cols())
    throw DimensionMismatch(fmt::format("{}: cannot factorize a non-square {} x {} matrix",
                                        to_string(backend()), matrix.rows(), matrix.cols()));
  const bool same_pattern = symbolic_ && (symbolic_->pattern_ptr() == matrix.pattern_ptr() ||
                                          symbolic_->pattern().same_structure(matrix.pattern()));
  bool reused = same_pattern;
  if (!same_pattern) {
    analyze(matrix.pattern_ptr());
    reused = false;
  }
  const bool refactor = factorized_;
  factorized_ = false;
  null_space_.reset();
  pinned_.clear();
  if (Result finite = detail::check_finite(matrix); !finite) {
    status_ = finite;
    return status_;
  }
  residual_scale_ = jacobi_scale(matrix);
  std::shared_ptr<const NullSpace> null_space = matrix.null_space();
  if (!null_space && options_.detect_null_space) null_space = detail::constant_null_space(matrix);
  if (null_space) {
    // Factorize the matrix with one unknown per null vector pinned (same pattern, nonsingular).
    std::optional<CsrMatrix> pinned;
    status_ = detail::pin_null_space(matrix, *null_space, pinned_, pinned,
                                     /*declared=*/matrix.null_space() != nullptr);
    if (status_.ok()) status_ = do_factorize(*pinned, refactor);
    if (status_.ok()) {
      null_space_ = std::move(null_space);
      if (!matrix.null_space())
        add_log(fmt::format("{}: the rows sum to zero: solved with the constant null space (zero sum)",
                            to_string(backend())));
    } else {
      pinned_.clear();
    }
  } else {
    status_ = do_factorize(matrix, refactor);
  }
  if (status_.status != Status::too_large) {  // too_large: refused before any numeric work
    ++counts_.factorizations;
    if (reused) ++counts_.refactorizations;
  }
  factorized_ = status_.ok();
  return status_;
}

Result Factorization::compute(const CsrMatrix& matrix) { return factorize(matrix); }

SolveReport Factorization::checked_solve(std::span<const double> B, std::span<double> X, index_t nrhs,
                                         bool transpose) const {
  FEM_EXPECTS(nrhs >= 0, "solve: negative number of right-hand sides {}", nrhs);
  const std::size_t want = static_cast<std::size_t>(n_) * static_cast<std::size_t>(nrhs);
  if (B.size() != want || X.size() != want)
    throw DimensionMismatch(
        fmt::format("{} solve: the matrix is {} x {} with {} right-hand side(s), so b and x need {} "
                    "entries; b has {} and x has {}",
                    to_string(backend()), n_, n_, nrhs, want, B.size(), X.size()));
  if (!factorized_) {
    SolveReport r;
    r.status = status_.ok() ? Status::not_factorized : status_.status;
    r.reason = status_.ok() ? "solve before a successful factorize()" : "no factorization: " + status_.reason;
    return r;
  }
  if (nrhs == 0 || n_ == 0) return {};
  if (SolveReport data = detail::check_finite(B, n_, nrhs, backend()); !data) return data;
  SolveReport r;
  if (null_space_) {
    // Compatible data (up to the tolerance) lose their component along the null space, the
    // pinned unknowns are zero, and the solution is normalized: the same x for every backend.
    const auto n = static_cast<std::size_t>(n_);
    std::vector<double> C(B.begin(), B.end());
    const SolveReport data =
        detail::make_data_compatible(*null_space_, C, nrhs, options_.compatibility_tolerance, backend());
    if (!data) return data;
    for (index_t k = 0; k < nrhs; ++k)
      for (index_t p : pinned_) C[static_cast<std::size_t>(k) * n + static_cast<std::size_t>(p)] = 0.0;
    r = do_solve(C, X, nrhs, transpose);
    r.compatibility_defect = data.compatibility_defect;
    if (r.ok())
      for (index_t k = 0; k < nrhs; ++k) null_space_->normalize(X.subspan(k * n, n));
  } else {
    r = do_solve(B, X, nrhs, transpose);
  }
  if (r.ok()) {
    for (double v : X)
      if (!std::isfinite(v)) [[unlikely]] {
        r.status = Status::singular;
        r.reason = fmt::format("{}: the solution has non-finite entries (matrix numerically singular)",
                               to_string(backend()));
        break;
      }
  }
  return r;
}

SolveReport Factorization::solve(std::span<const double> b, std::span<double> x) const {
  return checked_solve(b, x, 1, false);
}
SolveReport Factorization::solve_transpose(std::span<const double> b, std::span<double> x) const {
  return checked_solve(b, x, 1, true);
}
SolveReport Factorization::solve(std::span<const double> B, std::span<double> X, index_t nrhs) const {
  return checked_solve(B, X, nrhs, false);
}
SolveReport Factorization::solve_transpose(std::span<const double> B, std::span<double> X,
                                           index_t nrhs) const {
  return checked_solve(B, X, nrhs, true);
}

// --- automatic ---------------------------------------------------------------------------

namespace {

class PatternOnly final : public Symbolic {
 public:
  explicit PatternOnly(std::shared_ptr<const CsrPattern> p) : Symbolic(std::move(p)) {}
  Backend backend() const noexcept override { return Backend::automatic; }
  Ordering ordering() const noexcept override { return Ordering::automatic; }
  std::size_t bytes() const noexcept override { return 0; }
};

class Automatic final : public Factorization {
 public:
  explicit Automatic(const Options& options) : Factorization(options) {}
  Backend backend() const noexcept override { return Backend::automatic; }
  std::size_t factor_nonzeros() const noexcept override { return inner_ ? inner_->factor_nonzeros() : 0; }
  std::size_t bytes() const noexcept override { return inner_ ? inner_->bytes() : 0; }
  Backend chosen() const noexcept { return inner_ ? inner_->backend() : Backend::automatic; }
  std::optional<Inertia> inertia() const noexcept override {
    return inner_ && factorized() ? inner_->inertia() : std::nullopt;
  }

 protected:
  std::shared_ptr<const Symbolic> do_analyze(std::shared_ptr<const CsrPattern> pattern, Ordering) override {
    inner_.reset();
    return std::make_shared<PatternOnly>(std::move(pattern));
  }

  Result do_factorize(const CsrMatrix& matrix, bool refactor) override {
    if (refactor && inner_) {
      Result r = inner_->factorize(matrix);
      if (r.ok() || !detail::may_fall_back(r.status)) return r;
    }
    const std::vector<Backend> candidates = detail::automatic_backends(matrix);
    Result r;
    for (std::size_t c = 0; c < candidates.size(); ++c) {
      Options inner_options = options();
      inner_options.backend = candidates[c];
      inner_ = make_factorization(candidates[c], inner_options);
      r = inner_->compute(matrix);
      if (r.ok() || c + 1 == candidates.size() || !detail::may_fall_back(r.status)) return r;
      add_log(fmt::format("automatic: {} failed ({}); fell back to {}", to_string(candidates[c]), r.reason,
                          to_string(candidates[c + 1])));
    }
    return r;
  }

  SolveReport do_solve(std::span<const double> B, std::span<double> X, index_t nrhs,
                       bool transpose) const override {
    return transpose ? inner_->solve_transpose(B, X, nrhs) : inner_->solve(B, X, nrhs);
  }

 private:
  std::unique_ptr<Factorization> inner_;
};

}  // namespace

std::unique_ptr<Factorization> detail::make_automatic(const Options& options) {
  return std::make_unique<Automatic>(options);
}

std::unique_ptr<Factorization> make_factorization(Backend backend, const Options& options) {
  Options o = options;
  o.backend = backend;
  if (!available(o.ordering)) throw NotCompiled("METIS", "the metis ordering");
  switch (backend) {
    case Backend::automatic:
      return detail::make_automatic(o);
    case Backend::ldlt:
      return detail::make_ldlt(o);
    case Backend::lu:
      return detail::make_lu(o);
    case Backend::cholmod:
    case Backend::umfpack:
    case Backend::klu:
#ifdef FEM_SOLVE_HAVE_SUITESPARSE
      if (backend == Backend::cholmod) return detail::make_cholmod(o);
      if (backend == Backend::umfpack) return detail::make_umfpack(o);
      return detail::make_klu(o);
#else
      throw NotCompiled("SuiteSparse", fmt::format("the {} backend", to_string(backend)));
#endif
    case Backend::mumps:
    case Backend::gamg:
    case Backend::hypre:
    case Backend::fieldsplit:
      throw InvalidArgument(
          fmt::format("{} is a distributed solver of fem::dist (fem::dist::make_solver), not a "
                      "factorization of one process",
                      to_string(backend)));
  }
  throw InvalidArgument("make_factorization: unknown backend");
}

std::unique_ptr<Factorization> factorize(const CsrMatrix& matrix, const Options& options) {
  auto f = make_factorization(options.backend, options);
  Result r = f->compute(matrix);
  if (!r)
    throw NumericalError(fmt::format("{} factorization failed ({}): {}", to_string(f->backend()),
                                     to_string(r.status), r.reason));
  return f;
}

namespace {
// The residual measures of SolveReport from b, x and r = b - Ax.
void measure_accuracy(const CsrMatrix& matrix, std::span<const double> scale, std::span<const double> b,
                      std::span<const double> x, std::span<const double> r, SolveReport& report) {
  const auto n = static_cast<std::size_t>(matrix.rows());
  double sr = 0, sb = 0, sx = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double s = scale.empty() ? 1.0 : scale[i];
    sr = std::max(sr, std::abs(r[i]) / s);
    sb = std::max(sb, std::abs(b[i]) / s);
    sx = std::max(sx, std::abs(x[i]) * s);
  }
  // Scaled norms: a right-hand side of 1e200 is no "non-finite residual".
  const double rn = norm2(r.first(n)), bn = norm2(b.first(n));
  report.residual = bn > 0 ? rn / bn : (rn > 0 ? std::numeric_limits<double>::infinity() : 0.0);
  report.backward_error = sx + sb > 0 ? sr / (sx + sb) : 0.0;
  report.amplification = sb > 0 ? sx / sb : (sx > 0 ? std::numeric_limits<double>::infinity() : 0.0);
}
}  // namespace

SolveReport refine(const Factorization& factorization, const CsrMatrix& matrix, std::span<const double> b,
                   std::span<double> x, int steps, bool transpose) {
  const auto n = static_cast<std::size_t>(matrix.rows());
  if (b.size() != n || x.size() != n)
    throw DimensionMismatch(fmt::format("refine: matrix {} x {}, b has {}, x has {}", matrix.rows(),
                                        matrix.cols(), b.size(), x.size()));
  std::vector<double> r(n), dx(n);
  const double bnorm = norm2(b);
  auto residual = [&] {
    if (transpose)
      matrix.multiply_transpose(x, r);
    else
      matrix.multiply(x, r);
    for (std::size_t i = 0; i < n; ++i) r[i] = b[i] - r[i];
    const double s = norm2(r);
    return bnorm > 0 ? s / bnorm : s;
  };
  SolveReport report;
  double current = residual();
  const auto& null_space = factorization.null_space();
  for (int k = 0; k < steps; ++k) {
    // A correction of a singular system solves for the residual without its (rounding-sized)
    // component along the null space: the residual of compatible data is compatible.
    if (null_space) null_space->make_compatible(r);
    SolveReport s = transpose ? factorization.solve_transpose(r, dx) : factorization.solve(r, dx);
    if (!s) return s;
    for (std::size_t i = 0; i < n; ++i) x[i] += dx[i];
    report.refinement_steps = k + 1;
    const double previous = current;
    current = residual();
    if (current == 0.0 || current > 0.5 * previous) break;  // stagnated
  }
  const auto scale = factorization.residual_scale();
  measure_accuracy(matrix, scale.size() == n ? scale : std::span<const double>{}, b, x, r, report);
  if (!std::isfinite(report.residual)) {
    report.status = Status::singular;
    report.reason = fmt::format("{}: non-finite residual", to_string(factorization.backend()));
  }
  return report;
}

}  // namespace fem::solve
