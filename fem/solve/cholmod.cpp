// CHOLMOD (supernodal Cholesky) through its C API, and its glue to our substitutions
// (detail/supernodal.hpp): the factor repacked after each numeric factorization and solved by
// SupernodalSolve; CholmodReference for the tests. UMFPACK and KLU: umfpack.cpp, klu.cpp.
#include <cholmod.h>
#include <fmt/format.h>
#include <omp.h>

#include <Eigen/Core>
#include <cstring>
#include <fem/memory.hpp>
#include <fem/solve/detail/suitesparse.hpp>
#include <fem/solve/detail/supernodal.hpp>
#include <optional>

namespace fem::solve::detail {
namespace {

// CHOLMOD 3 (SuiteSparse 5) runs small loops of its supernodal factorization (clearing its
// n-sized map, zeroing every supernode of more than 1024 entries) in OpenMP regions with a
// compiled-in num_threads(4) that ignores omp_get_max_threads(). On one core, or a loaded
// machine, four threads take turns on fewer cores for every supernode: measured at 1.05M DOFs
// (2D P1), a factorization took 2.43 s of CPU instead of 1.66 s. With dynamic adjustment on,
// OpenMP caps such regions at the caller's omp_get_max_threads() and the idle cores, which is
// what the caller asked for. Set for the calling thread only, for the duration of a call.
class OmpFollowsCaller {
 public:
  OmpFollowsCaller() : saved_(omp_get_dynamic()) { omp_set_dynamic(1); }
  ~OmpFollowsCaller() { omp_set_dynamic(saved_); }
  OmpFollowsCaller(const OmpFollowsCaller&) = delete;
  OmpFollowsCaller& operator=(const OmpFollowsCaller&) = delete;

 private:
  int saved_;
};

void cholmod_setup(cholmod_common& c, Ordering ordering) {
  cholmod_start(&c);
  c.print = 0;
  c.supernodal = CHOLMOD_SUPERNODAL;
  // Coarser supernodes than CHOLMOD's defaults (nrelax 4/16/48, zrelax 0.8/0.1/0.05): fewer,
  // larger dense blocks for BLAS and less per-supernode bookkeeping. At 1.05M DOFs (2D P1,
  // AMD, one core) a factorization took 1.41 s instead of 1.73 s, for 24% more factor storage
  // (explicit zeros; factor_nonzeros() still counts the true nonzeros). Kept for the solves as
  // well (detail/supernodal.hpp, bench_cached_solve, one core): CHOLMOD's defaults store 19%
  // fewer entries in 2D (82.8M against 102.5M) but the solve took 104–110 ms against 120 ms,
  // within the machine's noise of it, while the 3D factorization (n = 48) took 3.9 s, not 2.5 s.
  c.nrelax[0] = 8;
  c.nrelax[1] = 32;
  c.nrelax[2] = 96;
  c.zrelax[0] = 0.8;
  c.zrelax[1] = 0.15;
  c.zrelax[2] = 0.08;
  c.nmethods = 1;
  c.postorder = 1;
  switch (ordering) {
    case Ordering::metis:
      c.method[0].ordering = CHOLMOD_METIS;
      break;
    case Ordering::natural:
      c.method[0].ordering = CHOLMOD_NATURAL;
      break;
    case Ordering::colamd:
      c.method[0].ordering = CHOLMOD_COLAMD;
      break;  // AMD for symmetric A
    default:
      c.method[0].ordering = CHOLMOD_AMD;
      break;
  }
}

cholmod_sparse cholmod_view(const CsrPattern& p, const double* values) {
  cholmod_sparse s{};
  s.nrow = s.ncol = static_cast<std::size_t>(p.rows());
  s.nzmax = p.nnz();
  s.p = mut(p.row_offsets().data());
  s.i = mut(p.col_indices().data());
  s.x = values ? mut(values) : nullptr;
  s.stype = 1;
  s.itype = CHOLMOD_INT;
  s.xtype = values ? CHOLMOD_REAL : CHOLMOD_PATTERN;
  s.dtype = CHOLMOD_DOUBLE;
  s.sorted = 1;
  s.packed = 1;
  return s;
}

// The symbolic analysis. A pattern whose factor has more than 2^31 - 1 entries (CHOLMOD's int
// interface cannot index it: CHOLMOD_TOO_LARGE) is analyzed all the same: the ordering and the
// column counts are done, and Common->lnz holds the factor's nonzeros when supernodal analysis
// gives up; such an analysis holds no factor, and factorize() refuses it at once (too_large).
class CholmodSymbolic final : public SuiteSparseSymbolic<Backend::cholmod> {
 public:
  CholmodSymbolic(std::shared_ptr<const CsrPattern> p, Ordering ordering)
      : SuiteSparseSymbolic(std::move(p), ordering) {
    cholmod_setup(c_, ordering);
    cholmod_sparse s = cholmod_view(pattern(), nullptr);
    const OmpFollowsCaller threads;
    L_ = cholmod_analyze(&s, &c_);
    if (!L_ && c_.status == CHOLMOD_TOO_LARGE) {
      too_large_ = true;
      lnz_ = c_.lnz > 0 ? static_cast<std::size_t>(c_.lnz) : 0;
      cholmod_free_work(&c_);
      bytes_ = c_.memory_inuse;
      return;
    }
    if (!L_ || c_.status < CHOLMOD_OK) {
      const int status = c_.status;
      cholmod_finish(&c_);
      throw NumericalError(fmt::format("cholmod_analyze failed (status {}{})", status,
                                       status == CHOLMOD_OUT_OF_MEMORY ? ": out of memory" : ""));
    }
    lnz_ = static_cast<std::size_t>(c_.lnz);
    cholmod_free_work(&c_);
    bytes_ = c_.memory_inuse;
    if (L_->is_super && L_->itype == CHOLMOD_INT) {
      cholmod_factor* fine = fundamental_supernodes(s, L_);
      const auto fine_structure = fine ? structure(fine) : SupernodalSolve::Structure{};
      solve_.emplace(structure(L_), fine ? &fine_structure : nullptr);
      free_fundamental(fine);
      bytes_ += solve_->bytes();
    }
  }
  ~CholmodSymbolic() override {
    cholmod_free_factor(&L_, &c_);
    cholmod_finish(&c_);
  }
  cholmod_factor* factor() const noexcept { return L_; }
  std::size_t lnz() const noexcept { return lnz_; }
  /// The factor has more entries than the int interface can index.
  bool too_large() const noexcept { return too_large_; }
  /// Our substitutions for every numeric factor of this structure (nullptr: CHOLMOD's own).
  const SupernodalSolve* supernodal_solve() const noexcept { return solve_ ? &*solve_ : nullptr; }

  static SupernodalSolve::Structure structure(const cholmod_factor* L) {
    return {static_cast<index_t>(L->n),        static_cast<index_t>(L->nsuper),
            static_cast<const int*>(L->super), static_cast<const int*>(L->pi),
            static_cast<const int*>(L->px),    static_cast<const int*>(L->s),
            static_cast<const int*>(L->Perm)};
  }

  /// The numeric factorization's memory: a copy of this analysis (the integer part of L) plus
  /// L->x (xsize doubles, explicit zeros of the relaxed supernodes included); the workspace of
  /// cholmod_factorize is the largest update matrix (maxcsize doubles) and a few n-sized arrays.
  /// Too large: at least 8 bytes per nonzero.
  Prediction prediction() const {
    Prediction p;
    p.nonzeros = static_cast<double>(lnz_);
    p.basis = "predicted by CHOLMOD's symbolic analysis";
    const double n = static_cast<double>(pattern().rows());
    if (too_large_) {
      if (lnz_ == 0) {  // gave up before counting: the int range is the lower bound
        p.nonzeros = 2147483647.0;
        p.basis = "at least; CHOLMOD's symbolic analysis";
      }
      p.factor_bytes = p.nonzeros * sizeof(double);
      p.basis += ", at least 8 bytes per nonzero";
    } else {
      p.factor_bytes = static_cast<double>(L_->xsize) * sizeof(double) + static_cast<double>(bytes_);
      p.workspace_bytes = static_cast<double>(L_->maxcsize) * sizeof(double) + 8 * n * sizeof(int);
    }
    return p;
  }

 private:
  mutable cholmod_common c_{};
  cholmod_factor* L_ = nullptr;
  std::size_t lnz_ = 0;
  bool too_large_ = false;
  std::optional<SupernodalSolve> solve_;

  // The same factor's supernodes without relaxation: a second analysis with L's permutation
  // (no ordering, no postorder; 0.09 s at 118k DOFs in 3D, 0.4 s at 1.05M in 2D), read for the
  // solve's layout and freed. nullptr where it fails: the solve then keeps L's supernodes.
  cholmod_factor* fundamental_supernodes(cholmod_sparse& pattern, const cholmod_factor* L) {
    cholmod_start(&fine_c_);
    fine_c_.print = 0;
    fine_c_.supernodal = CHOLMOD_SUPERNODAL;
    for (int i = 0; i < 3; ++i) {
      fine_c_.nrelax[i] = 0;
      fine_c_.zrelax[i] = 0.0;
    }
    fine_c_.nmethods = 1;
    fine_c_.method[0].ordering = CHOLMOD_GIVEN;
    fine_c_.postorder = 0;
    const OmpFollowsCaller threads;
    cholmod_factor* F = cholmod_analyze_p(&pattern, static_cast<int*>(L->Perm), nullptr, 0, &fine_c_);
    if (F && (!F->is_super || F->itype != CHOLMOD_INT || F->n != L->n)) cholmod_free_factor(&F, &fine_c_);
    return F;
  }
  void free_fundamental(cholmod_factor* F) {
    cholmod_free_factor(&F, &fine_c_);
    cholmod_finish(&fine_c_);
  }
  cholmod_common fine_c_{};
};

struct CholmodWorkspace {
  cholmod_common c;
  cholmod_dense *x = nullptr, *y = nullptr, *e = nullptr;
  CholmodWorkspace() {
    cholmod_start(&c);
    c.print = 0;
  }
  ~CholmodWorkspace() {
    cholmod_free_dense(&x, &c);
    cholmod_free_dense(&y, &c);
    cholmod_free_dense(&e, &c);
    cholmod_finish(&c);
  }
};
CholmodWorkspace& cholmod_workspace() {
  thread_local CholmodWorkspace workspace;
  return workspace;
}

// CHOLMOD's own solve with a factor in its layout (a simplicial one, or one left unpacked).
SolveReport solve_with(const cholmod_factor* L, std::span<const double> B, std::span<double> X,
                       index_t nrhs) {
  // A per-thread cholmod_common and solve workspace: the factor is only read, so solves run in
  // parallel, and repeated solves reuse X, Y and E (fresh ones cost page faults).
  CholmodWorkspace& ws = cholmod_workspace();
  cholmod_dense b{};
  b.nrow = L->n;
  b.ncol = static_cast<std::size_t>(nrhs);
  b.nzmax = b.nrow * b.ncol;
  b.d = b.nrow;
  b.x = mut(B.data());
  b.xtype = CHOLMOD_REAL;
  b.dtype = CHOLMOD_DOUBLE;
  const int ok = cholmod_solve2(CHOLMOD_A, const_cast<cholmod_factor*>(L), &b, nullptr, &ws.x, nullptr, &ws.y,
                                &ws.e, &ws.c);
  SolveReport r;
  if (!ok || !ws.x) {
    r.status = Status::backend_error;
    r.reason = fmt::format("cholmod_solve2 failed (status {})", ws.c.status);
  } else {
    std::memcpy(X.data(), ws.x->x, X.size() * sizeof(double));
  }
  return r;
}

class Cholmod final : public SuiteSparseFactorization<CholmodSymbolic, Backend::cholmod> {
 public:
  using SuiteSparseFactorization::SuiteSparseFactorization;
  ~Cholmod() override { release(); }
  /// A Cholesky factor exists: positive definite (of the matrix as given: none pinned).
  std::optional<Inertia> inertia() const noexcept override {
    if (!factorized() || !pinned().empty()) return std::nullopt;
    return Inertia{0, 0, size()};
  }

 protected:
  Result do_factorize(const CsrMatrix& A, bool refactor) override {
    if (!is_symmetric(A))
      return {Status::invalid_input, "cholmod: the matrix is not symmetric (use umfpack, klu or lu)", -1, -1};
    const CholmodSymbolic& sym = analysis();
    packed_ = false;
    if (sym.too_large()) {
      release();
      return too_large_for_int(sym);
    }
    if (!refactor || !L_) {
      release();
      // Before any numeric work or allocation: does the predicted factor fit?
      if (Result fits = check_fits(Backend::cholmod, sym.ordering(), sym.prediction()); !fits) return fits;
      cholmod_setup(c_, sym.ordering());
      started_ = true;
      L_ = cholmod_copy_factor(sym.factor(), &c_);
      if (!L_) return {Status::out_of_memory, "cholmod_copy_factor failed", -1, -1};
    }
    cholmod_sparse s = cholmod_view(A.pattern(), A.values().data());
    {
      const OmpFollowsCaller threads;
      cholmod_factorize(&s, L_, &c_);
    }
    cholmod_free_work(&c_);
    set_bytes(c_.memory_inuse);
    nnz_ = sym.lnz();
    if (c_.status == CHOLMOD_NOT_POSDEF) {
      const auto minor = static_cast<index_t>(L_->minor);
      const index_t col =
          L_->Perm && minor < static_cast<index_t>(L_->n) ? static_cast<const int*>(L_->Perm)[minor] : minor;
      // A later refactorization must start from a clean symbolic copy.
      cholmod_free_factor(&L_, &c_);
      return {Status::not_positive_definite,
              fmt::format("cholmod: the matrix is not positive definite (non-positive pivot "
                          "at column {})",
                          col),
              col, col};
    }
    if (c_.status == CHOLMOD_TOO_LARGE) {
      cholmod_free_factor(&L_, &c_);
      return too_large_for_int(sym);
    }
    if (c_.status == CHOLMOD_OUT_OF_MEMORY) {
      cholmod_free_factor(&L_, &c_);
      return out_of_memory(Backend::cholmod, sym.prediction());
    }
    if (c_.status < CHOLMOD_OK)
      return {Status::backend_error, fmt::format("cholmod_factorize failed (status {})", c_.status), -1, -1};
    // Repacked in place for our substitutions (detail/supernodal.hpp); a later refactorization
    // overwrites every supernode whole, so CHOLMOD never reads the packed values.
    if (const SupernodalSolve* solve = sym.supernodal_solve(); solve && L_->is_super && L_->is_ll) {
      if (!solve->pack(static_cast<double*>(L_->x))) {
        cholmod_free_factor(&L_, &c_);
        return {Status::backend_error,
                "cholmod: the factor has nonzeros outside the structure of its symbolic analysis "
                "(a factor that is not finite)",
                -1, -1};
      }
      packed_ = true;
    }
    return {};
  }

  // CHOLMOD_TOO_LARGE: the factor has more entries than an int can count.
  static Result too_large_for_int(const CholmodSymbolic& sym) {
    const Prediction p = sym.prediction();
    const MemoryAvailable memory = memory_available();
    const bool fits = p.factor_bytes * memory_safety_factor <= static_cast<double>(memory.bytes);
    std::string what = fmt::format(
        ": more than the 2^31 - 1 entries CHOLMOD's 32-bit interface can index (CHOLMOD_TOO_LARGE){}",
        fits ? fmt::format(
                   ", though {} of memory are available ({}); no backend of this build can factorize it "
                   "(all index with 32-bit integers)",
                   format_bytes(static_cast<double>(memory.bytes)), memory.source)
             : fmt::format(", and more than the {} of memory available ({})",
                           format_bytes(static_cast<double>(memory.bytes)), memory.source));
    return {Status::too_large, too_large_reason(Backend::cholmod, sym.ordering(), p, what), -1, -1};
  }

  SolveReport do_solve(std::span<const double> B, std::span<double> X, index_t nrhs, bool) const override {
    // Ours, on the packed factor (see detail/supernodal.hpp).
    if (packed_) {
      analysis().supernodal_solve()->solve(static_cast<const double*>(L_->x), B.data(), X.data(), nrhs);
      return {};
    }
    return solve_with(L_, B, X, nrhs);
  }

 public:
  SupernodalInfo info() const {
    SupernodalInfo i;
    if (!L_ || !symbolic()) return i;
    const CholmodSymbolic& sym = analysis();
    i.stored = static_cast<std::int64_t>(L_->is_super ? L_->xsize : L_->nzmax);
    i.entries = i.stored;
    if (packed_) {
      const SupernodalSolve& s = *sym.supernodal_solve();
      i.ours = true;
      i.subtrees = s.subtrees();
      i.entries = s.entries();
      i.nodes = s.nodes();
      i.row_indices = s.row_indices();
    }
    i.supernodes = L_->is_super ? static_cast<std::int64_t>(L_->nsuper) : 0;
    return i;
  }

 private:
  void release() override {
    if (started_) {
      cholmod_free_factor(&L_, &c_);
      cholmod_finish(&c_);
      started_ = false;
    }
    set_bytes(0);
  }
  cholmod_common c_{};
  bool started_ = false;
  cholmod_factor* L_ = nullptr;
  bool packed_ = false;  // L_->x holds the solve's layout (SupernodalSolve::pack)
};

}  // namespace

SupernodalInfo supernodal_info(const Factorization& f) {
  const auto* c = dynamic_cast<const Cholmod*>(&f);
  return c && f.factorized() ? c->info() : SupernodalInfo{};
}

struct CholmodReference::Impl {
  cholmod_common c{};
  cholmod_factor* L = nullptr;
  ~Impl() {
    cholmod_free_factor(&L, &c);
    cholmod_finish(&c);
  }
};

CholmodReference::CholmodReference(const Factorization& f, const CsrMatrix& A)
    : impl_(std::make_unique<Impl>()) {
  const auto* sym = dynamic_cast<const CholmodSymbolic*>(f.symbolic().get());
  FEM_EXPECTS(sym && sym->factor(), "CholmodReference needs an analyzed CHOLMOD factorization");
  cholmod_setup(impl_->c, sym->ordering());
  impl_->L = cholmod_copy_factor(sym->factor(), &impl_->c);
  cholmod_sparse s = cholmod_view(A.pattern(), A.values().data());
  {
    const OmpFollowsCaller threads;
    cholmod_factorize(&s, impl_->L, &impl_->c);
  }
  if (impl_->c.status != CHOLMOD_OK)
    throw NumericalError(
        fmt::format("CholmodReference: cholmod_factorize failed (status {})", impl_->c.status));
}

CholmodReference::~CholmodReference() = default;

SolveReport CholmodReference::solve(std::span<const double> B, std::span<double> X, index_t nrhs) const {
  return solve_with(impl_->L, B, X, nrhs);
}

std::unique_ptr<Factorization> make_cholmod(const Options& o) { return std::make_unique<Cholmod>(o); }

// --- inertia: a supernodal LDLᵀ on CHOLMOD's analysis ----------------------------------------
//
// Left-looking, as CHOLMOD's own supernodal Cholesky: each supernode gathers its columns of
// P A Pᵀ, subtracts the updates L_d D_d L_dᵀ of the descendants that reach it (one dense product
// each), and factorizes its panel as L D Lᵀ without pivoting (blocked: unblocked 32-column
// steps, the rest of the panel updated by one product per step). Only the signs of D are kept:
// the factor is dropped when the count is made. Without pivoting an LDLᵀ may meet a tiny pivot
// near an eigenvalue of the pencil; Sylvester's law holds for the factorization that exists,
// and a zero pivot is reported as a zero eigenvalue (the caller moves its shift).
Inertia supernodal_ldlt_inertia(const Symbolic& symbolic, const CsrMatrix& A) {
  const auto& sym = dynamic_cast<const CholmodSymbolic&>(symbolic);
  if (sym.too_large() || !sym.factor() || !sym.factor()->is_super)
    throw NumericalError(
        "inertia: CHOLMOD's analysis holds no supernodal factor (too large for its int interface)");
  const cholmod_factor* L = sym.factor();
  const auto n = static_cast<index_t>(L->n);
  FEM_EXPECTS(A.rows() == n, "inertia: the matrix has {} rows, its analysis {}", A.rows(), n);
  const auto nsuper = static_cast<index_t>(L->nsuper);
  const int* super = static_cast<const int*>(L->super);
  const int* pi = static_cast<const int*>(L->pi);
  const int* px = static_cast<const int*>(L->px);
  const int* rows = static_cast<const int*>(L->s);
  const int* perm = static_cast<const int*>(L->Perm);

  // P A Pᵀ's lower triangle by columns.
  std::vector<index_t> pinv(static_cast<std::size_t>(n));
  for (index_t k = 0; k < n; ++k) pinv[static_cast<std::size_t>(perm ? perm[k] : k)] = k;
  const auto& p = A.pattern();
  std::vector<index_t> colptr(static_cast<std::size_t>(n) + 1, 0);
  for (index_t r = 0; r < n; ++r)
    for (index_t k = p.row_offsets()[r]; k < p.row_offsets()[r + 1]; ++k) {
      const index_t i = pinv[static_cast<std::size_t>(r)],
                    j = pinv[static_cast<std::size_t>(p.col_indices()[k])];
      if (i >= j) ++colptr[static_cast<std::size_t>(j) + 1];
    }
  for (index_t j = 0; j < n; ++j)
    colptr[static_cast<std::size_t>(j) + 1] += colptr[static_cast<std::size_t>(j)];
  std::vector<index_t> rowind(static_cast<std::size_t>(colptr.back())),
      fill(colptr.begin(), colptr.end() - 1);
  std::vector<double> val(rowind.size());
  for (index_t r = 0; r < n; ++r)
    for (index_t k = p.row_offsets()[r]; k < p.row_offsets()[r + 1]; ++k) {
      const index_t i = pinv[static_cast<std::size_t>(r)],
                    j = pinv[static_cast<std::size_t>(p.col_indices()[k])];
      if (i < j) continue;
      const auto at = static_cast<std::size_t>(fill[static_cast<std::size_t>(j)]++);
      rowind[at] = i;
      val[at] = A.values()[static_cast<std::size_t>(k)];
    }

  std::vector<double> Lx(L->xsize, 0.0), D(static_cast<std::size_t>(n), 0.0);
  std::vector<index_t> map(static_cast<std::size_t>(n), -1), super_of(static_cast<std::size_t>(n));
  for (index_t s = 0; s < nsuper; ++s)
    for (index_t k = super[s]; k < super[s + 1]; ++k) super_of[static_cast<std::size_t>(k)] = s;
  // Descendants waiting for supernode s (a linked list), and where each one's next rows start.
  std::vector<index_t> head(static_cast<std::size_t>(nsuper), -1), next(static_cast<std::size_t>(nsuper), -1),
      position(static_cast<std::size_t>(nsuper), 0);
  using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic>;
  using Block = Eigen::Map<Mat, 0, Eigen::OuterStride<>>;
  Mat C, W;
  for (index_t s = 0; s < nsuper; ++s) {
    const index_t k1 = super[s], k2 = super[s + 1], nscol = k2 - k1;
    const index_t psi = pi[s], nsrow = pi[s + 1] - psi;
    double* block = Lx.data() + px[s];
    for (index_t k = 0; k < nsrow; ++k) map[static_cast<std::size_t>(rows[psi + k])] = k;
    for (index_t j = k1; j < k2; ++j)
      for (index_t k = colptr[static_cast<std::size_t>(j)]; k < colptr[static_cast<std::size_t>(j) + 1]; ++k)
        block[map[static_cast<std::size_t>(rowind[static_cast<std::size_t>(k)])] + (j - k1) * nsrow] +=
            val[static_cast<std::size_t>(k)];
    for (index_t d = head[static_cast<std::size_t>(s)]; d != -1;) {
      const index_t dnext = next[static_cast<std::size_t>(d)];
      const index_t pdi = pi[d], pdend = pi[d + 1], ndrow = pdend - pdi, ndcol = super[d + 1] - super[d];
      const index_t pdi1 = pdi + position[static_cast<std::size_t>(d)];
      index_t pdi2 = pdi1;
      while (pdi2 < pdend && rows[pdi2] < k2) ++pdi2;
      const index_t ndrow1 = pdi2 - pdi1, ndrow2 = pdend - pdi1;
      const Block Ld(Lx.data() + px[d], ndrow, ndcol, Eigen::OuterStride<>(ndrow));
      const Eigen::Map<const Eigen::VectorXd> Dd(D.data() + super[d], ndcol);
      W.noalias() = Ld.middleRows(pdi1 - pdi, ndrow1) * Dd.asDiagonal();
      // The lower triangle of the square part (what is scattered), and the rows below it.
      C.resize(ndrow2, ndrow1);
      C.topRows(ndrow1).template triangularView<Eigen::Lower>() =
          Ld.middleRows(pdi1 - pdi, ndrow1) * W.transpose();
      if (ndrow2 > ndrow1)
        C.bottomRows(ndrow2 - ndrow1).noalias() = Ld.middleRows(pdi2 - pdi, ndrow2 - ndrow1) * W.transpose();
      for (index_t jj = 0; jj < ndrow1; ++jj) {
        const index_t col = rows[pdi1 + jj] - k1;
        for (index_t ii = jj; ii < ndrow2; ++ii)
          block[map[static_cast<std::size_t>(rows[pdi1 + ii])] + col * nsrow] -= C(ii, jj);
      }
      position[static_cast<std::size_t>(d)] = pdi2 - pdi;
      if (pdi2 < pdend) {
        const index_t t = super_of[static_cast<std::size_t>(rows[pdi2])];
        next[static_cast<std::size_t>(d)] = head[static_cast<std::size_t>(t)];
        head[static_cast<std::size_t>(t)] = d;
      }
      d = dnext;
    }
    // The panel: L D Lᵀ of its nscol columns, 32 at a time.
    Block F(block, nsrow, nscol, Eigen::OuterStride<>(nsrow));
    constexpr index_t kStep = 32;
    for (index_t j0 = 0; j0 < nscol; j0 += kStep) {
      const index_t j1 = std::min(nscol, j0 + kStep);
      for (index_t j = j0; j < j1; ++j) {
        const double dj = F(j, j);
        D[static_cast<std::size_t>(k1 + j)] = dj;
        const double inv = dj != 0.0 ? 1.0 / dj : 0.0;
        for (index_t i = j + 1; i < nsrow; ++i) F(i, j) *= inv;
        for (index_t k = j + 1; k < j1; ++k) {
          const double f = F(k, j) * dj;
          if (f != 0.0)
            for (index_t i = k; i < nsrow; ++i) F(i, k) -= F(i, j) * f;
        }
      }
      if (j1 < nscol) {  // the rest of the panel: F(j1:, j1:) -= L(j1:, j0:j1) D L(j1:nscol, j0:j1)ᵀ
        const Eigen::Map<const Eigen::VectorXd> Dj(D.data() + k1 + j0, j1 - j0);
        W.noalias() = F.block(j1, j0, nscol - j1, j1 - j0) * Dj.asDiagonal();
        F.block(j1, j1, nscol - j1, nscol - j1).template triangularView<Eigen::Lower>() -=
            F.block(j1, j0, nscol - j1, j1 - j0) * W.transpose();
        if (nsrow > nscol)
          F.block(nscol, j1, nsrow - nscol, nscol - j1).noalias() -=
              F.block(nscol, j0, nsrow - nscol, j1 - j0) * W.transpose();
      }
    }
    position[static_cast<std::size_t>(s)] = nscol;
    if (nsrow > nscol) {
      const index_t t = super_of[static_cast<std::size_t>(rows[psi + nscol])];
      next[static_cast<std::size_t>(s)] = head[static_cast<std::size_t>(t)];
      head[static_cast<std::size_t>(t)] = s;
    }
  }
  Inertia in;
  for (double d : D) (d < 0 ? in.negative : d > 0 ? in.positive : in.zero) += 1;
  return in;
}

}  // namespace fem::solve::detail
