// UMFPACK (multifrontal LU) through its C API: its refinement switch is ours, and the pattern
// is factorized as M = Aᵀ without a copy (detail/suitesparse.hpp).
#include <fmt/format.h>
#include <umfpack.h>

#include <algorithm>
#include <fem/solve/detail/suitesparse.hpp>

namespace fem::solve::detail {
namespace {

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
    case Ordering::metis:
      control[UMFPACK_ORDERING] = UMFPACK_ORDERING_METIS;
      break;
    case Ordering::natural:
      control[UMFPACK_ORDERING] = UMFPACK_ORDERING_NONE;
      break;
    default:
      break;
  }
}

class UmfpackSymbolic final : public SuiteSparseSymbolic<Backend::umfpack> {
 public:
  UmfpackSymbolic(std::shared_ptr<const CsrPattern> p, Ordering ordering)
      : SuiteSparseSymbolic(std::move(p), ordering) {
    umfpack_setup(control_, ordering);
    double info[UMFPACK_INFO];
    const int n = pattern().rows();
    const int status =
        umfpack_di_symbolic(n, n, pattern().row_offsets().data(), pattern().col_indices().data(), nullptr,
                            &symbolic_, control_, info);
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
  void* handle() const noexcept { return symbolic_; }  // only read by umfpack_di_numeric
  const double* control() const noexcept { return control_; }

 private:
  double control_[UMFPACK_CONTROL];
  void* symbolic_ = nullptr;
  Prediction prediction_;
};

class Umfpack final : public SuiteSparseFactorization<UmfpackSymbolic, Backend::umfpack> {
 public:
  using SuiteSparseFactorization::SuiteSparseFactorization;
  ~Umfpack() override { release(); }

 protected:
  Result do_factorize(const CsrMatrix& A, bool) override {
    release();
    const UmfpackSymbolic& sym = analysis();
    if (Result fits = check_fits(Backend::umfpack, sym.ordering(), sym.prediction()); !fits) return fits;
    std::copy(sym.control(), sym.control() + UMFPACK_CONTROL, control_);
    double info[UMFPACK_INFO];
    const int status = umfpack_di_numeric(A.pattern().row_offsets().data(), A.pattern().col_indices().data(),
                                          A.values().data(), sym.handle(), &numeric_, control_, info);
    if (status == UMFPACK_WARNING_singular_matrix) {
      // Find the zero pivot: U(k,k) of P M Q is M(P[k], Q[k]) = A(Q[k], P[k]).
      const int n = size();
      std::vector<int> P(static_cast<std::size_t>(n)), Q(static_cast<std::size_t>(n));
      std::vector<double> D(static_cast<std::size_t>(n));
      int do_recip = 0;
      index_t row = -1, col = -1;
      if (umfpack_di_get_numeric(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, P.data(), Q.data(),
                                 D.data(), &do_recip, nullptr, numeric_) == UMFPACK_OK) {
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
                                     "column {})",
                                     row, col)
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
    nnz_ = static_cast<std::size_t>(lnz) + static_cast<std::size_t>(unz) - static_cast<std::size_t>(size());
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
      const int status = umfpack_di_wsolve(sys, nullptr, nullptr, nullptr, X.data() + k * n, B.data() + k * n,
                                           numeric_, control_, info, wi, w);
      if (status != UMFPACK_OK) {
        r.status = status == UMFPACK_WARNING_singular_matrix ? Status::singular : Status::backend_error;
        r.reason = fmt::format("umfpack_di_wsolve failed (status {})", status);
        return r;
      }
    }
    return r;
  }

 private:
  void release() override {
    if (numeric_) umfpack_di_free_numeric(&numeric_);
    numeric_ = nullptr;
    set_bytes(0);
  }
  double control_[UMFPACK_CONTROL];
  void* numeric_ = nullptr;
};

}  // namespace

std::unique_ptr<Factorization> make_umfpack(const Options& o) { return std::make_unique<Umfpack>(o); }

}  // namespace fem::solve::detail
