#include "fem/dist/solver.hpp"

#include <fmt/format.h>

#include <cmath>

#include "fem/dist/detail/petsc.hpp"
#include "fem/dist/session.hpp"
#include "fem/norm.hpp"

namespace fem::dist {

std::string_view method(const solve::Options& o) noexcept {
  if (o.backend == solve::Backend::mumps) return o.spd ? "cholesky" : o.symmetric ? "ldlt" : "lu";
  if (o.backend == solve::Backend::fieldsplit) return "fgmres";
  return o.spd ? "cg" : "gmres";
}

std::string solver_key(const std::string& key, const solve::Options& o) {
  if (o.backend == solve::Backend::mumps)
    return fmt::format("{}#factor/mumps{}{}", key,
                       o.spd         ? "/cholesky"
                       : o.symmetric ? "/ldlt"
                                     : "",
                       o.lag ? "/lagged" : "");
  return fmt::format("{}#ksp/{}{}", key, solve::to_string(o.backend), o.lag ? "/lagged" : "");
}

namespace {

// Rigid-body modes of the owned nodes as GAMG's near null space (elasticity: block = dim).
void set_rigid_body_modes(Mat A, const IndexMap& map) {
  if (map.block() == 1 || map.block() != map.gdim()) return;
  Vec coords;
  FEM_PETSC(VecCreateMPI(map.comm(), map.owned_dofs(), map.global_dofs(), &coords));
  FEM_PETSC(VecSetBlockSize(coords, map.block()));
  PetscScalar* x;
  FEM_PETSC(VecGetArray(coords, &x));
  std::copy(map.owned_coordinates().begin(), map.owned_coordinates().end(), x);
  FEM_PETSC(VecRestoreArray(coords, &x));
  MatNullSpace modes;
  FEM_PETSC(MatNullSpaceCreateRigidBody(coords, &modes));
  FEM_PETSC(MatSetNearNullSpace(A, modes));
  FEM_PETSC(MatNullSpaceDestroy(&modes));
  FEM_PETSC(VecDestroy(&coords));
}

// Collective: ‖v‖₂ scaled (fem/norm.hpp): PETSc's NORM_2 squares the entries, and a right-hand
// side of 1e300 would give inf/inf = NaN for the relative residual. v is scaled by a power of two
// and back where its entries are far from 1 (a work vector or one refilled before its next use).
PetscReal scaled_norm2(Vec v) {
  PetscReal largest = 0, norm = 0;
  FEM_PETSC(VecNorm(v, NORM_INFINITY, &largest));
  const double scale = square_scale(largest);
  if (scale != 1.0) FEM_PETSC(VecScale(v, 1.0 / scale));
  FEM_PETSC(VecNorm(v, NORM_2, &norm));
  if (scale != 1.0) FEM_PETSC(VecScale(v, scale));
  return scale * norm;
}

}  // namespace

Solver::Solver(std::shared_ptr<const PetscMatrix> A, const solve::Options& options, std::string key,
               SchurMatrices schur)
    : A_(std::move(A)), schur_(std::move(schur)), options_(options), key_(std::move(key)) {
  FEM_EXPECTS(solve::distributed(options_.backend),
              "'{}': {} is no distributed backend (mumps, gamg, hypre, fieldsplit)", key_,
              solve::to_string(options_.backend));
  const MPI_Comm comm = A_->map().comm();
  Mat mat = A_->mat();
  FEM_PETSC(KSPCreate(comm, &ksp_));
  // The prefix first: a field split's inner solvers take theirs from it when they are made.
  if (!options_.prefix.empty()) FEM_PETSC(KSPSetOptionsPrefix(ksp_, options_.prefix.c_str()));
  FEM_PETSC(KSPSetOperators(ksp_, mat, mat));
  if (options_.spd) {  // kept through refills (MatSetValuesCOO would clear a plain MAT_SPD)
    FEM_PETSC(MatSetOption(mat, MAT_SPD, PETSC_TRUE));
    FEM_PETSC(MatSetOption(mat, MAT_SPD_ETERNAL, PETSC_TRUE));
  } else if (options_.symmetric) {
    FEM_PETSC(MatSetOption(mat, MAT_SYMMETRIC, PETSC_TRUE));
    FEM_PETSC(MatSetOption(mat, MAT_SYMMETRY_ETERNAL, PETSC_TRUE));
  }
  PC pc;
  FEM_PETSC(KSPGetPC(ksp_, &pc));
  const bool split = options_.backend == solve::Backend::fieldsplit;
  FEM_PETSC(KSPSetType(ksp_, !krylov() ? KSPPREONLY : split ? KSPFGMRES : options_.spd ? KSPCG : KSPGMRES));
  if (split) FEM_PETSC(KSPGMRESSetRestart(ksp_, 100));
  switch (options_.backend) {
    case solve::Backend::mumps:
      // Cholesky with MAT_SPD is MUMPS's SPD factorization; without it, its symmetric indefinite LDLᵀ.
      FEM_PETSC(PCSetType(pc, options_.spd || options_.symmetric ? PCCHOLESKY : PCLU));
      FEM_PETSC(PCFactorSetMatSolverType(pc, MATSOLVERMUMPS));
      break;
    case solve::Backend::gamg:
      set_rigid_body_modes(mat, A_->map());
      FEM_PETSC(PCSetType(pc, PCGAMG));
      break;
    case solve::Backend::hypre:
      FEM_PETSC(PCSetType(pc, PCHYPRE));
      FEM_PETSC(PCHYPRESetType(pc, "boomeramg"));
      break;
    case solve::Backend::fieldsplit:
      set_field_split(pc);
      break;
    default:
      break;
  }
  if (krylov()) {
    FEM_PETSC(KSPSetTolerances(ksp_, options_.rtol, options_.atol, PETSC_DEFAULT, options_.max_iterations));
    // rtol bounds the true residual ‖b − Ax‖/‖b‖ (what the check after the solve measures):
    // CG monitors the unpreconditioned norm, GMRES preconditions on the right.
    FEM_PETSC(KSPSetNormType(ksp_, KSP_NORM_UNPRECONDITIONED));
    if (!options_.spd) FEM_PETSC(KSPSetPCSide(ksp_, PC_RIGHT));
  }
  FEM_PETSC(KSPSetFromOptions(ksp_));
  FEM_PETSC(KSPSetUp(ksp_));  // symbolic + numeric factorization, or the AMG hierarchy, now
  if (split && schur_.laplacian) set_pcd();
}

Solver::~Solver() {
  for (Vec* v : {&b_, &x_, &r_}) detail::delayed_destroy(reinterpret_cast<PetscObject*>(v));
  detail::delayed_destroy(reinterpret_cast<PetscObject*>(&ksp_));
  for (IS& is : fields_) detail::delayed_destroy(reinterpret_cast<PetscObject*>(&is));
  for (Mat* m : {&schur_block_, &pcd_laplacian_, &pcd_convection_})
    detail::delayed_destroy(reinterpret_cast<PetscObject*>(m));
  detail::delayed_destroy(reinterpret_cast<PetscObject*>(&pcd_ksp_));
  for (Vec* v : {&pcd_x_, &pcd_y_, &pcd_diagonal_})
    detail::delayed_destroy(reinterpret_cast<PetscObject*>(v));
}

// A stacked map's two fields (velocity, then pressure: each owned contiguously here) as PETSc's
// Schur-complement field split, the block upper triangular factorization [A B'; 0 S]⁻¹ inside
// FGMRES: the velocity block by one GAMG V-cycle (its aggregates by node: the IS's block size is
// the velocity's dim; on a 3D Stokes channel 1.7× fewer seconds per iteration than BoomerAMG for
// 1.4× the iterations), the Schur complement S = C − B A⁻¹ B' by
// the diagonal of its preconditioner (a pressure mass matrix is spectrally equivalent to its
// diagonal; Elman, Silvester, Wathen). The inner defaults sit in the options database under the
// solver's prefix only where unset, so -<prefix>fieldsplit_u_pc_type gamg and the like win.
void Solver::set_field_split(PC pc) {
  const IndexMap& map = A_->map();
  const auto owned = map.owned_dofs_per_block();
  const auto sizes = map.block_sizes();
  collective(map.comm(), [&] {
    FEM_EXPECTS(owned.size() == 2,
                "'{}': fieldsplit needs the two fields of a mixed space (velocity, pressure); this layout "
                "has {}",
                key_, owned.size());
  });
  const PetscInt first = map.first_owned_node();  // a stack's nodes are its DOFs
  FEM_PETSC(ISCreateStride(map.comm(), owned[0], first, 1, &fields_[0]));
  FEM_PETSC(ISSetBlockSize(fields_[0], sizes[0]));
  FEM_PETSC(ISCreateStride(map.comm(), owned[1], first + owned[0], 1, &fields_[1]));
  FEM_PETSC(PCSetType(pc, PCFIELDSPLIT));
  FEM_PETSC(PCFieldSplitSetIS(pc, "u", fields_[0]));
  FEM_PETSC(PCFieldSplitSetIS(pc, "p", fields_[1]));
  FEM_PETSC(PCFieldSplitSetType(pc, PC_COMPOSITE_SCHUR));
  FEM_PETSC(PCFieldSplitSetSchurFactType(pc, PC_FIELDSPLIT_SCHUR_FACT_UPPER));
  if (schur_.mass) {
    FEM_PETSC(
        MatCreateSubMatrix(schur_.mass->mat(), fields_[1], fields_[1], MAT_INITIAL_MATRIX, &schur_block_));
    FEM_PETSC(PCFieldSplitSetSchurPre(pc, PC_FIELDSPLIT_SCHUR_PRE_USER, schur_block_));
  } else {
    FEM_PETSC(PCFieldSplitSetSchurPre(pc, PC_FIELDSPLIT_SCHUR_PRE_SELFP, nullptr));
  }
  const std::string prefix = "-" + options_.prefix + "fieldsplit_";
  auto fallback = [&](const char* name, const char* value) {
    const std::string option = prefix + name;
    PetscBool set = PETSC_FALSE;
    FEM_PETSC(PetscOptionsHasName(nullptr, nullptr, option.c_str(), &set));
    if (!set) FEM_PETSC(PetscOptionsSetValue(nullptr, option.c_str(), value));
  };
  fallback("u_ksp_type", "preonly");
  fallback("u_pc_type", "gamg");
  fallback("p_ksp_type", "preonly");
  fallback("p_pc_type", "jacobi");
}

// The pressure convection–diffusion preconditioner as the Schur complement's PC (a shell, set
// once the field split is set up): y = M⁻¹ F_p A_p⁻¹ x, M⁻¹ by M's diagonal (a mass matrix is
// spectrally equivalent to it), A_p⁻¹ by one GAMG V-cycle (prefix <prefix>fieldsplit_p_pcd_).
void Solver::set_pcd() {
  const MPI_Comm comm = A_->map().comm();
  collective(comm, [&] {
    FEM_EXPECTS(schur_.mass && schur_.convection,
                "'{}': the pressure convection–diffusion preconditioner needs the mass and the convection "
                "matrices with its Laplacian (Options::schur_preconditioner, schur_convection)",
                key_);
  });
  FEM_PETSC(MatCreateSubMatrix(schur_.laplacian->mat(), fields_[1], fields_[1], MAT_INITIAL_MATRIX,
                               &pcd_laplacian_));
  FEM_PETSC(MatCreateSubMatrix(schur_.convection->mat(), fields_[1], fields_[1], MAT_INITIAL_MATRIX,
                               &pcd_convection_));
  FEM_PETSC(KSPCreate(comm, &pcd_ksp_));
  FEM_PETSC(KSPSetOptionsPrefix(pcd_ksp_, (options_.prefix + "fieldsplit_p_pcd_").c_str()));
  FEM_PETSC(KSPSetOperators(pcd_ksp_, pcd_laplacian_, pcd_laplacian_));
  FEM_PETSC(KSPSetType(pcd_ksp_, KSPPREONLY));
  PC laplacian;
  FEM_PETSC(KSPGetPC(pcd_ksp_, &laplacian));
  FEM_PETSC(PCSetType(laplacian, PCGAMG));
  FEM_PETSC(KSPSetFromOptions(pcd_ksp_));
  FEM_PETSC(KSPSetUp(pcd_ksp_));
  FEM_PETSC(MatCreateVecs(schur_block_, &pcd_x_, &pcd_y_));
  FEM_PETSC(VecDuplicate(pcd_x_, &pcd_diagonal_));
  FEM_PETSC(MatGetDiagonal(schur_block_, pcd_diagonal_));
  PC pc;
  FEM_PETSC(KSPGetPC(ksp_, &pc));
  PetscInt n = 0;
  KSP* sub = nullptr;
  FEM_PETSC(PCFieldSplitGetSubKSP(pc, &n, &sub));
  KSP schur = sub[n - 1];
  FEM_PETSC(PetscFree(sub));
  PC shell;
  FEM_PETSC(KSPGetPC(schur, &shell));
  FEM_PETSC(PCSetType(shell, PCSHELL));
  FEM_PETSC(PCShellSetContext(shell, this));
  FEM_PETSC(PCShellSetApply(shell, &Solver::apply_pcd));
  FEM_PETSC(PCShellSetName(shell, "pressure convection-diffusion (PCD)"));
}

PetscErrorCode Solver::apply_pcd(PC pc, Vec x, Vec y) {
  PetscFunctionBeginUser;
  void* context = nullptr;
  PetscCall(PCShellGetContext(pc, &context));
  const auto* s = static_cast<const Solver*>(context);
  PetscCall(KSPSolve(s->pcd_ksp_, x, s->pcd_x_));
  PetscCall(MatMult(s->pcd_convection_, s->pcd_x_, s->pcd_y_));
  PetscCall(VecPointwiseDivide(y, s->pcd_y_, s->pcd_diagonal_));
  PetscFunctionReturn(0);
}

std::size_t Solver::bytes() const noexcept {
  std::size_t b = sizeof(*this);
  if (options_.backend == solve::Backend::mumps) {
    PC pc;
    Mat F = nullptr;
    KSPGetPC(ksp_, &pc);
    PCFactorGetMatrix(pc, &F);
    PetscInt mb = 0;
    if (F && MatMumpsGetInfo(F, 16, &mb) == 0) b += static_cast<std::size_t>(mb) << 20;  // MB on this process
  }
  return b;
}

void Solver::update(std::shared_ptr<const PetscMatrix> A, Store& store) {
  A_ = std::move(A);
  const bool lagged = options_.lag && !refresh_next_;
  FEM_PETSC(KSPSetReusePreconditioner(ksp_, lagged ? PETSC_TRUE : PETSC_FALSE));
  FEM_PETSC(KSPSetOperators(ksp_, A_->mat(), A_->mat()));
  FEM_PETSC(KSPSetUp(ksp_));
  reused_ = lagged;
  if (!lagged) {
    baseline_ = -1;
    refresh_next_ = false;
    store.count("dist.preconditioner_setups");
    store.count("solve.factorizations");
    store.count("solve.refactorizations");
  } else {
    store.count("dist.preconditioner_reuses");
  }
}

solve::SolveReport Solver::solve(std::span<const double> b, Sums form, std::span<double> x,
                                 bool check) const {
  return run(b, form, x, false, check);
}

solve::SolveReport Solver::solve(std::span<const double> B, Sums form, std::span<double> X, index_t nrhs,
                                 bool transpose, bool check) const {
  const auto n = static_cast<std::size_t>(A_->map().local_dofs());
  collective(A_->map().comm(), [&] {
    FEM_EXPECTS(nrhs >= 0 && B.size() == n * static_cast<std::size_t>(nrhs) && X.size() == B.size(),
                "'{}': {} right-hand sides of {} local DOFs need {} entries, B has {} and X {}", key_, nrhs,
                n, n * static_cast<std::size_t>(std::max(nrhs, 0)), B.size(), X.size());
  });
  solve::SolveReport total;
  for (index_t k = 0; k < nrhs; ++k) {
    const auto r = run(B.subspan(k * n, n), form, X.subspan(k * n, n), transpose, check);
    total.iterations += r.iterations;
    total.residual = std::max(total.residual, r.residual);
  }
  return total;
}

solve::SolveReport Solver::solve_transpose(std::span<const double> b, Sums form, std::span<double> x,
                                           bool check) const {
  return run(b, form, x, true, check);
}

solve::SolveReport Solver::run(std::span<const double> b, Sums form, std::span<double> x, bool transpose,
                               bool check) const {
  FEM_EXPECTS(!transpose || options_.backend == solve::Backend::mumps || options_.spd,
              "'{}': transpose solves need MUMPS or a symmetric matrix (CG), not {} with GMRES", key_,
              solve::to_string(options_.backend));
  const IndexMap& map = A_->map();
  collective(map.comm(), [&] {
    FEM_EXPECTS(b.size() == x.size() && b.size() == static_cast<std::size_t>(map.local_dofs()),
                "'{}': solve with vectors of {} and {} entries, the space has {} local DOFs", key_, b.size(),
                x.size(), map.local_dofs());
  });
  // Work vectors made once per solver (solves are main-thread and collective).
  if (!b_) b_ = map.create_vector(), x_ = map.create_vector(), r_ = map.create_vector();
  solve::SolveReport report;
  map.to_petsc(b, form, b_);
  KSPConvergedReason reason;
  auto attempt = [&] {
    FEM_PETSC(VecSet(x_, 0.0));
    if (transpose)
      FEM_PETSC(KSPSolveTranspose(ksp_, b_, x_));
    else
      FEM_PETSC(KSPSolve(ksp_, b_, x_));
    FEM_PETSC(KSPGetConvergedReason(ksp_, &reason));
    PetscInt its = 0;
    FEM_PETSC(KSPGetIterationNumber(ksp_, &its));
    report.iterations = krylov() ? static_cast<int>(its) : 0;  // preonly counts its one application
  };
  attempt();
  if (reason < 0 && reused_) {
    // The lagged preconditioner no longer serves this version: rebuild it and solve again.
    FEM_PETSC(KSPSetReusePreconditioner(ksp_, PETSC_FALSE));
    FEM_PETSC(KSPSetUp(ksp_));
    if (store_) {  // a setup like any other (the same on every process: the failure is global)
      store_->count("dist.preconditioner_setups");
      store_->count("solve.factorizations");
    }
    reused_ = false;
    baseline_ = -1;
    refresh_next_ = false;
    attempt();
  }
  if (reason < 0) {
    PC pc;
    PCFailedReason pc_reason = PC_NOERROR;
    KSPGetPC(ksp_, &pc);
    PCGetFailedReason(pc, &pc_reason);
    throw NumericalError(fmt::format(
        "'{}': the distributed {} solve failed: {}{}", key_, solve::to_string(options_.backend),
        KSPConvergedReasons[reason],
        pc_reason != PC_NOERROR ? fmt::format(" ({})", PCFailedReasons[pc_reason]) : std::string()));
  }
  // The true residual, whatever the method reported (skipped when no check is asked for).
  // A Krylov method stops at rtol: asking for less than the check is the user's choice.
  const double limit = krylov() ? std::max(options_.max_relative_residual, 1.5 * options_.rtol)
                                : options_.max_relative_residual;
  report.residual = -1;
  if (check && std::isfinite(limit)) {
    if (transpose)
      FEM_PETSC(MatMultTranspose(A_->mat(), x_, r_));
    else
      FEM_PETSC(MatMult(A_->mat(), x_, r_));
    FEM_PETSC(VecAYPX(r_, -1.0, b_));
    const PetscReal rnorm = scaled_norm2(r_), bnorm = scaled_norm2(b_);
    report.residual = bnorm > 0 ? rnorm / bnorm : rnorm;
    if (!(report.residual <= limit))
      throw NumericalError(
          fmt::format("'{}': the distributed {} solve is inaccurate: relative residual {:.3g} > {:.3g}"
                      " (a singular matrix? a Dirichlet condition missing?)",
                      key_, solve::to_string(options_.backend), report.residual, limit));
  }
  map.from_petsc(x_, x);
  // The lag's bookkeeping: every rank sees the same global iteration count.
  if (options_.lag) {
    if (baseline_ < 0)
      baseline_ = report.iterations;
    else if (report.iterations > options_.lag_growth * std::max(baseline_, 1))
      refresh_next_ = true;
  }
  return report;
}

Pinned pin_null_space(Store& store, const std::string& key, const IndexMap& map) {
  const MPI_Comm comm = map.comm();
  const auto A = collective_input(comm, store, key, map);
  const CsrMatrix& matrix = *A.value;
  const NullSpace* ns = matrix.null_space().get();
  collective(comm, [&] {
    FEM_EXPECTS(ns != nullptr, "'{}': no null space to pin", key);
    FEM_EXPECTS(ns->dimension() == 1,
                "'{}': a null space of {} vectors ({}); the distributed solvers pin one unknown, for one "
                "vector (solve it on one process)",
                key, ns->dimension(), ns->description());
  });
  const auto n = static_cast<std::size_t>(matrix.rows());
  const CsrPattern& pattern = matrix.pattern();
  const auto off = pattern.row_offsets();
  const auto col = pattern.col_indices();
  const auto values = matrix.values();
  const auto z = ns->vector(0);
  // Is z a null vector, on the right and on the left? Judged on the Jacobi-scaled matrix as
  // serially; the local matrices hold partial sums, so products and diagonals are accumulated
  // (where the diagonal is zero, the partial rows' absolute sums bound the serial scale).
  std::vector<double> Az(n, 0.0), Atz(n, 0.0), diagonal(n, 0.0), row(n, 0.0);
  for (std::size_t r = 0; r < n; ++r)
    for (index_t e = off[r]; e < off[r + 1]; ++e) {
      const auto c = static_cast<std::size_t>(col[e]);
      const double v = values[static_cast<std::size_t>(e)];
      Az[r] += v * z[c];
      Atz[c] += v * z[r];
      row[r] += std::abs(v);
      if (c == r) diagonal[r] += v;
    }
  for (auto* v : {&Az, &Atz, &diagonal, &row}) map.accumulate(*v);
  std::vector<double> sz(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double d = std::abs(diagonal[i]) > 0 ? std::abs(diagonal[i]) : row[i];
    const double scale = d > 0 && std::isfinite(d) ? std::sqrt(d) : 1.0;
    Az[i] /= scale, Atz[i] /= scale, sz[i] = z[i] * scale;
  }
  const double length = std::sqrt(map.dot(sz, sz));
  for (const auto* y : {&Az, &Atz}) {
    const double ratio = std::sqrt(map.dot(*y, *y)) / length;
    collective(comm, [&] {
      if (!(ratio <= 1e-8))
        throw InvalidArgument(fmt::format(
            "'{}': the declared null vector '{}' is not a {}null vector of the matrix: ‖S⁻¹A{}z‖ / ‖Sz‖ = "
            "{:.3g} (S² = |diag A|)",
            key, ns->name(0), y == &Az ? "" : "left ", y == &Az ? "" : "ᵀ", ratio));
    });
  }
  // The unknown to pin: the largest |z| with a stored diagonal, the lowest rank's among equals.
  double best = 0;
  index_t candidate = -1;
  for (std::size_t i = 0; i < n; ++i)
    if (map.owns_dof(static_cast<index_t>(i)) && std::abs(z[i]) > best &&
        pattern.find(static_cast<index_t>(i), static_cast<index_t>(i)) >= 0)
      best = std::abs(z[i]), candidate = static_cast<index_t>(i);
  const double largest = max(comm, best);
  const int me = rank(comm), ranks = size(comm);
  const int chosen = static_cast<int>(
      -max(comm, -static_cast<std::int64_t>(candidate >= 0 && best == largest ? me : ranks)));
  collective(comm, [&] {
    FEM_EXPECTS(chosen < ranks && largest > 0,
                "'{}': the null vector '{}' vanishes on every unknown with a stored diagonal: it cannot be "
                "pinned",
                key, ns->name(0));
  });
  const std::int64_t global =
      sum(comm, me == chosen ? static_cast<std::int64_t>(map.global_dof(candidate)) : 0);
  Pinned pinned{key + "#pinned", -1};
  for (std::size_t i = 0; i < n; ++i)
    if (map.global_dof(static_cast<index_t>(i)) == global) pinned.local = static_cast<index_t>(i);
  pin(store, key, map, pinned);
  return pinned;
}

std::string pin(Store& store, const std::string& key, const IndexMap& map, const Pinned& at) {
  const auto A = collective_input(map.comm(), store, key, map);
  const std::string pinned = key + "#pinned";
  const bool owner = at.local >= 0 && map.owns_dof(at.local);
  collective_get_or_compute<CsrMatrix>(map.comm(), store, pinned, {{key, A.version}}, [&] {
    const CsrMatrix& matrix = *A.value;
    const auto off = matrix.pattern().row_offsets();
    const auto col = matrix.pattern().col_indices();
    std::vector<double> v(matrix.values().begin(), matrix.values().end());
    const index_t p = at.local;
    if (p >= 0)
      for (index_t r = 0; r < matrix.rows(); ++r)
        for (index_t e = off[r]; e < off[r + 1]; ++e)
          if (r == p || col[e] == p) v[static_cast<std::size_t>(e)] = r == col[e] ? (owner ? 1.0 : 0.0) : 0.0;
    return std::make_shared<const CsrMatrix>(matrix.pattern_ptr(), std::move(v));
  });
  return pinned;
}

std::shared_ptr<const Solver> solver(Store& store, const std::string& key,
                                     std::shared_ptr<const IndexMap> map, const solve::Options& options,
                                     std::shared_ptr<const Solver> retired, bool* computed) {
  const MPI_Comm comm = map->comm();
  if (computed) *computed = false;
  const auto A = collective_input(comm, store, key, *map);
  std::vector<Input> inputs{{key, A.version}};
  const std::string* schur_keys[] = {&options.schur_preconditioner, &options.schur_laplacian,
                                     &options.schur_convection};
  for (const std::string* k : schur_keys) {
    collective(comm, [&] {
      FEM_EXPECTS(k->empty() || options.backend == solve::Backend::fieldsplit,
                  "'{}': a Schur complement preconditioner ('{}') is for the fieldsplit backend, not {}", key,
                  *k, solve::to_string(options.backend));
    });
    if (!k->empty()) inputs.push_back({*k, collective_input(comm, store, *k, *map).version});
  }
  const std::string entry = solver_key(key, options);
  // A solver cached with other options (tolerances, prefix) is no hit: SPMD, so every rank
  // decides alike.
  if (const auto cached = store.find<Solver>(entry); cached && !(cached->options() == options))
    store.erase(entry);
  return collective_get_or_compute<Solver>(comm, store, entry, std::move(inputs), [&] {
    if (computed) *computed = true;
    register_collective(store, entry);
    detail::collect_garbage(comm);
    auto reclaimed = Store::reclaim(std::move(retired));
    const auto schur_matrix = [&](const std::string& k) {
      return k.empty() ? nullptr : petsc_matrix(store, k, map);
    };
    Solver::SchurMatrices schur{schur_matrix(options.schur_preconditioner),
                                schur_matrix(options.schur_laplacian),
                                schur_matrix(options.schur_convection)};
    // A field split is set up anew for each version: refilled in place, PETSc 3.18's fieldsplit
    // kept solving with the previous version's blocks (a second Newton step diverged even with
    // exact inner solves; a new one converged in 3 iterations).
    const bool split = options.backend == solve::Backend::fieldsplit;
    const bool recyclable = reclaimed && reclaimed->matrix().map_ptr() == map &&
                            reclaimed->options() == options && reclaimed->schur_ == schur && !split;
    if (all(comm, recyclable)) {
      // The solver's hold on the old PetscMatrix is given back too, so that it is refilled.
      std::shared_ptr<const PetscMatrix> old = std::move(reclaimed->A_);
      const Mat old_mat = old->mat();
      auto matrix = petsc_matrix(store, key, map, std::move(old));
      // The same Mat, refilled: the KSP keeps its factor or hierarchy. A new Mat (the old one was
      // still held elsewhere) gets a new KSP: swapping operators under MUMPS is not safe.
      if (all(comm, matrix->mat() == old_mat)) {
        reclaimed->store_ = &store;
        reclaimed->update(std::move(matrix), store);
        return std::shared_ptr<const Solver>(std::move(reclaimed));
      }
    }
    reclaimed.reset();
    auto matrix = petsc_matrix(store, key, map);
    auto s = std::make_shared<Solver>(std::move(matrix), options, entry, std::move(schur));
    s->store_ = &store;
    store.count("dist.solver_setups");
    store.count("dist.preconditioner_setups");
    store.count("solve.symbolic_analyses");  // a new factor's analysis, or a new AMG hierarchy
    store.count("solve.factorizations");
    return std::shared_ptr<const Solver>(std::move(s));
  });
}

}  // namespace fem::dist
