// Eigen's SimplicialLDLT and SparseLU, always available. The ordering is computed once per
// pattern (the Symbolic) and handed to Eigen through an ordering functor; the AMD and METIS
// orderings for SparseLU are inverted first, because SparseLU reads its column permutation the
// other way round from what Eigen's AMDOrdering/MetisOrdering produce (the fill trap: 2D
// Poisson 300² went from 8.9M to 111M factor nonzeros).
#include <fem/solve/solve.hpp>
#include <fem/solve/detail/backends.hpp>

#include <fmt/format.h>

#include <Eigen/OrderingMethods>
#include <Eigen/SparseCholesky>
#include <Eigen/SparseCore>
#include <Eigen/SparseLU>

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
      case Ordering::amd: Eigen::AMDOrdering<int>()(m, perm_); break;
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
      default: perm_.setIdentity(n); break;
    }
    // Eigen's AMDOrdering hands SparseLU the inverse of what it applies (the fill trap).
    if (backend == Backend::lu && ordering == Ordering::amd) perm_ = perm_.inverse();
  }
  Backend backend() const noexcept override { return backend_; }
  Ordering ordering() const noexcept override { return ordering_; }
  std::size_t bytes() const noexcept override {
    return static_cast<std::size_t>(perm_.size()) * sizeof(int);
  }
  const Permutation& permutation() const noexcept { return perm_; }

 private:
  Backend backend_;
  Ordering ordering_;
  Permutation perm_;
};

class Ldlt final : public Factorization {
 public:
  explicit Ldlt(const Options& o) : Factorization(o) {}
  ~Ldlt() override { add_live_factor_bytes(-static_cast<std::int64_t>(bytes_)); }
  Backend backend() const noexcept override { return Backend::ldlt; }
  std::size_t factor_nonzeros() const noexcept override { return nnz_; }
  std::size_t bytes() const noexcept override { return bytes_; }

 protected:
  std::shared_ptr<const Symbolic> do_analyze(std::shared_ptr<const CsrPattern> p,
                                             Ordering ordering) override {
    return std::make_shared<EigenSymbolic>(std::move(p), Backend::ldlt, ordering);
  }

  Result do_factorize(const CsrMatrix& A, bool refactor) override {
    if (!is_symmetric(A))
      return {Status::invalid_input, "ldlt: the matrix is not symmetric (use lu or umfpack)", -1,
              -1};
    const int n = A.rows();
    ColMap m(n, n, static_cast<Eigen::Index>(A.nnz()), A.pattern().row_offsets().data(),
             A.pattern().col_indices().data(), A.values().data());
    if (!refactor) {
      const auto& sym = static_cast<const EigenSymbolic&>(*symbolic());
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
              col >= 0 ? fmt::format("ldlt: zero pivot at column {}", col)
                       : std::string("ldlt: zero pivot"),
              col, col};
    }
    return {};
  }

  SolveReport do_solve(std::span<const double> B, std::span<double> X, index_t nrhs,
                       bool) const override {
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

  Result do_factorize(const CsrMatrix& A, bool) override {
    const int n = A.rows();
    // SparseLU wants compressed columns of A itself: one transposing copy.
    ColMatrix m = RowMap(n, n, static_cast<Eigen::Index>(A.nnz()), A.pattern().row_offsets().data(),
                         A.pattern().col_indices().data(), A.values().data());
    m.makeCompressed();
    const auto& sym = static_cast<const EigenSymbolic&>(*symbolic());
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
