// Eigen's SimplicialLDLT and SparseLU, always available. The ordering is computed once per
// pattern (the Symbolic) and handed to Eigen through an ordering functor; the AMD and METIS
// orderings for SparseLU are inverted first, because SparseLU reads its column permutation the
// other way round from what Eigen's AMDOrdering/MetisOrdering produce (the fill trap: 2D
// Poisson 300² went from 8.9M to 111M factor nonzeros).
#include <fmt/format.h>

#include <Eigen/OrderingMethods>
#include <Eigen/SparseCholesky>
#include <Eigen/SparseCore>
#include <Eigen/SparseLU>
#include <fem/solve/detail/backends.hpp>
#include <fem/solve/solve.hpp>

namespace fem::solve::detail {
namespace {

using ColMatrix = Eigen::SparseMatrix<double, Eigen::ColMajor, int>;
using RowMap = Eigen::Map<const Eigen::SparseMatrix<double, Eigen::RowMajor, int>>;
using ColMap = Eigen::Map<const Eigen::SparseMatrix<double, Eigen::ColMajor, int>>;
using Permutation = Eigen::PermutationMatrix<Eigen::Dynamic, Eigen::Dynamic, int>;

// The permutation the next analyzePattern() on this thread uses.
thread_local const Permutation* t_cached_permutation = nullptr;

struct CachedOrdering {
  using IndexType = int;
  template <class MatrixType>
  void operator()(const MatrixType&, Permutation& perm) const {
    perm = *t_cached_permutation;
  }
};

class EigenSymbolic final : public Symbolic {
 public:
  EigenSymbolic(std::shared_ptr<const CsrPattern> p, Backend backend, Ordering ordering)
      : Symbolic(std::move(p)), backend_(backend), ordering_(ordering) {
    const CsrPattern& pat = pattern();
    const int n = pat.rows();
    std::vector<double> ones(pat.nnz(), 1.0);
    // Pattern of Aᵀ (CSR read as CSC); symmetric orderings look at A + Aᵀ anyway.
    ColMatrix m = ColMap(n, n, static_cast<Eigen::Index>(pat.nnz()), pat.row_offsets().data(),
                         pat.col_indices().data(), ones.data());
    if (backend == Backend::lu) m = ColMatrix(m.transpose());
    switch (ordering) {
      case Ordering::amd:
        Eigen::AMDOrdering<int>()(m, perm_);
        break;
      case Ordering::colamd: {
        if (backend == Backend::ldlt)
          throw InvalidArgument("ldlt: colamd is an unsymmetric ordering; use amd or metis");
        m.makeCompressed();
        Eigen::COLAMDOrdering<int>()(m, perm_);
        break;
      }
      case Ordering::metis: {
        // New → old from METIS. The simplicial solvers take it as their Pinv (new → old);
        // SparseLU places column i at perm(i), so it needs old → new.
        const auto order = metis_order(n, pat.row_offsets().data(), pat.col_indices().data());
        perm_.resize(n);
        for (int k = 0; k < n; ++k) {
          if (backend == Backend::lu)
            perm_.indices()(order[static_cast<std::size_t>(k)]) = k;
          else
            perm_.indices()(k) = order[static_cast<std::size_t>(k)];
        }
        break;
      }
      default:
        perm_.setIdentity(n);
        break;
    }
    // Eigen's AMDOrdering hands SparseLU the inverse of what it applies (the fill trap).
    if (backend == Backend::lu && ordering == Ordering::amd) perm_ = perm_.inverse();

    // The fill, predicted from the elimination tree and column counts of A + Aᵀ in this order
    // (O(nnz), no factor): exact for LDLT; for LU without row interchanges L + U has 2 × that
    // − n entries (pivoting may add some). Bytes as the factorizations report them (a 4-byte
    // index and an 8-byte value per entry); the workspace is the matrix copy Eigen makes.
    std::vector<int> order(static_cast<std::size_t>(n));
    for (int k = 0; k < n; ++k) {
      if (backend == Backend::lu)  // SparseLU: column i goes to perm(i), old → new
        order[static_cast<std::size_t>(perm_.indices()(k))] = k;
      else  // the simplicial solvers' Pinv: new → old
        order[static_cast<std::size_t>(k)] = perm_.indices()(k);
    }
    const auto lnz = static_cast<double>(
        cholesky_nonzeros(n, pat.row_offsets().data(), pat.col_indices().data(), order.data()));
    const double entry = sizeof(double) + sizeof(int), nn = n;
    prediction_.nonzeros = backend == Backend::lu ? 2 * lnz - nn : lnz;
    prediction_.factor_bytes =
        prediction_.nonzeros * entry + nn * (backend == Backend::lu ? 6 : 3) * sizeof(int);
    prediction_.workspace_bytes = static_cast<double>(pat.nnz()) * entry + 4 * nn * sizeof(int);
    prediction_.basis =
        backend == Backend::lu
            ? "estimated from the Cholesky fill of A + Aᵀ in this ordering; pivoting may add more"
            : "predicted from the elimination tree";
  }
  const Prediction& prediction() const noexcept { return prediction_; }
  Backend backend() const noexcept override { return backend_; }
  Ordering ordering() const noexcept override { return ordering_; }
  std::size_t bytes() const noexcept override { return static_cast<std::size_t>(perm_.size()) * sizeof(int); }
  const Permutation& permutation() const noexcept { return perm_; }

 private:
  Backend backend_;
  Ordering ordering_;
  Permutation perm_;
  Prediction prediction_;
};

class Ldlt final : public Factorization {
 public:
  explicit Ldlt(const Options& o) : Factorization(o) {}
  ~Ldlt() override { add_live_factor_bytes(-static_cast<std::int64_t>(bytes_)); }
  Backend backend() const noexcept override { return Backend::ldlt; }
  std::size_t factor_nonzeros() const noexcept override { return nnz_; }
  std::optional<Inertia> inertia() const noexcept override {
    if (!factorized() || !pinned().empty()) return std::nullopt;  // of the matrix as given
    Inertia in;
    for (const double d : solver_.vectorD()) (d < 0 ? in.negative : d > 0 ? in.positive : in.zero) += 1;
    return in;
  }
  std::size_t bytes() const noexcept override { return bytes_; }

 protected:
  std::shared_ptr<const Symbolic> do_analyze(std::shared_ptr<const CsrPattern> p,
                                             Ordering ordering) override {
    return std::make_shared<EigenSymbolic>(std::move(p), Backend::ldlt, ordering);
  }

  Result do_factorize(const CsrMatrix& A, bool refactor) override {
    if (!is_symmetric(A))
      return {Status::invalid_input, "ldlt: the matrix is not symmetric (use lu or umfpack)", -1, -1};
    const int n = A.rows();
    ColMap m(n, n, static_cast<Eigen::Index>(A.nnz()), A.pattern().row_offsets().data(),
             A.pattern().col_indices().data(), A.values().data());
    if (!refactor) {
      const auto& sym = static_cast<const EigenSymbolic&>(*symbolic());
      // analyzePattern allocates L: first, does it fit?
      if (Result fits = check_fits(Backend::ldlt, sym.ordering(), sym.prediction()); !fits) return fits;
      t_cached_permutation = &sym.permutation();
      solver_.analyzePattern(m);
      t_cached_permutation = nullptr;
    }
    solver_.factorize(m);
    nnz_ = static_cast<std::size_t>(solver_.matrixL().nestedExpression().nonZeros()) +
           static_cast<std::size_t>(n);
    set_bytes(nnz_ * (sizeof(double) + sizeof(int)) + static_cast<std::size_t>(n) * 3 * sizeof(int));
    if (solver_.info() != Eigen::Success) {
      // The first zero of D (in elimination order) is the failed pivot.
      index_t col = -1;
      const auto& d = solver_.vectorD();
      for (int k = 0; k < d.size(); ++k)
        if (d(k) == 0.0) {
          col = solver_.permutationPinv().indices()(k);
          break;
        }
      return {Status::singular,
              col >= 0 ? fmt::format("ldlt: zero pivot at column {}", col) : std::string("ldlt: zero pivot"),
              col, col};
    }
    return {};
  }

  SolveReport do_solve(std::span<const double> B, std::span<double> X, index_t nrhs, bool) const override {
    Eigen::Map<const Eigen::MatrixXd> b(B.data(), size(), nrhs);
    Eigen::Map<Eigen::MatrixXd> x(X.data(), size(), nrhs);
    x = solver_.solve(b);
    return {};
  }

 private:
  void set_bytes(std::size_t b) {
    add_live_factor_bytes(static_cast<std::int64_t>(b) - static_cast<std::int64_t>(bytes_));
    bytes_ = b;
  }
  Eigen::SimplicialLDLT<ColMatrix, Eigen::Lower, CachedOrdering> solver_;
  std::size_t nnz_ = 0, bytes_ = 0;
};

class Lu final : public Factorization {
 public:
  explicit Lu(const Options& o) : Factorization(o) {}
  ~Lu() override { add_live_factor_bytes(-static_cast<std::int64_t>(bytes_)); }
  Backend backend() const noexcept override { return Backend::lu; }
  std::size_t factor_nonzeros() const noexcept override { return nnz_; }
  std::size_t bytes() const noexcept override { return bytes_; }

 protected:
  std::shared_ptr<const Symbolic> do_analyze(std::shared_ptr<const CsrPattern> p,
                                             Ordering ordering) override {
    return std::make_shared<EigenSymbolic>(std::move(p), Backend::lu, ordering);
  }

  Result do_factorize(const CsrMatrix& A, bool refactor) override {
    const int n = A.rows();
    const auto& sym = static_cast<const EigenSymbolic&>(*symbolic());
    // A refactorization reuses memory of the same size; a first one must fit.
    if (!refactor)
      if (Result fits = check_fits(Backend::lu, sym.ordering(), sym.prediction()); !fits) return fits;
    // SparseLU wants compressed columns of A itself: one transposing copy.
    ColMatrix m = RowMap(n, n, static_cast<Eigen::Index>(A.nnz()), A.pattern().row_offsets().data(),
                         A.pattern().col_indices().data(), A.values().data());
    m.makeCompressed();
    t_cached_permutation = &sym.permutation();
    solver_.analyzePattern(m);  // takes the cached ordering; only the column etree is redone
    t_cached_permutation = nullptr;
    solver_.factorize(m);
    if (solver_.info() != Eigen::Success) {
      set_bytes(0);
      return {Status::singular, "lu: " + solver_.lastErrorMessage(), -1, -1};
    }
    nnz_ = static_cast<std::size_t>(solver_.nnzL() + solver_.nnzU());
    set_bytes(nnz_ * (sizeof(double) + sizeof(int)) + static_cast<std::size_t>(n) * 6 * sizeof(int));
    return {};
  }

  SolveReport do_solve(std::span<const double> B, std::span<double> X, index_t nrhs,
                       bool transpose) const override {
    Eigen::Map<const Eigen::MatrixXd> b(B.data(), size(), nrhs);
    Eigen::Map<Eigen::MatrixXd> x(X.data(), size(), nrhs);
    auto& solver = const_cast<Eigen::SparseLU<ColMatrix, CachedOrdering>&>(solver_);
    if (transpose)
      x = solver.transpose().solve(b);
    else
      x = solver_.solve(b);
    return {};
  }

 private:
  void set_bytes(std::size_t b) {
    add_live_factor_bytes(static_cast<std::int64_t>(b) - static_cast<std::int64_t>(bytes_));
    bytes_ = b;
  }
  Eigen::SparseLU<ColMatrix, CachedOrdering> solver_;
  std::size_t nnz_ = 0, bytes_ = 0;
};

}  // namespace

std::unique_ptr<Factorization> make_ldlt(const Options& o) { return std::make_unique<Ldlt>(o); }
std::unique_ptr<Factorization> make_lu(const Options& o) { return std::make_unique<Lu>(o); }

}  // namespace fem::solve::detail
