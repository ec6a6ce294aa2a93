#include "fem/dist/solver.hpp"

#include <fmt/format.h>

#include <cmath>

#include "fem/dist/detail/petsc.hpp"
#include "fem/dist/session.hpp"

namespace fem::dist {

std::string_view to_string(Method m) noexcept {
  switch (m) {
    case Method::mumps:
      return "mumps";
    case Method::gamg:
      return "gamg";
    case Method::hypre:
      return "hypre";
  }
  return "?";
}

std::optional<Method> method_from_name(std::string_view name) noexcept {
  for (Method m : {Method::mumps, Method::gamg, Method::hypre})
    if (to_string(m) == name) return m;
  return std::nullopt;
}

std::string solver_key(const std::string& key, const SolverOptions& o) {
  if (o.method == Method::mumps)
    return fmt::format("{}#factor/mumps{}{}", key, o.spd ? "/cholesky" : "", o.lag ? "/lagged" : "");
  return fmt::format("{}#ksp/{}{}", key, to_string(o.method), o.lag ? "/lagged" : "");
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

}  // namespace

Solver::Solver(std::shared_ptr<const PetscMatrix> A, const SolverOptions& options, std::string key)
    : A_(std::move(A)), options_(options), key_(std::move(key)) {
  const MPI_Comm comm = A_->map().comm();
  Mat mat = A_->mat();
  FEM_PETSC(KSPCreate(comm, &ksp_));
  FEM_PETSC(KSPSetOperators(ksp_, mat, mat));
  if (options_.spd) {  // kept through refills (MatSetValuesCOO would clear a plain MAT_SPD)
    FEM_PETSC(MatSetOption(mat, MAT_SPD, PETSC_TRUE));
    FEM_PETSC(MatSetOption(mat, MAT_SPD_ETERNAL, PETSC_TRUE));
  }
  PC pc;
  FEM_PETSC(KSPGetPC(ksp_, &pc));
  FEM_PETSC(KSPSetType(ksp_, !krylov() ? KSPPREONLY : options_.spd ? KSPCG : KSPGMRES));
  switch (options_.method) {
    case Method::mumps:
      FEM_PETSC(PCSetType(pc, options_.spd ? PCCHOLESKY : PCLU));
      FEM_PETSC(PCFactorSetMatSolverType(pc, MATSOLVERMUMPS));
      break;
    case Method::gamg:
      set_rigid_body_modes(mat, A_->map());
      FEM_PETSC(PCSetType(pc, PCGAMG));
      break;
    case Method::hypre:
      FEM_PETSC(PCSetType(pc, PCHYPRE));
      FEM_PETSC(PCHYPRESetType(pc, "boomeramg"));
      break;
  }
  if (krylov()) {
    FEM_PETSC(KSPSetTolerances(ksp_, options_.rtol, options_.atol, PETSC_DEFAULT, options_.max_iterations));
    // rtol bounds the true residual ‖b − Ax‖/‖b‖ (what the check after the solve measures):
    // CG monitors the unpreconditioned norm, GMRES preconditions on the right.
    FEM_PETSC(KSPSetNormType(ksp_, KSP_NORM_UNPRECONDITIONED));
    if (!options_.spd) FEM_PETSC(KSPSetPCSide(ksp_, PC_RIGHT));
  }
  if (!options_.prefix.empty()) FEM_PETSC(KSPSetOptionsPrefix(ksp_, options_.prefix.c_str()));
  FEM_PETSC(KSPSetFromOptions(ksp_));
  FEM_PETSC(KSPSetUp(ksp_));  // symbolic + numeric factorization, or the AMG hierarchy, now
}

Solver::~Solver() {
  for (Vec* v : {&b_, &x_, &r_}) detail::delayed_destroy(reinterpret_cast<PetscObject*>(v));
  detail::delayed_destroy(reinterpret_cast<PetscObject*>(&ksp_));
}

std::size_t Solver::bytes() const noexcept {
  std::size_t b = sizeof(*this);
  if (options_.method == Method::mumps) {
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
  } else {
    store.count("dist.preconditioner_reuses");
  }
}

DistSolveReport Solver::solve(std::span<const double> b, Sums form, std::span<double> x) const {
  return run(b, form, x, false);
}

DistSolveReport Solver::solve(std::span<const double> B, Sums form, std::span<double> X, index_t nrhs) const {
  const auto n = static_cast<std::size_t>(A_->map().local_dofs());
  collective(A_->map().comm(), [&] {
    FEM_EXPECTS(nrhs >= 0 && B.size() == n * static_cast<std::size_t>(nrhs) && X.size() == B.size(),
                "'{}': {} right-hand sides of {} local DOFs need {} entries, B has {} and X {}", key_, nrhs,
                n, n * static_cast<std::size_t>(std::max(nrhs, 0)), B.size(), X.size());
  });
  DistSolveReport total;
  for (index_t k = 0; k < nrhs; ++k) {
    const auto r = run(B.subspan(k * n, n), form, X.subspan(k * n, n), false);
    total.iterations += r.iterations;
    total.relative_residual = std::max(total.relative_residual, r.relative_residual);
    total.preconditioner_reused = r.preconditioner_reused;
  }
  return total;
}

DistSolveReport Solver::solve_transpose(std::span<const double> b, Sums form, std::span<double> x) const {
  FEM_EXPECTS(options_.method == Method::mumps || options_.spd,
              "'{}': transpose solves need MUMPS or a symmetric matrix (CG), not {} with GMRES", key_,
              to_string(options_.method));
  return run(b, form, x, true);
}

DistSolveReport Solver::run(std::span<const double> b, Sums form, std::span<double> x, bool transpose) const {
  const IndexMap& map = A_->map();
  collective(map.comm(), [&] {
    FEM_EXPECTS(b.size() == x.size() && b.size() == static_cast<std::size_t>(map.local_dofs()),
                "'{}': solve with vectors of {} and {} entries, the space has {} local DOFs", key_, b.size(),
                x.size(), map.local_dofs());
  });
  // Work vectors made once per solver (solves are main-thread and collective).
  if (!b_) b_ = map.create_vector(), x_ = map.create_vector(), r_ = map.create_vector();
  DistSolveReport report;
  report.preconditioner_reused = reused_;
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
    reused_ = false;
    baseline_ = -1;
    refresh_next_ = false;
    report.preconditioner_reused = false;
    attempt();
  }
  if (reason < 0) {
    PC pc;
    PCFailedReason pc_reason = PC_NOERROR;
    KSPGetPC(ksp_, &pc);
    PCGetFailedReason(pc, &pc_reason);
    throw NumericalError(fmt::format(
        "'{}': the distributed {} solve failed: {}{}", key_, to_string(options_.method),
        KSPConvergedReasons[reason],
        pc_reason != PC_NOERROR ? fmt::format(" ({})", PCFailedReasons[pc_reason]) : std::string()));
  }
  // The true residual, whatever the method reported (skipped when no check is asked for).
  // A Krylov method stops at rtol: asking for less than the check is the user's choice.
  const double limit = krylov() ? std::max(options_.max_relative_residual, 1.5 * options_.rtol)
                                : options_.max_relative_residual;
  report.relative_residual = -1;
  if (std::isfinite(limit)) {
    if (transpose)
      FEM_PETSC(MatMultTranspose(A_->mat(), x_, r_));
    else
      FEM_PETSC(MatMult(A_->mat(), x_, r_));
    FEM_PETSC(VecAYPX(r_, -1.0, b_));
    PetscReal rnorm = 0, bnorm = 0;
    FEM_PETSC(VecNorm(r_, NORM_2, &rnorm));
    FEM_PETSC(VecNorm(b_, NORM_2, &bnorm));
    report.relative_residual = bnorm > 0 ? rnorm / bnorm : rnorm;
    if (!(report.relative_residual <= limit))
      throw NumericalError(
          fmt::format("'{}': the distributed {} solve is inaccurate: relative residual {:.3g} > {:.3g}"
                      " (a singular matrix? a Dirichlet condition missing?)",
                      key_, to_string(options_.method), report.relative_residual, limit));
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

std::shared_ptr<const Solver> solver(Store& store, const std::string& key,
                                     std::shared_ptr<const IndexMap> map, const SolverOptions& options,
                                     std::shared_ptr<const Solver> retired) {
  const MPI_Comm comm = map->comm();
  const auto A = collective_input(comm, store, key, *map);
  const std::string entry = solver_key(key, options);
  // A solver cached with other options (tolerances, prefix) is no hit: SPMD, so every rank
  // decides alike.
  if (const auto cached = store.find<Solver>(entry); cached && !(cached->options() == options))
    store.erase(entry);
  return collective_get_or_compute<Solver>(comm, store, entry, {{key, A.version}}, [&] {
    register_collective(store, entry);
    detail::collect_garbage(comm);
    const bool recyclable = retired && retired.use_count() == 1 && retired->matrix().map_ptr() == map &&
                            retired->options() == options;
    if (all(comm, recyclable)) {
      auto s = std::const_pointer_cast<Solver>(std::move(retired));
      // The solver's hold on the old PetscMatrix is given back too, so that it is refilled.
      std::shared_ptr<const PetscMatrix> old = std::move(s->A_);
      const Mat old_mat = old->mat();
      auto matrix = petsc_matrix(store, key, map, std::move(old));
      // The same Mat, refilled: the KSP keeps its factor or hierarchy. A new Mat (the old one was
      // still held elsewhere) gets a new KSP: swapping operators under MUMPS is not safe.
      if (all(comm, matrix->mat() == old_mat)) {
        s->update(std::move(matrix), store);
        return std::shared_ptr<const Solver>(std::move(s));
      }
    }
    retired.reset();
    auto matrix = petsc_matrix(store, key, map);
    auto s = std::make_shared<Solver>(std::move(matrix), options, entry);
    store.count("dist.solver_setups");
    store.count("dist.preconditioner_setups");
    return std::shared_ptr<const Solver>(std::move(s));
  });
}

}  // namespace fem::dist
