// KLU (sparse LU for circuit-like matrices) through its C API: klu_refactor reuses the pivot
// sequence when the values change, and the pattern is factorized as M = Aᵀ without a copy
// (detail/suitesparse.hpp).
#include <fmt/format.h>
#include <klu.h>

#include <algorithm>
#include <fem/solve/detail/suitesparse.hpp>

namespace fem::solve::detail {
namespace {

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

class KluSymbolic final : public SuiteSparseSymbolic<Backend::klu> {
 public:
  KluSymbolic(std::shared_ptr<const CsrPattern> p, Ordering ordering)
      : SuiteSparseSymbolic(std::move(p), ordering) {
    klu_defaults(&c_);
    const int n = pattern().rows();
    int* Ap = mut(pattern().row_offsets().data());
    int* Ai = mut(pattern().col_indices().data());
    switch (ordering) {
      case Ordering::colamd:
        c_.ordering = 1;
        break;
      case Ordering::metis:
        c_.ordering = 3;
        c_.user_order = &klu_metis_order;
        break;
      default:
        c_.ordering = 0;
        break;
    }
    symbolic_ = ordering == Ordering::natural ? klu_analyze_given(n, Ap, Ai, nullptr, nullptr, &c_)
                                              : klu_analyze(n, Ap, Ai, &c_);
    if (!symbolic_) throw NumericalError(fmt::format("klu_analyze failed (status {})", c_.status));
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
  klu_symbolic* handle() const noexcept { return symbolic_; }  // read only by factor/solve

 private:
  klu_common c_;
  klu_symbolic* symbolic_ = nullptr;
  Prediction prediction_;
};

class Klu final : public SuiteSparseFactorization<KluSymbolic, Backend::klu> {
 public:
  explicit Klu(const Options& o) : SuiteSparseFactorization(o) { klu_defaults(&c_); }
  ~Klu() override { release(); }
  std::int64_t klu_refactorizations() const noexcept { return refactors_; }

 protected:
  Result do_factorize(const CsrMatrix& A, bool refactor) override {
    const KluSymbolic& sym = analysis();
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
        return {Status::singular, fmt::format("klu: the matrix is singular (zero pivot in row {})", row), row,
                -1};
      }
      if (c_.status == KLU_TOO_LARGE)
        return {Status::too_large,
                too_large_reason(Backend::klu, sym.ordering(), sym.prediction(),
                                 ": more entries than KLU's 32-bit interface can index (KLU_TOO_LARGE)"),
                -1, -1};
      if (c_.status == KLU_OUT_OF_MEMORY) return out_of_memory(Backend::klu, sym.prediction());
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
    const KluSymbolic& sym = analysis();
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
  void release() override {
    if (numeric_) klu_free_numeric(&numeric_, &c_);
    numeric_ = nullptr;
    set_bytes(0);
  }
  klu_common c_;
  klu_numeric* numeric_ = nullptr;
  std::int64_t refactors_ = 0;
};

}  // namespace

std::unique_ptr<Factorization> make_klu(const Options& o) { return std::make_unique<Klu>(o); }

}  // namespace fem::solve::detail
