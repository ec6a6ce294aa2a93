// fem::dist::eigen_solve on a distributed mesh (runtime.hpp): SLEPc's Krylov–Schur with
// shift-invert on MUMPS over the IndexMap's PETSc matrices, fem::eigen's contract (which
// eigenvalues, elimination of the constrained unknowns, Sturm counts, M-orthonormal vectors,
// backward-error residuals) kept. The PETSc matrices of K and M are the store's `#petsc`
// entries; the reduced matrices, the solver and its factorization live for the call.
#include "fem/dist/detail/petsc.hpp"
#include "fem/dist/dist.hpp"
#include "fem/dist/matrix.hpp"

#ifdef FEM_DIST_HAVE_SLEPC
#include <slepceps.h>
#endif

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

namespace fem::dist::on_petsc {

#ifndef FEM_DIST_HAVE_SLEPC
eigen::Result eigen_solve(Store&, const std::string&, const std::string&, const assembly::FunctionSpace&,
                          const eigen::Options&) {
  throw NotCompiled("SLEPc", "a distributed eigenproblem (Debian libslepc-real-dev)");
}
#else
namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Owned objects of one call, destroyed in any case.
struct Objects {
  Mat K = nullptr, M = nullptr, shifted = nullptr, factor = nullptr;
  IS free = nullptr;
  EPS eps = nullptr;
  Vec full = nullptr, x = nullptr, y = nullptr;
  VecScatter to_full = nullptr;
  ~Objects() {
    if (eps) EPSDestroy(&eps);
    if (factor) MatDestroy(&factor);
    if (shifted) MatDestroy(&shifted);
    if (K) MatDestroy(&K);
    if (M) MatDestroy(&M);
    if (free) ISDestroy(&free);
    if (to_full) VecScatterDestroy(&to_full);
    if (full) VecDestroy(&full);
    if (x) VecDestroy(&x);
    if (y) VecDestroy(&y);
  }
};

// MUMPS's LDLᵀ of `A` (symmetric, maybe indefinite) with its inertia.
solve::Inertia mumps_inertia(Mat A, Store& store) {
  Mat F = nullptr;
  FEM_PETSC(MatGetFactor(A, MATSOLVERMUMPS, MAT_FACTOR_CHOLESKY, &F));
  solve::Inertia in;
  try {
    FEM_PETSC(MatMumpsSetIcntl(F, 13, 1));  // the root node factorized serially: the inertia is exact
    MatFactorInfo info;
    FEM_PETSC(MatFactorInfoInitialize(&info));
    FEM_PETSC(MatCholeskyFactorSymbolic(F, A, nullptr, &info));
    FEM_PETSC(MatCholeskyFactorNumeric(F, A, &info));
    PetscInt negative = 0;  // the zero and positive counts would need MUMPS's null-pivot detection
    FEM_PETSC(MatGetInertia(F, &negative, nullptr, nullptr));
    PetscInt n = 0;
    FEM_PETSC(MatGetSize(A, &n, nullptr));
    in = {static_cast<index_t>(negative), 0, static_cast<index_t>(n - negative)};
  } catch (...) {
    MatDestroy(&F);
    throw;
  }
  MatDestroy(&F);
  store.count("solve.symbolic_analyses");
  store.count("solve.factorizations");
  store.count("eigen.sturm_counts");
  return in;
}

}  // namespace

eigen::Result eigen_solve(Store& store, const std::string& k_key, const std::string& m_key,
                          const assembly::FunctionSpace& V, const eigen::Options& o) {
  const auto start = std::chrono::steady_clock::now();
  FEM_EXPECTS(o.count >= 1, "eigen: count is {}; at least one eigenvalue", o.count);
  if (o.which == eigen::Which::interval)
    FEM_EXPECTS(std::isfinite(o.lower) && std::isfinite(o.upper) && o.lower < o.upper,
                "eigen: the interval [{}, {}] is empty or not finite", o.lower, o.upper);
  FEM_EXPECTS(!o.lumped,
              "eigen: a lumped mass on a distributed mesh is not built yet (use the consistent one)");
  const auto map = dist::index_map(V);
  const MPI_Comm comm = map->comm();
  const auto K = petsc_matrix(store, k_key, map);
  const auto M = petsc_matrix(store, m_key, map);
  eigen::Result r;
  r.size = map->local_dofs();
  Objects ob;

  // The free unknowns this process owns, in global numbering (ascending: owned ranges are contiguous).
  std::vector<char> fixed(static_cast<std::size_t>(map->local_dofs()), 0);
  for (index_t d : o.constrained) {
    FEM_EXPECTS(d >= 0 && d < map->local_dofs(), "eigen: constrained unknown {} is outside 0 .. {}", d,
                map->local_dofs() - 1);
    fixed[static_cast<std::size_t>(d)] = 1;
  }
  std::vector<PetscInt> free;
  for (index_t d = 0; d < map->local_dofs(); ++d)
    if (map->owns_dof(d) && !fixed[static_cast<std::size_t>(d)]) free.push_back(map->global_dof(d));
  std::sort(free.begin(), free.end());
  FEM_PETSC(
      ISCreateGeneral(comm, static_cast<PetscInt>(free.size()), free.data(), PETSC_COPY_VALUES, &ob.free));
  FEM_PETSC(MatCreateSubMatrix(K->mat(), ob.free, ob.free, MAT_INITIAL_MATRIX, &ob.K));
  FEM_PETSC(MatCreateSubMatrix(M->mat(), ob.free, ob.free, MAT_INITIAL_MATRIX, &ob.M));
  FEM_PETSC(MatSetOption(ob.K, MAT_SYMMETRIC, PETSC_TRUE));
  FEM_PETSC(MatSetOption(ob.M, MAT_SPD, PETSC_TRUE));
  PetscInt n_free = 0;
  FEM_PETSC(MatGetSize(ob.K, &n_free, nullptr));

  // The shift, as the serial solver chooses it.
  double sigma = o.shift;
  {
    Vec d = nullptr;
    FEM_PETSC(MatCreateVecs(ob.K, &d, nullptr));
    PetscScalar tk = 0, tm = 0;
    FEM_PETSC(MatGetDiagonal(ob.K, d));
    FEM_PETSC(VecSum(d, &tk));
    FEM_PETSC(MatGetDiagonal(ob.M, d));
    FEM_PETSC(VecSum(d, &tm));
    VecDestroy(&d);
    if (o.which == eigen::Which::smallest) sigma = -1e-6 * tk / tm;
    if (o.which == eigen::Which::interval) sigma = 0.5 * (o.lower + o.upper);
  }
  const auto count_below = [&](double tau) {
    const auto t0 = std::chrono::steady_clock::now();
    if (ob.shifted) MatDestroy(&ob.shifted);
    FEM_PETSC(MatDuplicate(ob.K, MAT_COPY_VALUES, &ob.shifted));
    FEM_PETSC(MatAXPY(ob.shifted, -tau, ob.M, SAME_NONZERO_PATTERN));
    FEM_PETSC(MatSetOption(ob.shifted, MAT_SYMMETRIC, PETSC_TRUE));
    const solve::Inertia in = mumps_inertia(ob.shifted, store);
    ++r.sturm_factorizations;
    r.factorize_seconds += seconds_since(t0);
    return in.negative;
  };

  index_t wanted = std::min<index_t>(o.count, static_cast<index_t>(n_free));
  index_t expected = -1, below_interval = 0;
  if (o.which == eigen::Which::interval) {
    below_interval = count_below(o.lower);
    expected = count_below(o.upper) - below_interval;
    r.sturm_count = expected;
    if (expected > o.count) {
      r.missing = expected - o.count;
      r.log.push_back(
          fmt::format("the interval [{:.6g}, {:.6g}] holds {} eigenvalues; {} were asked for: {} "
                      "not computed (raise the count)",
                      o.lower, o.upper, expected, o.count, r.missing));
      sigma = o.lower;
    }
    wanted = std::min(expected, o.count);
  } else if (o.which == eigen::Which::nearest) {
    r.sturm_count = count_below(sigma);
  }
  r.shift = sigma;

  // Krylov–Schur, shift-invert, MUMPS (LDLᵀ: K − σM may be indefinite). SLEPc on top of the
  // session's PETSc, once (its packages finalize with PETSc).
  PetscBool slepc = PETSC_FALSE;
  FEM_PETSC(SlepcInitialized(&slepc));
  if (!slepc) FEM_PETSC(SlepcInitializeNoArguments());
  FEM_PETSC(EPSCreate(comm, &ob.eps));
  FEM_PETSC(EPSSetOperators(ob.eps, ob.K, ob.M));
  FEM_PETSC(EPSSetProblemType(ob.eps, EPS_GHEP));
  FEM_PETSC(EPSSetType(ob.eps, EPSKRYLOVSCHUR));
  FEM_PETSC(EPSSetTarget(ob.eps, sigma));
  FEM_PETSC(EPSSetWhichEigenpairs(ob.eps, EPS_TARGET_MAGNITUDE));
  FEM_PETSC(EPSSetTolerances(ob.eps, o.tolerance, static_cast<PetscInt>(o.max_iterations)));
  ST st = nullptr;
  KSP ksp = nullptr;
  PC pc = nullptr;
  FEM_PETSC(EPSGetST(ob.eps, &st));
  FEM_PETSC(STSetType(st, STSINVERT));
  FEM_PETSC(STGetKSP(st, &ksp));
  FEM_PETSC(KSPSetType(ksp, KSPPREONLY));
  FEM_PETSC(KSPGetPC(ksp, &pc));
  FEM_PETSC(PCSetType(pc, PCCHOLESKY));
  FEM_PETSC(PCFactorSetMatSolverType(pc, MATSOLVERMUMPS));
  FEM_PETSC(EPSSetOptionsPrefix(ob.eps, "fem_"));
  FEM_PETSC(EPSSetFromOptions(ob.eps));
  r.method = "Krylov-Schur (SLEPc), shift-invert on mumps";
  r.backend = solve::Backend::mumps;

  struct Pair {
    double value;
    int index;
  };
  std::vector<Pair> pairs;
  PetscInt converged = 0;
  for (int attempt = 0; attempt < 3 && wanted > 0; ++attempt) {
    const PetscInt nev = std::min<PetscInt>(wanted + (attempt ? 4 * attempt : 0), n_free - 1);
    FEM_PETSC(EPSSetDimensions(ob.eps, nev, PETSC_DEFAULT, PETSC_DEFAULT));
    const auto t0 = std::chrono::steady_clock::now();
    FEM_PETSC(EPSSetUp(ob.eps));
    if (attempt == 0) {
      r.factorize_seconds += seconds_since(t0);
      store.count("solve.symbolic_analyses");
      store.count("solve.factorizations");
    }
    FEM_PETSC(EPSSolve(ob.eps));
    PetscInt its = 0;
    FEM_PETSC(EPSGetIterationNumber(ob.eps, &its));
    FEM_PETSC(EPSGetConverged(ob.eps, &converged));
    pairs.clear();
    for (PetscInt i = 0; i < converged; ++i) {
      PetscScalar kr = 0, ki = 0;
      FEM_PETSC(EPSGetEigenvalue(ob.eps, i, &kr, &ki));
      const double l = PetscRealPart(kr);
      if (o.which == eigen::Which::interval && (l < o.lower || l > o.upper)) continue;
      pairs.push_back({l, static_cast<int>(i)});
    }
    if (o.which == eigen::Which::interval) {
      std::sort(pairs.begin(), pairs.end(), [](const Pair& a, const Pair& b) { return a.value < b.value; });
    } else {
      std::stable_sort(pairs.begin(), pairs.end(), [&](const Pair& a, const Pair& b) {
        return std::abs(a.value - sigma) < std::abs(b.value - sigma);
      });
    }
    if (static_cast<index_t>(pairs.size()) > wanted) pairs.resize(static_cast<std::size_t>(wanted));
    std::sort(pairs.begin(), pairs.end(), [](const Pair& a, const Pair& b) { return a.value < b.value; });
    // The Sturm check of fem::eigen: nothing missing in the window of the results.
    index_t missing = wanted - static_cast<index_t>(pairs.size());
    if (missing == 0 && o.verify && !pairs.empty()) {
      const auto gap = [](double l) { return 1e-6 * std::max(std::abs(l), 1e-12); };
      if (o.which == eigen::Which::interval) {
        if (expected > o.count) {
          const double lo = pairs.back().value - gap(pairs.back().value);
          const auto under =
              std::count_if(pairs.begin(), pairs.end(), [&](const Pair& p) { return p.value < lo; });
          missing = count_below(lo) - below_interval - static_cast<index_t>(under);
        }
      } else {
        const index_t above = count_below(pairs.back().value + gap(pairs.back().value));
        const index_t below = o.which == eigen::Which::smallest
                                  ? 0
                                  : count_below(pairs.front().value - gap(pairs.front().value));
        missing = above - below - static_cast<index_t>(pairs.size());
      }
    }
    if (missing <= 0) break;
    if (attempt == 2) {
      r.missing += missing;
      r.converged = false;
      r.log.push_back(fmt::format("{} eigenvalue(s) in the window of the results were not found", missing));
    } else {
      ++r.restarts;
    }
  }

  // The vectors: M-normalized, scattered into the full global vector (zero at the constrained
  // unknowns), then into each process's local numbering.
  FEM_PETSC(MatCreateVecs(ob.K, &ob.x, &ob.y));
  ob.full = map->create_vector();
  FEM_PETSC(VecScatterCreate(ob.x, nullptr, ob.full, ob.free, &ob.to_full));
  const auto k = static_cast<index_t>(pairs.size());
  std::vector<Vec> X(static_cast<std::size_t>(k), nullptr);
  r.vectors.assign(static_cast<std::size_t>(r.size) * static_cast<std::size_t>(k), 0.0);
  double k_norm = 0, m_norm = 0;
  FEM_PETSC(MatNorm(ob.K, NORM_INFINITY, &k_norm));
  FEM_PETSC(MatNorm(ob.M, NORM_INFINITY, &m_norm));
  try {
    for (index_t j = 0; j < k; ++j) {
      FEM_PETSC(MatCreateVecs(ob.K, &X[static_cast<std::size_t>(j)], nullptr));
      Vec xj = X[static_cast<std::size_t>(j)];
      FEM_PETSC(EPSGetEigenvector(ob.eps, pairs[static_cast<std::size_t>(j)].index, xj, nullptr));
      PetscScalar xmx = 0;
      FEM_PETSC(MatMult(ob.M, xj, ob.y));
      FEM_PETSC(VecDot(xj, ob.y, &xmx));
      FEM_PETSC(VecScale(xj, 1.0 / std::sqrt(PetscRealPart(xmx))));
      r.eigenvalues.push_back(pairs[static_cast<std::size_t>(j)].value);
      // The backward error, as the serial solver reports it.
      const double l = r.eigenvalues.back();
      PetscReal res = 0, xn = 0;
      FEM_PETSC(MatMult(ob.K, xj, ob.x));
      FEM_PETSC(MatMult(ob.M, xj, ob.y));
      FEM_PETSC(VecAXPY(ob.x, -l, ob.y));
      FEM_PETSC(VecNorm(ob.x, NORM_2, &res));
      FEM_PETSC(VecNorm(xj, NORM_2, &xn));
      const double scale = (k_norm + std::abs(l) * m_norm) * xn;
      r.residuals.push_back(scale > 0 ? res / scale : res);
      r.residual_max = std::max(r.residual_max, r.residuals.back());
      FEM_PETSC(VecSet(ob.full, 0.0));
      FEM_PETSC(VecScatterBegin(ob.to_full, xj, ob.full, INSERT_VALUES, SCATTER_FORWARD));
      FEM_PETSC(VecScatterEnd(ob.to_full, xj, ob.full, INSERT_VALUES, SCATTER_FORWARD));
      map->from_petsc(ob.full, std::span<double>(r.vectors).subspan(
                                   static_cast<std::size_t>(j) * static_cast<std::size_t>(r.size),
                                   static_cast<std::size_t>(r.size)));
    }
    for (index_t a = 0; a < k; ++a) {
      FEM_PETSC(MatMult(ob.M, X[static_cast<std::size_t>(a)], ob.y));
      for (index_t b = 0; b < k; ++b) {
        PetscScalar g = 0;
        FEM_PETSC(VecDot(X[static_cast<std::size_t>(b)], ob.y, &g));
        r.orthogonality_max =
            std::max(r.orthogonality_max, std::abs(PetscRealPart(g) - (a == b ? 1.0 : 0.0)));
      }
    }
  } catch (...) {
    for (Vec& v : X) VecDestroy(&v);
    throw;
  }
  for (Vec& v : X) VecDestroy(&v);
  if (k < wanted && r.missing == 0) {
    r.converged = false;
    r.log.push_back(fmt::format("{} of {} eigenvalues converged", k, wanted));
  }
  for (double res : r.residuals)
    if (!(res <= 1e-8)) r.converged = false;
  PetscInt its = 0;
  FEM_PETSC(EPSGetIterationNumber(ob.eps, &its));
  r.operator_applications =
      static_cast<index_t>(its);  // Krylov–Schur restarts; solves are not counted by SLEPc
  store.count("eigen.solves");
  r.solve_seconds = std::max(0.0, seconds_since(start) - r.factorize_seconds);
  return r;
}
#endif

}  // namespace fem::dist::on_petsc
