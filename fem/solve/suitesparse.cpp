// CHOLMOD (supernodal Cholesky), UMFPACK and KLU (LU) through their C APIs directly: Eigen's
// wrappers lose klu_refactor, symbolic reuse across objects and UMFPACK's refinement switch.
//
// A CsrPattern's arrays read as compressed columns are the CSC form of Aᵀ, so UMFPACK and KLU
// factorize M = Aᵀ without a copy and solve A x = b as Mᵀ x = b (and Aᵀ x = b as M x = b).
// CHOLMOD needs no such care: A is symmetric, and stype = 1 reads one triangle.
#include <fem/solve/solve.hpp>
#include <fem/solve/detail/backends.hpp>
#include <fem/solve/detail/supernodal.hpp>

#include <algorithm>
#include <cstring>
#include <optional>
#include <fem/memory.hpp>
#include <fmt/format.h>

#include <cholmod.h>
#include <klu.h>
#include <omp.h>
#include <umfpack.h>

namespace fem::solve::detail {
namespace {

int* mut(const index_t* p) { return const_cast<int*>(p); }
double* mut(const double* p) { return const_cast<double*>(p); }

// ===================================== CHOLMOD ===========================================

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
    case Ordering::metis: c.method[0].ordering = CHOLMOD_METIS; break;
    case Ordering::natural: c.method[0].ordering = CHOLMOD_NATURAL; break;
    case Ordering::colamd: c.method[0].ordering = CHOLMOD_COLAMD; break;  // AMD for symmetric A
    default: c.method[0].ordering = CHOLMOD_AMD; break;
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
class CholmodSymbolic final : public Symbolic {
 public:
  CholmodSymbolic(std::shared_ptr<const CsrPattern> p, Ordering ordering)
      : Symbolic(std::move(p)), ordering_(ordering) {
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
  Backend backend() const noexcept override { return Backend::cholmod; }
  Ordering ordering() const noexcept override { return ordering_; }
  std::size_t bytes() const noexcept override { return bytes_; }
  cholmod_factor* factor() const noexcept { return L_; }
  std::size_t lnz() const noexcept { return lnz_; }
  /// The factor has more entries than the int interface can index.
  bool too_large() const noexcept { return too_large_; }
  /// Our substitutions for every numeric factor of this structure (nullptr: CHOLMOD's own).
  const SupernodalSolve* supernodal_solve() const noexcept { return solve_ ? &*solve_ : nullptr; }

  static SupernodalSolve::Structure structure(const cholmod_factor* L) {
    return {static_cast<index_t>(L->n),           static_cast<index_t>(L->nsuper),
            static_cast<const int*>(L->super),    static_cast<const int*>(L->pi),
            static_cast<const int*>(L->px),       static_cast<const int*>(L->s),
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
  Ordering ordering_;
  mutable cholmod_common c_{};
  cholmod_factor* L_ = nullptr;
  std::size_t lnz_ = 0, bytes_ = 0;
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

// Per-thread scratch for UMFPACK/KLU solves, grown as needed and reused.
template <class T, int Slot>
T* scratch(std::size_t n) {
  thread_local std::vector<T> buffer;
  if (buffer.size() < n) buffer.resize(n);
  return buffer.data();
}

// CHOLMOD's own solve with a factor in its layout (a simplicial one, or one left unpacked).
SolveReport solve_with(const cholmod_factor* L, std::span<const double> B, std::span<double> X, index_t nrhs) {
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

class Cholmod final : public Factorization {
 public:
  explicit Cholmod(const Options& o) : Factorization(o) {}
  ~Cholmod() override { release(); }
  Backend backend() const noexcept override { return Backend::cholmod; }
  std::size_t factor_nonzeros() const noexcept override { return lnz_; }
  std::size_t bytes() const noexcept override { return bytes_; }

 protected:
  std::shared_ptr<const Symbolic> do_analyze(std::shared_ptr<const CsrPattern> p,
                                             Ordering ordering) override {
    release();
    return std::make_shared<CholmodSymbolic>(std::move(p), ordering);
  }

  Result do_factorize(const CsrMatrix& A, bool refactor) override {
    if (!is_symmetric(A))
      return {Status::invalid_input,
              "cholmod: the matrix is not symmetric (use umfpack, klu or lu)", -1, -1};
    const auto& sym = static_cast<const CholmodSymbolic&>(*symbolic());
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
    lnz_ = sym.lnz();
    if (c_.status == CHOLMOD_NOT_POSDEF) {
      const auto minor = static_cast<index_t>(L_->minor);
      const index_t col = L_->Perm && minor < static_cast<index_t>(L_->n)
                              ? static_cast<const int*>(L_->Perm)[minor]
                              : minor;
      // A later refactorization must start from a clean symbolic copy.
      cholmod_free_factor(&L_, &c_);
      return {Status::not_positive_definite,
              fmt::format("cholmod: the matrix is not positive definite (non-positive pivot "
                          "at column {})", col),
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

  SolveReport do_solve(std::span<const double> B, std::span<double> X, index_t nrhs,
                       bool) const override {
    // Ours, on the packed factor (see detail/supernodal.hpp).
    if (packed_) {
      static_cast<const CholmodSymbolic&>(*symbolic())
          .supernodal_solve()
          ->solve(static_cast<const double*>(L_->x), B.data(), X.data(), nrhs);
      return {};
    }
    return solve_with(L_, B, X, nrhs);
  }

 public:
  SupernodalInfo info() const {
    SupernodalInfo i;
    if (!L_ || !symbolic()) return i;
    const auto& sym = static_cast<const CholmodSymbolic&>(*symbolic());
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
  void set_bytes(std::size_t b) {
    add_live_factor_bytes(static_cast<std::int64_t>(b) - static_cast<std::int64_t>(bytes_));
    bytes_ = b;
  }
  void release() {
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
  std::size_t lnz_ = 0, bytes_ = 0;
};

// ===================================== UMFPACK ===========================================

void umfpack_setup(double* control, Ordering ordering) {
  umfpack_di_defaults(control);
  control[UMFPACK_IRSTEP] = 0;  // refinement is ours to ask for; by default it costs 4–6×
  control[UMFPACK_PRL] = 0;
  switch (ordering) {
    case Ordering::amd:
      control[UMFPACK_STRATEGY] = UMFPACK_STRATEGY_SYMMETRIC;
      control[UMFPACK_ORDERING] = UMFPACK_ORDERING_AMD;
      break;
    case Ordering::colamd:
      control[UMFPACK_STRATEGY] = UMFPACK_STRATEGY_UNSYMMETRIC;
      control[UMFPACK_ORDERING] = UMFPACK_ORDERING_AMD;
      break;
    case Ordering::metis: control[UMFPACK_ORDERING] = UMFPACK_ORDERING_METIS; break;
    case Ordering::natural: control[UMFPACK_ORDERING] = UMFPACK_ORDERING_NONE; break;
    default: break;
  }
}

class UmfpackSymbolic final : public Symbolic {
 public:
  UmfpackSymbolic(std::shared_ptr<const CsrPattern> p, Ordering ordering)
      : Symbolic(std::move(p)), ordering_(ordering) {
    umfpack_setup(control_, ordering);
    double info[UMFPACK_INFO];
    const int n = pattern().rows();
    const int status = umfpack_di_symbolic(n, n, pattern().row_offsets().data(),
                                           pattern().col_indices().data(), nullptr, &symbolic_,
                                           control_, info);
    if (status != UMFPACK_OK)
      throw NumericalError(fmt::format("umfpack_di_symbolic failed (status {})", status));
    const double unit = info[UMFPACK_SIZE_OF_UNIT];
    bytes_ = static_cast<std::size_t>(info[UMFPACK_SYMBOLIC_SIZE] * unit);
    // UMFPACK's own estimates of the factors are upper bounds, and loose ones: 1.5× (unsymmetric
    // strategy) to 28× (symmetric strategy, 2D) the factors it then made on Laplacians,
    // convection–diffusion and elasticity. The Cholesky fill of A + Aᵀ in its column order, as
    // L + U = 2 nnz(L) − n, came within 10% (above) in every case, and the Numeric object held
    // 8.2–9.3 bytes per entry: 9 are counted. The workspace (frontal matrices) is UMFPACK's
    // estimate of the numeric phase's peak beyond the Numeric object and this Symbolic.
    std::vector<int> column_order(static_cast<std::size_t>(n));
    umfpack_di_get_symbolic(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                            column_order.data(), nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                            nullptr, symbolic_);
    const auto lnz = static_cast<double>(cholesky_nonzeros(
        n, pattern().row_offsets().data(), pattern().col_indices().data(), column_order.data()));
    prediction_.nonzeros = 2 * lnz - n;
    prediction_.factor_bytes = 9 * prediction_.nonzeros + 16.0 * n * sizeof(int);
    prediction_.workspace_bytes =
        std::max(0.0, (info[UMFPACK_PEAK_MEMORY_ESTIMATE] - info[UMFPACK_NUMERIC_SIZE_ESTIMATE] -
                       info[UMFPACK_SYMBOLIC_SIZE]) *
                          unit);
    prediction_.basis = "estimated from the Cholesky fill of A + Aᵀ in UMFPACK's column order";
  }
  const Prediction& prediction() const noexcept { return prediction_; }
  ~UmfpackSymbolic() override { umfpack_di_free_symbolic(&symbolic_); }
  Backend backend() const noexcept override { return Backend::umfpack; }
  Ordering ordering() const noexcept override { return ordering_; }
  std::size_t bytes() const noexcept override { return bytes_; }
  void* handle() const noexcept { return symbolic_; }  // only read by umfpack_di_numeric
  const double* control() const noexcept { return control_; }

 private:
  Ordering ordering_;
  double control_[UMFPACK_CONTROL];
  void* symbolic_ = nullptr;
  std::size_t bytes_ = 0;
  Prediction prediction_;
};

class Umfpack final : public Factorization {
 public:
  explicit Umfpack(const Options& o) : Factorization(o) {}
  ~Umfpack() override { release(); }
  Backend backend() const noexcept override { return Backend::umfpack; }
  std::size_t factor_nonzeros() const noexcept override { return nnz_; }
  std::size_t bytes() const noexcept override { return bytes_; }

 protected:
  std::shared_ptr<const Symbolic> do_analyze(std::shared_ptr<const CsrPattern> p,
                                             Ordering ordering) override {
    release();
    return std::make_shared<UmfpackSymbolic>(std::move(p), ordering);
  }

  Result do_factorize(const CsrMatrix& A, bool) override {
    release();
    const auto& sym = static_cast<const UmfpackSymbolic&>(*symbolic());
    if (Result fits = check_fits(Backend::umfpack, sym.ordering(), sym.prediction()); !fits) return fits;
    std::copy(sym.control(), sym.control() + UMFPACK_CONTROL, control_);
    double info[UMFPACK_INFO];
    const int status =
        umfpack_di_numeric(A.pattern().row_offsets().data(), A.pattern().col_indices().data(),
                           A.values().data(), sym.handle(), &numeric_, control_, info);
    if (status == UMFPACK_WARNING_singular_matrix) {
      // Find the zero pivot: U(k,k) of P M Q is M(P[k], Q[k]) = A(Q[k], P[k]).
      const int n = size();
      std::vector<int> P(static_cast<std::size_t>(n)), Q(static_cast<std::size_t>(n));
      std::vector<double> D(static_cast<std::size_t>(n));
      int do_recip = 0;
      index_t row = -1, col = -1;
      if (umfpack_di_get_numeric(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                 P.data(), Q.data(), D.data(), &do_recip, nullptr,
                                 numeric_) == UMFPACK_OK) {
        for (int k = 0; k < n; ++k)
          if (D[static_cast<std::size_t>(k)] == 0.0) {
            row = Q[static_cast<std::size_t>(k)];
            col = P[static_cast<std::size_t>(k)];
            break;
          }
      }
      release();
      return {Status::singular,
              col >= 0 ? fmt::format("umfpack: the matrix is singular (zero pivot at row {}, "
                                     "column {})", row, col)
                       : std::string("umfpack: the matrix is singular"),
              row, col};
    }
    if (status == UMFPACK_ERROR_out_of_memory) {
      release();
      return out_of_memory(Backend::umfpack, sym.prediction());
    }
    if (status != UMFPACK_OK) {
      release();
      return {Status::backend_error, fmt::format("umfpack_di_numeric failed (status {})", status), -1, -1};
    }
    int lnz = 0, unz = 0, nr = 0, nc = 0, nzud = 0;
    umfpack_di_get_lunz(&lnz, &unz, &nr, &nc, &nzud, numeric_);
    nnz_ = static_cast<std::size_t>(lnz) + static_cast<std::size_t>(unz) -
           static_cast<std::size_t>(size());
    set_bytes(static_cast<std::size_t>(info[UMFPACK_NUMERIC_SIZE] * info[UMFPACK_SIZE_OF_UNIT]));
    return {};
  }

  SolveReport do_solve(std::span<const double> B, std::span<double> X, index_t nrhs,
                       bool transpose) const override {
    const auto n = static_cast<std::size_t>(size());
    int* wi = scratch<int, 0>(n);
    double* w = scratch<double, 1>(5 * n);
    double info[UMFPACK_INFO];
    // M = Aᵀ is what UMFPACK holds: A x = b is Mᵀ x = b.
    const int sys = transpose ? UMFPACK_A : UMFPACK_At;
    SolveReport r;
    for (index_t k = 0; k < nrhs; ++k) {
      const int status = umfpack_di_wsolve(sys, nullptr, nullptr, nullptr, X.data() + k * n,
                                           B.data() + k * n, numeric_, control_, info, wi, w);
      if (status != UMFPACK_OK) {
        r.status = status == UMFPACK_WARNING_singular_matrix ? Status::singular
                                                             : Status::backend_error;
        r.reason = fmt::format("umfpack_di_wsolve failed (status {})", status);
        return r;
      }
    }
    return r;
  }

 private:
  void set_bytes(std::size_t b) {
    add_live_factor_bytes(static_cast<std::int64_t>(b) - static_cast<std::int64_t>(bytes_));
    bytes_ = b;
  }
  void release() {
    if (numeric_) umfpack_di_free_numeric(&numeric_);
    numeric_ = nullptr;
    set_bytes(0);
  }
  double control_[UMFPACK_CONTROL];
  void* numeric_ = nullptr;
  std::size_t nnz_ = 0, bytes_ = 0;
};

// ======================================= KLU =============================================

// KLU's user ordering: METIS, returning nnz(L) with the diagonal (the Cholesky fill of the
// block's A + Aᵀ in that order), which KLU keeps as its fill estimate and sizes L and U by, as
// it does with AMD's count (returning 1 made it start from nothing and grow).
int klu_metis_order(int n, int* Ap, int* Ai, int* Perm, klu_common*) {
  try {
    const auto perm = metis_order(n, Ap, Ai);
    std::copy(perm.begin(), perm.end(), Perm);
    const std::int64_t lnz = cholesky_nonzeros(n, Ap, Ai, perm.data());
    return static_cast<int>(std::clamp<std::int64_t>(lnz, 1, 2147483647));
  } catch (...) {
    return 0;
  }
}

class KluSymbolic final : public Symbolic {
 public:
  KluSymbolic(std::shared_ptr<const CsrPattern> p, Ordering ordering)
      : Symbolic(std::move(p)), ordering_(ordering) {
    klu_defaults(&c_);
    const int n = pattern().rows();
    int* Ap = mut(pattern().row_offsets().data());
    int* Ai = mut(pattern().col_indices().data());
    switch (ordering) {
      case Ordering::colamd: c_.ordering = 1; break;
      case Ordering::metis:
        c_.ordering = 3;
        c_.user_order = &klu_metis_order;
        break;
      default: c_.ordering = 0; break;
    }
    symbolic_ = ordering == Ordering::natural
                    ? klu_analyze_given(n, Ap, Ai, nullptr, nullptr, &c_)
                    : klu_analyze(n, Ap, Ai, &c_);
    if (!symbolic_)
      throw NumericalError(fmt::format("klu_analyze failed (status {})", c_.status));
    bytes_ = c_.memusage;
    // KLU's fill estimates (nnz(L), nnz(U) with the diagonal) come from AMD, or from our METIS
    // callback; COLAMD and a given order leave them EMPTY: then the Cholesky fill of A + Aᵀ in
    // KLU's column order. Memory: 4-byte index + 8-byte value per entry of L, U and the
    // off-diagonal blocks, ten n-sized arrays; KLU allocates 1.2 × its estimate up front and
    // works in 4n doubles.
    double lnz = symbolic_->lnz, unz = symbolic_->unz;
    prediction_.basis = "estimated by KLU's symbolic analysis";
    if (!(lnz >= 0) || !(unz >= 0)) {
      lnz = unz = static_cast<double>(cholesky_nonzeros(n, Ap, Ai, symbolic_->Q));
      prediction_.basis = "estimated from the Cholesky fill of A + Aᵀ in KLU's column order";
    }
    const double entries = lnz + unz + static_cast<double>(symbolic_->nzoff);
    const double entry_bytes = sizeof(double) + sizeof(int);
    prediction_.nonzeros = entries - n;
    prediction_.factor_bytes = entries * entry_bytes + 10.0 * n * sizeof(double);
    prediction_.workspace_bytes = 0.2 * (lnz + unz) * entry_bytes + 4.0 * n * sizeof(double);
  }
  const Prediction& prediction() const noexcept { return prediction_; }
  ~KluSymbolic() override { klu_free_symbolic(&symbolic_, &c_); }
  Backend backend() const noexcept override { return Backend::klu; }
  Ordering ordering() const noexcept override { return ordering_; }
  std::size_t bytes() const noexcept override { return bytes_; }
  klu_symbolic* handle() const noexcept { return symbolic_; }  // read only by factor/solve

 private:
  Ordering ordering_;
  klu_common c_;
  klu_symbolic* symbolic_ = nullptr;
  std::size_t bytes_ = 0;
  Prediction prediction_;
};

class Klu final : public Factorization {
 public:
  explicit Klu(const Options& o) : Factorization(o) { klu_defaults(&c_); }
  ~Klu() override { release(); }
  Backend backend() const noexcept override { return Backend::klu; }
  std::size_t factor_nonzeros() const noexcept override { return nnz_; }
  std::size_t bytes() const noexcept override { return bytes_; }
  std::int64_t klu_refactorizations() const noexcept { return refactors_; }

 protected:
  std::shared_ptr<const Symbolic> do_analyze(std::shared_ptr<const CsrPattern> p,
                                             Ordering ordering) override {
    release();
    return std::make_shared<KluSymbolic>(std::move(p), ordering);
  }

  Result do_factorize(const CsrMatrix& A, bool refactor) override {
    const auto& sym = static_cast<const KluSymbolic&>(*symbolic());
    int* Ap = mut(A.pattern().row_offsets().data());
    int* Ai = mut(A.pattern().col_indices().data());
    double* Ax = mut(A.values().data());
    c_.tol = options().pivot_tolerance;
    if (refactor && numeric_) {
      // Same pattern, same pivot sequence: klu_refactor does no pivot search. If the old
      // pivots no longer suit the new values (tiny reciprocal pivot growth), factor afresh.
      if (klu_refactor(Ap, Ai, Ax, sym.handle(), numeric_, &c_) && c_.status == KLU_OK &&
          klu_rcond(sym.handle(), numeric_, &c_) && c_.rcond > 1e-12) {
        ++refactors_;
        return {};
      }
    }
    release();
    if (Result fits = check_fits(Backend::klu, sym.ordering(), sym.prediction()); !fits) return fits;
    numeric_ = klu_factor(Ap, Ai, Ax, sym.handle(), &c_);
    if (!numeric_) {
      if (c_.status == KLU_SINGULAR) {
        // KLU names the column of M = Aᵀ, i.e. the row of A.
        const index_t row = c_.singular_col;
        return {Status::singular,
                fmt::format("klu: the matrix is singular (zero pivot in row {})", row), row, -1};
      }
      if (c_.status == KLU_TOO_LARGE)
        return {Status::too_large,
                too_large_reason(Backend::klu, sym.ordering(), sym.prediction(),
                                 ": more entries than KLU's 32-bit interface can index (KLU_TOO_LARGE)"),
                -1, -1};
      if (c_.status == KLU_OUT_OF_MEMORY)
        return out_of_memory(Backend::klu, sym.prediction());
      return {Status::backend_error, fmt::format("klu_factor failed (status {})", c_.status), -1, -1};
    }
    nnz_ = static_cast<std::size_t>(numeric_->lnz + numeric_->unz - size() + numeric_->nzoff);
    set_bytes(c_.memusage);
    return {};
  }

  SolveReport do_solve(std::span<const double> B, std::span<double> X, index_t nrhs,
                       bool transpose) const override {
    // klu_solve works in Numeric->Xwork. A shallow copy of the Numeric header with a private
    // Xwork (KLU needs 4n entries) and a private klu_common makes concurrent solves safe.
    const auto n = static_cast<std::size_t>(size());
    klu_numeric numeric = *numeric_;
    numeric.Xwork = scratch<double, 2>(4 * n);
    klu_common c;
    klu_defaults(&c);
    std::copy(B.begin(), B.end(), X.begin());
    const auto& sym = static_cast<const KluSymbolic&>(*symbolic());
    // M = Aᵀ: A x = b is Mᵀ x = b (klu_tsolve).
    const int ok = transpose ? klu_solve(sym.handle(), &numeric, size(), nrhs, X.data(), &c)
                             : klu_tsolve(sym.handle(), &numeric, size(), nrhs, X.data(), &c);
    SolveReport r;
    if (!ok || c.status != KLU_OK) {
      r.status = Status::backend_error;
      r.reason = fmt::format("klu solve failed (status {})", c.status);
    }
    return r;
  }

 private:
  void set_bytes(std::size_t b) {
    add_live_factor_bytes(static_cast<std::int64_t>(b) - static_cast<std::int64_t>(bytes_));
    bytes_ = b;
  }
  void release() {
    if (numeric_) klu_free_numeric(&numeric_, &c_);
    numeric_ = nullptr;
    set_bytes(0);
  }
  klu_common c_;
  klu_numeric* numeric_ = nullptr;
  std::size_t nnz_ = 0, bytes_ = 0;
  std::int64_t refactors_ = 0;
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

CholmodReference::CholmodReference(const Factorization& f, const CsrMatrix& A) : impl_(std::make_unique<Impl>()) {
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
    throw NumericalError(fmt::format("CholmodReference: cholmod_factorize failed (status {})", impl_->c.status));
}

CholmodReference::~CholmodReference() = default;

SolveReport CholmodReference::solve(std::span<const double> B, std::span<double> X, index_t nrhs) const {
  return solve_with(impl_->L, B, X, nrhs);
}

std::unique_ptr<Factorization> make_cholmod(const Options& o) { return std::make_unique<Cholmod>(o); }
std::unique_ptr<Factorization> make_umfpack(const Options& o) { return std::make_unique<Umfpack>(o); }
std::unique_ptr<Factorization> make_klu(const Options& o) { return std::make_unique<Klu>(o); }

}  // namespace fem::solve::detail
