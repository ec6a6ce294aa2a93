// fem::solve: sparse direct factorizations behind one interface (CHOLMOD, UMFPACK, KLU, Eigen
// LDLT/LU) and the factorization cache: solve("A", b) finds or makes the factorization of the
// CsrMatrix stored under "A", reusing the symbolic analysis of its pattern across new values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <fem/csr.hpp>
#include <fem/error.hpp>
#include <fem/null_space.hpp>
#include <fem/store.hpp>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace fem::solve {

/// Which library factorizes. `automatic`: SPD → CHOLMOD (Eigen LDLT without SuiteSparse),
/// otherwise UMFPACK (Eigen LU); a failed Cholesky falls back to LU and says so in the log.
/// The distributed methods (MPI + PETSc, fem::dist) are backends of a LinearSolver made by
/// fem::dist::make_solver: MUMPS (LU, or Cholesky when Options::spd), and CG (spd) or GMRES
/// preconditioned by GAMG or hypre's BoomerAMG.
enum class Backend { automatic, cholmod, umfpack, klu, ldlt, lu, mumps, gamg, hypre, fieldsplit };
/// Fill-reducing ordering. `automatic` picks by problem size (see docs/solve.md).
enum class Ordering { automatic, amd, colamd, metis, natural };

std::string_view to_string(Backend backend) noexcept;
std::string_view to_string(Ordering ordering) noexcept;
/// The backend or ordering of a name ("cholmod", "amd"; "auto" or "automatic": automatic), or
/// an InvalidArgument naming `what` and listing the names.
Backend backend_from_name(std::string_view name, std::string_view what = "backend");
Ordering ordering_from_name(std::string_view name, std::string_view what = "ordering");
/// Whether the backend runs on MPI + PETSc (fem::dist): mumps, gamg, hypre, fieldsplit.
bool distributed(Backend backend) noexcept;
/// Whether this library has the backend / the ordering (SuiteSparse, METIS are optional; the
/// distributed backends are fem::dist's: fem::dist::available).
bool available(Backend backend) noexcept;
bool available(Ordering ordering) noexcept;

/// When a LinearSolver measures the residual ‖b − Ax‖/‖b‖ of its solves (Options::
/// max_relative_residual): after each factorization, on its first solve (what can go wrong with
/// a factorization shows there: a singular or ill-conditioned matrix), or on every solve.
/// Store-based solves (solve(store, key, b)) check every call.
enum class ResidualCheck { first_solve, every_solve };

struct Options {
  Backend backend = Backend::automatic;
  Ordering ordering = Ordering::automatic;
  /// Iterative refinement steps of the store-based solves (0: none).
  int refinement_steps = 0;
  /// Store-based solves: compute the relative residual ‖b − Ax‖/‖b‖ into the report even when
  /// max_relative_residual does not ask for it.
  bool compute_residual = false;
  /// Store-based solves check every solution (one product with A per right-hand side; after up
  /// to 3 steps of iterative refinement when it fails and none were asked for):
  ///  - a relative residual ‖b − Ax‖/‖b‖ above this is refused (Status::inaccurate, naming the
  ///    key and the backend) unless the solve is backward stable on the Jacobi-scaled system
  ///    (SolveReport::backward_error ≤ 1e-11): an ill-conditioned but regular system (a
  ///    coefficient contrast of 1e8) keeps its answer, with the residual reported;
  ///  - an amplification ‖Sx‖∞/‖S⁻¹b‖∞ above 1e-4/eps (4.5e11) proves the scaled condition number
  ///    beyond what double precision resolves: refused as singular, even when the residual is
  ///    small (a singular matrix solved with compatible data, a solution of 1e15);
  ///  - a non-finite solution is refused as singular.
  /// A backend that "succeeds" on a singular or indefinite matrix never hands back its result.
  /// Infinity: no check.
  double max_relative_residual = 1e-6;
  /// A symmetric matrix without a declared null space whose rows all sum to zero (a pure Neumann
  /// problem) is given the constant null space: solved with the discrete mean Σx_i = 0, data
  /// whose sum does not vanish refused. false: factorized as it is (and found singular).
  bool detect_null_space = true;
  /// Singular matrices with a null space: data whose defect (NullSpace::defect) exceeds this are
  /// refused (Status::incompatible); below it, their component along the null space is removed
  /// (NullSpace::make_compatible) before solving. Large enough for the quadrature error of
  /// compatible smooth data on moderate meshes; 0 accepts rounding only.
  double compatibility_tolerance = 1e-6;
  /// UMFPACK/KLU partial pivoting tolerance (0 < tol ≤ 1; 1 = strict partial pivoting).
  double pivot_tolerance = 0.1;
  /// Which solves of a LinearSolver check their residual (see ResidualCheck).
  ResidualCheck residual_check = ResidualCheck::first_solve;

  // --- the distributed backends (fem::dist) ---
  /// The matrix is symmetric positive definite: MUMPS Cholesky, CG; otherwise LU, GMRES.
  /// (The serial automatic backend finds out itself.)
  bool spd = false;
  /// The matrix is symmetric, perhaps indefinite (a saddle point: Stokes): MUMPS LDLᵀ instead of
  /// LU (half the factor). Without spd or symmetric, MUMPS factorizes by LU. (Serial backends
  /// decide themselves.)
  bool symmetric = false;
  double rtol = 1e-10;  ///< Krylov: stop at ‖b − Ax‖ ≤ rtol ‖b‖ (the true residual)
  double atol = 1e-50;
  int max_iterations = 10000;
  /// Keep the preconditioner (factor) across matrix versions, inside a Krylov method, until a
  /// solve needs more than lag_growth × the iterations of the first solve after the last refresh.
  bool lag = false;
  double lag_growth = 1.5;
  /// PETSc options prefix: e.g. "fem_" lets -fem_ksp_monitor, -fem_pc_gamg_threshold apply.
  std::string prefix = {};
  /// fieldsplit (two-field saddle points: a mixed space's velocity, then pressure): the key of a
  /// matrix on A's layout whose second-field block preconditions the Schur complement (flow: the
  /// pressure mass over the viscosity, flow::schur_preconditioner). Empty: PETSc's selfp
  /// (A₁₁ − A₁₀ diag(A₀₀)⁻¹ A₀₁), which needs no key but grows in iterations with refinement.
  std::string schur_preconditioner = {};
  /// fieldsplit with both keys (matrices on A's layout, used by their second-field blocks): the
  /// pressure convection–diffusion preconditioner S⁻¹ ≈ M⁻¹ F_p A_p⁻¹, M the schur_preconditioner
  /// (flow: minus the pressure mass), F_p schur_convection, A_p schur_laplacian
  /// (assembly::pcd_into; newton::flow_problem publishes them at each Jacobian's state).
  std::string schur_laplacian = {};
  std::string schur_convection = {};

  friend bool operator==(const Options&, const Options&) = default;
};

/// Outcome of a phase. Numerical trouble is a status with a reason, never a silent NaN.
enum class Status {
  success,
  not_analyzed,
  not_factorized,
  singular,               ///< a zero pivot; `column` names it where the backend reports it
  not_positive_definite,  ///< Cholesky met a non-positive pivot at `column`
  non_finite_input,       ///< NaN or Inf at (`row`, `column`)
  invalid_input,          ///< e.g. an unsymmetric matrix given to a symmetric backend
  out_of_memory,
  backend_error,
  incompatible,  ///< b is not in the range of a singular matrix (data vs its null space)
  inaccurate,    ///< the relative residual exceeds Options::max_relative_residual
  too_large,     ///< the predicted factor does not fit in the memory available
};
std::string_view to_string(Status status) noexcept;

struct Result {
  Status status = Status::success;
  std::string reason;  ///< empty on success
  index_t row = -1;    ///< where it went wrong, -1 when unknown
  index_t column = -1;
  bool ok() const noexcept { return status == Status::success; }
  explicit operator bool() const noexcept { return ok(); }
};

/// What a solve did.
struct SolveReport {
  Status status = Status::success;
  std::string reason;
  int refinement_steps = 0;  ///< steps performed
  int iterations = 0;        ///< Krylov iterations (summed over right-hand sides); 0 for direct solves
  double residual = -1.0;    ///< ‖b − Ax‖/‖b‖ (max over columns); -1 when not computed
  /// With the residual, judged on the Jacobi-scaled system (S² = |diag A|, so units and
  /// coefficient contrasts do not matter): the backward error ‖S⁻¹r‖∞ / (‖Sx‖∞ + ‖S⁻¹b‖∞) and
  /// the amplification ‖Sx‖∞ / ‖S⁻¹b‖∞, a lower bound of the scaled condition number. -1 when
  /// not computed.
  double backward_error = -1.0;
  double amplification = -1.0;
  /// With a null space: NullSpace::defect of the data (max over columns); -1 without one.
  double compatibility_defect = -1.0;
  bool ok() const noexcept { return status == Status::success; }
  explicit operator bool() const noexcept { return ok(); }
};

/// A symbolic analysis (ordering, elimination tree, supernodes) of one pattern for one backend.
/// Immutable once made; shared by every factorization of that pattern.
class Symbolic {
 public:
  virtual ~Symbolic() = default;
  virtual Backend backend() const noexcept = 0;
  virtual Ordering ordering() const noexcept = 0;
  virtual std::size_t bytes() const noexcept = 0;
  const CsrPattern& pattern() const noexcept { return *pattern_; }
  const std::shared_ptr<const CsrPattern>& pattern_ptr() const noexcept { return pattern_; }

 protected:
  explicit Symbolic(std::shared_ptr<const CsrPattern> pattern) : pattern_(std::move(pattern)) {}

 private:
  std::shared_ptr<const CsrPattern> pattern_;
};

/// Phase counts of one Factorization object.
struct PhaseCounts {
  std::int64_t symbolic_analyses = 0;
  std::int64_t factorizations = 0;    ///< numeric factorizations, refactorizations included
  std::int64_t refactorizations = 0;  ///< numeric factorizations that reused an analysis
};

/// The inertia of a factorized symmetric matrix (Sylvester: the signs of D in P A Pᵀ = L D Lᵀ):
/// how many eigenvalues are negative, zero and positive. fem::eigen counts eigenvalues below a
/// shift with it (a Sturm count).
struct Inertia {
  index_t negative = 0, zero = 0, positive = 0;
};

/// One backend's factorization of one matrix, with Eigen's phases. The non-const phases are
/// for one owner; the const solves are safe from many threads at once.
class Factorization {
 public:
  virtual ~Factorization();
  Factorization(const Factorization&) = delete;
  Factorization& operator=(const Factorization&) = delete;

  virtual Backend backend() const noexcept = 0;
  /// Symbolic analysis of `pattern` (square; DimensionMismatch otherwise).
  Result analyze(std::shared_ptr<const CsrPattern> pattern);
  /// Adopt an analysis made earlier (by another Factorization of the same backend).
  void use_symbolic(std::shared_ptr<const Symbolic> symbolic);
  /// Numeric factorization; analyzes first unless the pattern was analyzed already, so calling
  /// it again with new values on the same pattern refactorizes without symbolic work.
  /// A matrix with a null space (declared, or the constants detected, see Options) is factorized
  /// with one unknown per null vector pinned to zero (a nonsingular matrix of the same pattern);
  /// its solves then refuse incompatible data and return the normalized solution.
  Result factorize(const CsrMatrix& matrix);
  /// analyze + factorize.
  Result compute(const CsrMatrix& matrix);

  /// Solve A x = b. Sizes are checked (DimensionMismatch).
  SolveReport solve(std::span<const double> b, std::span<double> x) const;
  /// Solve Aᵀ x = b from the same factorization.
  SolveReport solve_transpose(std::span<const double> b, std::span<double> x) const;
  /// Block solve: B and X are column-major n × nrhs.
  SolveReport solve(std::span<const double> B, std::span<double> X, index_t nrhs) const;
  SolveReport solve_transpose(std::span<const double> B, std::span<double> X, index_t nrhs) const;

  const Result& status() const noexcept { return status_; }
  bool factorized() const noexcept { return factorized_; }
  index_t size() const noexcept { return n_; }
  /// Nonzeros of the factors (L, or L + U) as the backend reports them.
  virtual std::size_t factor_nonzeros() const noexcept = 0;
  /// Bytes of the numeric factorization, from the backend's own memory report.
  virtual std::size_t bytes() const noexcept = 0;
  /// The ordering actually used.
  Ordering ordering() const noexcept;
  /// The inertia of the factorized matrix where the backend knows it: ldlt (the signs of D),
  /// cholmod (a Cholesky factorization exists: all positive); nullopt for LU backends.
  virtual std::optional<Inertia> inertia() const noexcept { return std::nullopt; }
  const std::shared_ptr<const Symbolic>& symbolic() const noexcept { return symbolic_; }
  /// The null space the last factorize() solved with (declared or detected), or nullptr.
  const std::shared_ptr<const NullSpace>& null_space() const noexcept { return null_space_; }
  /// The unknowns pinned to zero to factorize a singular matrix (empty without a null space).
  const std::vector<index_t>& pinned() const noexcept { return pinned_; }
  /// S with S² = |diag A| of the factorized matrix (fem::jacobi_scale), for the residual check.
  std::span<const double> residual_scale() const noexcept { return residual_scale_; }
  const PhaseCounts& counts() const noexcept { return counts_; }
  /// Decisions worth knowing (fallbacks, ordering choice).
  const std::vector<std::string>& log() const noexcept { return log_; }
  void add_log(std::string line) { log_.push_back(std::move(line)); }

 protected:
  explicit Factorization(Options options) : options_(options) {}
  virtual std::shared_ptr<const Symbolic> do_analyze(std::shared_ptr<const CsrPattern> pattern,
                                                     Ordering ordering) = 0;
  /// `refactor`: this object already holds a numeric factorization of the same pattern.
  virtual Result do_factorize(const CsrMatrix& matrix, bool refactor) = 0;
  virtual SolveReport do_solve(std::span<const double> B, std::span<double> X, index_t nrhs,
                               bool transpose) const = 0;
  const Options& options() const noexcept { return options_; }

 private:
  SolveReport checked_solve(std::span<const double> B, std::span<double> X, index_t nrhs,
                            bool transpose) const;
  Options options_;
  std::shared_ptr<const Symbolic> symbolic_;
  std::shared_ptr<const NullSpace> null_space_;
  std::vector<index_t> pinned_;
  std::vector<double> residual_scale_;
  Result status_{Status::not_analyzed, "not analyzed", -1, -1};
  bool factorized_ = false;
  index_t n_ = 0;
  PhaseCounts counts_;
  std::vector<std::string> log_;
};

/// A new, empty factorization. `automatic` makes a factorization that decides at factorize()
/// (symmetry from pattern + values, definiteness from Cholesky's own report). Throws NotCompiled
/// for a backend this build lacks.
std::unique_ptr<Factorization> make_factorization(Backend backend, const Options& options = {});
/// Shorthand: make_factorization(options.backend, options), then compute(matrix); throws
/// NumericalError (naming the column) when the factorization fails.
std::unique_ptr<Factorization> factorize(const CsrMatrix& matrix, const Options& options = {});

/// Iterative refinement of x (already a solution of A x = b, or of Aᵀ x = b) with `steps`
/// steps; reports the final relative residual, backward error and amplification (SolveReport).
SolveReport refine(const Factorization& factorization, const CsrMatrix& matrix, std::span<const double> b,
                   std::span<double> x, int steps, bool transpose = false);

/// Symmetric in pattern and values (missing entries count as 0), to a relative tolerance.
bool is_symmetric(const CsrMatrix& matrix, double relative_tolerance = 1e-13);

/// Bytes held by live numeric factorizations in this process (every backend, from their own
/// memory reports): goes down when an evicted factorization is freed.
std::int64_t live_factor_bytes() noexcept;

// --- the cache: factorizations of store entries -------------------------------------------

/// Store key of the cached factorization of `key` (e.g. "A#factor/cholmod").
std::string factor_key(std::string_view key, const Options& options = {});

/// The factorization of the CsrMatrix under `key` at its current version: the cached one, or a
/// new one (reusing the pattern's cached symbolic analysis), published as an evictable entry
/// derived from `key`'s version. Throws NumericalError when the matrix cannot be factorized.
std::shared_ptr<const Factorization> factorization(Store& store, const std::string& key,
                                                   const Options& options = {});
std::shared_ptr<const Factorization> factorization(const std::string& key, const Options& options = {});
/// The same, recycling `retired`: when a new factorization is needed and `retired` is the last
/// holder of a factorization of the same pattern with the same backend (e.g. the previous
/// Newton iteration's, dropped from the store when its matrix was replaced), the new values are
/// factorized into its memory (a numeric refactorization in place: no allocation, no copy of
/// the analysis) and that object is published. Otherwise `retired` is released and a new one is
/// made. Counted in `solve.recycled`.
std::shared_ptr<const Factorization> factorization(Store& store, const std::string& key,
                                                   std::shared_ptr<const Factorization> retired,
                                                   const Options& options = {});

/// x with A x = b, A the matrix under `key`. Throws NumericalError on failure.
std::vector<double> solve(Store& store, const std::string& key, std::span<const double> b,
                          const Options& options = {});
std::vector<double> solve(const std::string& key, std::span<const double> b, const Options& options = {});
/// Into x, returning the report (refinement, residual) instead of throwing on trouble.
SolveReport solve(Store& store, const std::string& key, std::span<const double> b, std::span<double> x,
                  const Options& options = {});
/// x with Aᵀ x = b, from the same factorization.
std::vector<double> solve_transpose(Store& store, const std::string& key, std::span<const double> b,
                                    const Options& options = {});
std::vector<double> solve_transpose(const std::string& key, std::span<const double> b,
                                    const Options& options = {});
/// Sylvester's inertia of the symmetric matrix under `key` (how many eigenvalues are negative,
/// zero, positive): the signs of D in a supernodal LDLᵀ without pivoting on CHOLMOD's cached
/// analysis of the pattern (the one its Cholesky factorizations share; Eigen's LDLT without
/// SuiteSparse), the factor itself not kept. Cached as `<key>#inertia/<ordering>`, derived from
/// the matrix's version. A zero pivot counts as a zero eigenvalue. fem::eigen's Sturm counts.
Inertia inertia(Store& store, const std::string& key, const Options& options = {});

/// Block solves: B column-major n × nrhs.
std::vector<double> solve_block(Store& store, const std::string& key, std::span<const double> B, index_t nrhs,
                                const Options& options = {});
std::vector<double> solve_block(const std::string& key, std::span<const double> B, index_t nrhs,
                                const Options& options = {});
std::vector<double> solve_transpose_block(Store& store, const std::string& key, std::span<const double> B,
                                          index_t nrhs, const Options& options = {});

}  // namespace fem::solve

FEM_TYPE_NAME(fem::solve::Factorization, "fem::solve::Factorization");
FEM_TYPE_NAME(fem::solve::Symbolic, "fem::solve::Symbolic");
FEM_TYPE_NAME(fem::solve::Inertia, "fem::solve::Inertia");
