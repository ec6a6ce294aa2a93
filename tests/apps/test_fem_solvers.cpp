// The solver subcommands as a user runs them: `fem poisson`, `fem heat` and `fem nonlinear`
// with --json - on generated and sample meshes; errors against exact solutions, the store's
// cache counters (one factorization, N cached solves), exit codes and one-line errors.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli.hpp"
#include "fem/mesh/vtu.hpp"

namespace {

namespace fs = std::filesystem;

using fem::testing::CliResult;
using fem::testing::expect_one_line_naming;
using fem::testing::fem_run;
using fem::testing::run_json;
using fem::testing::slurp;
using fem::testing::temp_dir;

const std::string quadratic = "1+x*x+2*y*y";  // -Δu = -6

std::string poisson_quadratic(int n, int order) {
  return "poisson gen:square-tri3:" + std::to_string(n) + " --order " + std::to_string(order) +
         " --source -6 --dirichlet all=" + quadratic + " --exact " + quadratic;
}

TEST(FemPoisson, JsonHoldsTheContract) {
  const auto dir = temp_dir();
  const auto j = run_json(poisson_quadratic(4, 1), dir);
  ASSERT_FALSE(j.is_null());
  EXPECT_EQ(j["mesh"]["nodes"], 25);
  EXPECT_EQ(j["mesh"]["cells"], 32);
  EXPECT_EQ(j["mesh"]["cell_type"], "tri3");
  EXPECT_EQ(j["dofs"], 25);
  for (const char* k : {"read_mesh", "connectivity", "assemble", "factorize", "solve", "write"})
    EXPECT_GE(j["timings"][k].get<double>(), 0.0) << k;
  EXPECT_EQ(j["cache"]["pattern_builds"], 1);
  EXPECT_EQ(j["cache"]["pattern_hits"], 0);
  EXPECT_EQ(j["cache"]["symbolic_analyses"], 1);
  EXPECT_EQ(j["cache"]["factorizations"], 1);
  EXPECT_EQ(j["cache"]["solves"], 1);
  EXPECT_NEAR(j["solution"]["min"].get<double>(), 1.0, 1e-12);
  EXPECT_NEAR(j["solution"]["max"].get<double>(), 4.0, 1e-12);
  EXPECT_TRUE(j["error"].contains("l2"));
  EXPECT_TRUE(j["error"].contains("h1"));
  fs::remove_all(dir);
}

TEST(FemPoisson, P2ReproducesAQuadratic) {
  const auto dir = temp_dir();
  for (int n : {2, 4, 8}) {
    const auto j = run_json(poisson_quadratic(n, 2), dir);
    ASSERT_FALSE(j.is_null());
    EXPECT_LT(j["error"]["l2"].get<double>(), 1e-10) << n;
    EXPECT_LT(j["error"]["h1"].get<double>(), 1e-8) << n;
  }
  fs::remove_all(dir);
}

TEST(FemPoisson, P1ErrorQuartersUnderRefinement) {
  const auto dir = temp_dir();
  double previous = 0;
  for (int n : {4, 8, 16, 32}) {
    const auto j = run_json(poisson_quadratic(n, 1), dir);
    ASSERT_FALSE(j.is_null());
    const double l2 = j["error"]["l2"].get<double>();
    EXPECT_LT(l2, 0.05);
    if (previous > 0) {
      EXPECT_GT(previous / l2, 3.5) << n;  // O(h²)
      EXPECT_LT(previous / l2, 4.5) << n;
    }
    previous = l2;
  }
  fs::remove_all(dir);
}

TEST(FemPoisson, CoefficientByCellTagNameOrEverywhere) {
  const auto dir = temp_dir();
  // -div(2∇u) = -12 for the same quadratic, with k given by the cell tag's name, its number, or 'all'.
  for (const char* k : {"domain=2", "1=2", "all=2", "all=1+1+0*x"}) {
    const auto j = run_json("poisson gen:square-tri3:4 --order 2 --source -12 --dirichlet all=" + quadratic +
                                " --exact " + quadratic + " --coefficient " + k,
                            dir);
    ASSERT_FALSE(j.is_null()) << k;
    EXPECT_LT(j["error"]["l2"].get<double>(), 1e-10) << k;
  }
  expect_one_line_naming(fem_run("poisson gen:square-tri3:4 --dirichlet all=0 --coefficient steel=2", dir),
                         "steel");
  fs::remove_all(dir);
}

TEST(FemPoisson, RepeatedOptionsTakeOneValueEach) {
  const auto dir = temp_dir();
  // The mesh after a repeatable option is still the mesh, not a second condition.
  const auto j =
      run_json("poisson --dirichlet left=0 --dirichlet right=1 --coefficient all=3 gen:square-tri3:4", dir);
  ASSERT_FALSE(j.is_null());
  EXPECT_NEAR(j["solution"]["min"].get<double>(), 0.0, 1e-12);
  EXPECT_NEAR(j["solution"]["max"].get<double>(), 1.0, 1e-12);
  fs::remove_all(dir);
}

TEST(FemPoisson, SolverChoicesAgree) {
  const auto dir = temp_dir();
  for (const char* s : {"auto", "umfpack", "ldlt", "lu"}) {
    const auto j = run_json(poisson_quadratic(8, 2) + " --solver " + s + " --threads 1", dir);
    ASSERT_FALSE(j.is_null()) << s;
    EXPECT_LT(j["error"]["l2"].get<double>(), 1e-10) << s;
  }
  fs::remove_all(dir);
}

TEST(FemPoisson, SampleMeshTagsByNameAndVtuOutput) {
  const auto dir = temp_dir();
  const fs::path mesh = fs::path(FEM_MESHES_DIR) / "plate_hole_v41.msh";
  if (!fs::exists(mesh)) GTEST_SKIP() << mesh;
  for (int order : {1, 2}) {
    std::string name = "u";  // (not "u" + std::to_string(...): GCC 12's false -Wrestrict)
    name += std::to_string(order);
    const auto out = dir / (name + ".vtu");
    const auto j =
        run_json("poisson '" + mesh.string() + "' --order " + std::to_string(order) +
                     " --dirichlet hole=1 --dirichlet left=0 --neumann right=0.5 --coefficient all=2"
                     " --output '" +
                     out.string() + "'",
                 dir);
    ASSERT_FALSE(j.is_null());
    EXPECT_GT(j["solution"]["max"].get<double>(), 0.99);
    EXPECT_GE(j["solution"]["min"].get<double>(), -1e-12);
    const auto vtu = fem::mesh::read_vtu(out);
    const auto u = std::find_if(vtu.point_data.begin(), vtu.point_data.end(),
                                [](const auto& a) { return a.name == "u"; });
    ASSERT_NE(u, vtu.point_data.end());
    EXPECT_EQ(u->values.size(), j["mesh"]["nodes"].get<std::size_t>());
    const double vtu_max = *std::max_element(u->values.begin(), u->values.end());
    EXPECT_GT(vtu_max, 0.99);  // u = 1 on the hole, more near the inflow through `right`
    EXPECT_LE(vtu_max, j["solution"]["max"].get<double>() + 1e-12);
    if (order == 1) {
      EXPECT_EQ(vtu_max, j["solution"]["max"].get<double>());
    }
    // The gradient averaged over each cell, for either order.
    const bool has_grad = std::any_of(vtu.cell_data.begin(), vtu.cell_data.end(),
                                      [](const auto& a) { return a.name == "grad_u" && a.components == 2; });
    EXPECT_TRUE(has_grad) << "order " << order;
  }
  fs::remove_all(dir);
}

TEST(FemPoisson, VtuValuesOnSecondOrderMeshNodes) {
  const auto dir = temp_dir();
  const fs::path mesh = fs::path(FEM_MESHES_DIR) / "annulus_p2_v41.msh";
  if (!fs::exists(mesh)) GTEST_SKIP() << mesh;
  // u = x + y: P1 and P2 on the tri6 mesh; every mesh node (edge nodes too) gets its value.
  for (int order : {1, 2}) {
    const auto out = dir / "u.vtu";
    const auto j = run_json("poisson '" + mesh.string() + "' --order " + std::to_string(order) +
                                " --dirichlet all=x+y --output '" + out.string() + "'",
                            dir);
    ASSERT_FALSE(j.is_null());
    const auto vtu = fem::mesh::read_vtu(out);
    const auto u = std::find_if(vtu.point_data.begin(), vtu.point_data.end(),
                                [](const auto& a) { return a.name == "u"; });
    ASSERT_NE(u, vtu.point_data.end());
    double worst = 0;
    for (std::size_t i = 0; i < u->values.size(); ++i)
      worst = std::max(worst, std::abs(u->values[i] - vtu.points[3 * i] - vtu.points[3 * i + 1]));
    EXPECT_LT(worst, order == 2 ? 1e-10 : 1e-2) << order;  // P1: edge nodes off the chord
  }
  fs::remove_all(dir);
}

TEST(FemHeat, OneFactorizationManyCachedSolves) {
  const auto dir = temp_dir();
  const auto pvd = dir / "series" / "heat.pvd";
  const auto j = run_json(
      "heat gen:square-tri3:8 --dt 0.01 --steps 20 --initial 'sin(pi*x)*sin(pi*y)' "
      "--dirichlet all=0 --output '" +
          pvd.string() + "' --every 5",
      dir);
  ASSERT_FALSE(j.is_null());
  EXPECT_EQ(j["cache"]["factorizations"], 1);
  EXPECT_EQ(j["cache"]["solves"], 20);
  EXPECT_GE(j["cache"]["cache_hits"], 19);
  EXPECT_EQ(j["frames"], 5);  // t = 0 and every 5 steps
  EXPECT_TRUE(fs::exists(pvd));
  // The first mode decays like exp(-2π² t): at t = 0.2 from 1 to about 0.02 (backward Euler: slower).
  const double max = j["solution"]["max"].get<double>();
  EXPECT_GT(max, 0.01);
  EXPECT_LT(max, 0.06);
  fs::remove_all(dir);
}

TEST(FemHeat, TimeDependentSourceAndSteadyState) {
  const auto dir = temp_dir();
  // Constant source, long time: the steady Poisson solution (max ≈ 0.0737 for f = 1 on the unit square).
  const auto j =
      run_json("heat gen:square-tri3:16 --dt 1 --steps 10 --source '1+0*t' --dirichlet all=0", dir);
  ASSERT_FALSE(j.is_null());
  EXPECT_NEAR(j["solution"]["max"].get<double>(), 0.0737, 0.003);
  EXPECT_EQ(j["cache"]["factorizations"], 1);
  EXPECT_EQ(j["cache"]["solves"], 10);
  fs::remove_all(dir);
}

TEST(FemNonlinear, BratuConvergesForSmallLambda) {
  const auto dir = temp_dir();
  const auto j = run_json("nonlinear gen:square-tri3:16 --problem bratu --lambda 1", dir);
  ASSERT_FALSE(j.is_null());
  EXPECT_EQ(j["newton"]["converged"], true);
  EXPECT_GT(j["newton"]["iterations"].get<int>(), 0);
  EXPECT_LE(j["newton"]["iterations"].get<int>(), 6);
  EXPECT_TRUE(j["newton"]["reason"].is_string());
  EXPECT_GT(j["solution"]["max"].get<double>(), 0.05);
  // Newton's time is split into the phases: factorizations and solves apart.
  EXPECT_GT(j["timings"]["factorize"].get<double>(), 0.0);
  EXPECT_GT(j["timings"]["solve"].get<double>(), 0.0);
  EXPECT_GT(j["newton"]["timings"]["solve"].get<double>(), 0.0);
  EXPECT_LE(j["timings"]["factorize"].get<double>(), j["newton"]["seconds"].get<double>());
  // With a fixed lag of 3 and a line search it converges too, with fewer factorizations.
  const auto lagged = run_json(
      "nonlinear gen:square-tri3:16 --problem bratu --lambda 1 --lag 3 --line-search backtracking", dir);
  ASSERT_FALSE(lagged.is_null());
  EXPECT_EQ(lagged["newton"]["converged"], true);
  EXPECT_LT(lagged["cache"]["factorizations"].get<int>(), lagged["newton"]["iterations"].get<int>());
  // Newton's linear solves are the solve kernel's: one per iteration, whatever the lag.
  EXPECT_EQ(j["cache"]["solves"], j["newton"]["iterations"]);
  EXPECT_GE(lagged["cache"]["solves"].get<int>(), lagged["newton"]["iterations"].get<int>());
  // --anderson: one factorization carries the solve near the fold, in far fewer iterations
  // than the plain chord steps, to the same solution.
  const std::string near_fold =
      "nonlinear gen:square-tri3:16 --problem bratu --lambda 6 --lag 1000 --rtol 1e-10";
  const auto chord = run_json(near_fold, dir);
  const auto accelerated = run_json(near_fold + " --anderson 5", dir);
  ASSERT_FALSE(chord.is_null() || accelerated.is_null());
  EXPECT_EQ(accelerated["newton"]["converged"], true);
  EXPECT_EQ(accelerated["cache"]["factorizations"], 1);
  EXPECT_LT(2 * accelerated["newton"]["iterations"].get<int>(), chord["newton"]["iterations"].get<int>());
  EXPECT_NEAR(accelerated["solution"]["max"].get<double>(), chord["solution"]["max"].get<double>(), 1e-8);
  EXPECT_NE(fem_run("nonlinear gen:square-tri3:4 --anderson 17", dir).status, 0);
  const CliResult no_lag = fem_run("nonlinear gen:square-tri3:4 --anderson 5", dir);
  EXPECT_NE(no_lag.status, 0);
  EXPECT_NE(no_lag.err.find("--lag"), std::string::npos) << no_lag.err;
  fs::remove_all(dir);
}

TEST(FemNonlinear, BratuPastTheFoldExitsWithThree) {
  const auto dir = temp_dir();
  const CliResult r = fem_run("nonlinear gen:square-tri3:16 --problem bratu --lambda 7 --quiet", dir);
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.err.find("not converged"), std::string::npos) << r.err;
  // Continuation stops at the last converged λ, below the fold (about 6.8).
  const CliResult c = fem_run(
      "nonlinear gen:square-tri3:16 --problem bratu --lambda 7 --continuation --quiet "
      "--json '" +
          (dir / "c.json").string() + "'",
      dir);
  EXPECT_EQ(c.status, 3) << c.err;
  const auto j = nlohmann::json::parse(slurp(dir / "c.json"));
  EXPECT_EQ(j["newton"]["converged"], false);
  EXPECT_GT(j["continuation"]["last_lambda"].get<double>(), 6.5);
  EXPECT_LT(j["continuation"]["last_lambda"].get<double>(), 7.0);
  fs::remove_all(dir);
}

TEST(FemNonlinear, QuasilinearReproducesALinearSolution) {
  const auto dir = temp_dir();
  // u = 1+x+2y: -div((1+u²)∇u) = -2u|∇u|² = -10(1+x+2y).
  const auto j = run_json(
      "nonlinear gen:square-tri3:8 --problem quasilinear --source '-10*(1+x+2*y)' "
      "--dirichlet all=1+x+2*y --exact 1+x+2*y",
      dir);
  ASSERT_FALSE(j.is_null());
  EXPECT_EQ(j["newton"]["converged"], true);
  EXPECT_LT(j["error"]["l2"].get<double>(), 1e-10);
  fs::remove_all(dir);
}

// A scalar problem without a Dirichlet condition is singular (the constants): compatible data
// give the zero-mean solution, the same on every backend; incompatible ones a one-line error.
TEST(FemPoisson, PureNeumannIsSolvedWithZeroMeanOrRefused) {
  const auto dir = temp_dir();
  nlohmann::json first;
  for (const char* solver : {"cholmod", "umfpack", "klu", "ldlt", "lu"}) {
    const auto j = run_json(
        std::string("poisson gen:square-tri3:8 --neumann all=1 --source -4 --solver ") + solver, dir);
    ASSERT_FALSE(j.is_null()) << solver;
    EXPECT_EQ(j["solution"]["normalization"], "zero_mean");
    EXPECT_EQ(j["solution"]["null_space"], nlohmann::json::array({"constant"}));
    EXPECT_LT(j["solution"]["compatibility_defect"].get<double>(), 1e-12);
    EXPECT_LT(j["solve"]["relative_residual"].get<double>(), 1e-10);
    EXPECT_LT(j["solution"]["min"].get<double>(), 0.0);
    EXPECT_GT(j["solution"]["max"].get<double>(), 0.0);
    if (first.is_null()) first = j;
    EXPECT_NEAR(j["solution"]["min"].get<double>(), first["solution"]["min"].get<double>(), 1e-10) << solver;
    EXPECT_NEAR(j["solution"]["max"].get<double>(), first["solution"]["max"].get<double>(), 1e-10) << solver;
  }
  // The zero-mean solution converges: u = cos(πx)cos(πy) has zero mean and ∂u/∂n = 0.
  const std::string exact = " --source '2*pi^2*cos(pi*x)*cos(pi*y)' --exact 'cos(pi*x)*cos(pi*y)'";
  const auto coarse = run_json("poisson gen:square-tri3:16" + exact, dir),
             fine = run_json("poisson gen:square-tri3:32" + exact, dir);
  ASSERT_FALSE(coarse.is_null() || fine.is_null());
  EXPECT_NEAR(std::log2(coarse["error"]["l2"].get<double>() / fine["error"]["l2"].get<double>()), 2.0, 0.2);
  // An exact solution with its own mean is compared after normalizing u_h like it.
  const auto shifted = run_json(
      "poisson gen:square-tri3:32 --source '2*pi^2*cos(pi*x)*cos(pi*y)' "
      "--exact 'cos(pi*x)*cos(pi*y)+1'",
      dir);
  ASSERT_FALSE(shifted.is_null());
  EXPECT_NEAR(shifted["error"]["l2"].get<double>(), fine["error"]["l2"].get<double>(),
              0.2 * fine["error"]["l2"].get<double>());
  // Exactly balanced data pass a tolerance of 0 (rounding is not a defect).
  EXPECT_FALSE(
      run_json("poisson gen:square-tri3:8 --neumann all=1 --source -4 --compatibility-tolerance 0", dir)
          .is_null());
  // No solution: ∫f + ∫g = 4.
  const auto r = fem_run("poisson gen:square-tri3:8 --neumann all=1", dir);
  expect_one_line_naming(r, "∫f + ∫g");
  expect_one_line_naming(r, "--dirichlet");
  // A small defect is refused by default and solved as compatible within a looser tolerance.
  expect_one_line_naming(fem_run("poisson gen:square-tri3:8 --neumann all=1 --source -3.99", dir), "defect");
  const auto loose = run_json(
      "poisson gen:square-tri3:8 --neumann all=1 --source -3.99 --compatibility-tolerance 0.01", dir);
  ASSERT_FALSE(loose.is_null());
  EXPECT_GT(loose["solution"]["compatibility_defect"].get<double>(), 1e-4);
  fs::remove_all(dir);
}

TEST(FemPoisson, JsonReportsTheRelativeResidual) {
  const auto dir = temp_dir();
  for (const std::string& cmd :
       {poisson_quadratic(8, 1), std::string("heat gen:square-tri3:8 --dt 0.1 --steps 3 "
                                             "--dirichlet all=1")}) {
    const auto j = run_json(cmd, dir);
    ASSERT_FALSE(j.is_null()) << cmd;
    EXPECT_GE(j["solve"]["relative_residual"].get<double>(), 0.0) << cmd;
    EXPECT_LT(j["solve"]["relative_residual"].get<double>(), 1e-12) << cmd;
    EXPECT_EQ(j["solution"]["normalization"], "none") << cmd;
  }
  fs::remove_all(dir);
}

// Data given as expressions are checked at every point where they are evaluated: a NaN or an
// infinity, or a value outside the physical range, is a one-line error naming the option, the
// tag and the point, not a "singular matrix" or a file full of NaN.
TEST(FemSolvers, DataAreValidatedWhereTheyAreEvaluated) {
  const auto dir = temp_dir();
  const std::string p = "poisson gen:square-tri3:8 ";
  auto expect_named = [&](const std::string& args, std::initializer_list<const char*> names) {
    const auto r = fem_run(args, dir);
    for (const char* n : names) expect_one_line_naming(r, n);
    EXPECT_EQ(r.status, 1) << args;
  };
  expect_named(p + "--dirichlet 'left=log(y-0.5)' --dirichlet right=0",
               {"--dirichlet left", "NaN", "(x, y) = (0,"});
  expect_named(p + "--dirichlet all=0 --source '0/(x-x)'", {"--source", "NaN", "(x, y)"});
  expect_named(p + "--dirichlet left=0 --neumann 'right=sqrt(y-0.5)'",
               {"--neumann right", "NaN", "(x, y) = (1,"});
  expect_named(p + "--dirichlet 'all=sqrt(-1)'", {"--dirichlet all", "NaN"});
  expect_named(p + "--dirichlet all=0 --coefficient 'all=x-0.5'",
               {"--coefficient all", "must be positive", "(x, y)"});
  expect_named(p + "--dirichlet all=0 --coefficient all=0", {"--coefficient all", "must be positive"});
  expect_named(p + "--dirichlet all=0 --exact 'sqrt(x-0.5)'", {"--exact", "NaN"});
  const std::string e = "elasticity gen:square-tri3:8 --fixed left ";
  expect_named(e + "--nu 'all=0.6*x'", {"--nu all", "Poisson's ratio must lie in (-1, 0.5)", "(x, y)"});
  expect_named(e + "--E 'all=x-0.2'", {"--E all", "Young's modulus must be positive", "(x, y)"});
  expect_named(e + "--traction 'right=1,1/(y-y)'", {"--traction right (component 2)", "infinite"});
  const std::string h = "heat gen:square-tri3:8 --dt 0.1 --steps 3 --dirichlet all=0 ";
  expect_named(h + "--source '1/(t-0.2)'", {"--source", "infinite", "t = 0.2"});
  expect_named(h + "--initial 'sqrt(x-0.5)'", {"--initial", "NaN"});
  expect_named("nonlinear gen:square-tri3:8 --dirichlet 'all=log(x-0.5)'", {"--dirichlet all", "NaN"});
  fs::remove_all(dir);
}

// The small things a user trips over: ranges in words, one value per tag, no assignment hidden in
// an expression.
TEST(FemSolvers, OptionErrorsSayWhatIsWrongInWords) {
  const auto dir = temp_dir();
  auto expect_words = [&](const std::string& args, const char* option, const char* words) {
    const auto r = fem_run(args, dir);
    expect_one_line_naming(r, option);
    expect_one_line_naming(r, words);
    EXPECT_EQ(r.err.find("1797693"), std::string::npos) << r.err;  // not DBL_MAX spelled out
  };
  const std::string h = "heat gen:square-tri3:4 --dirichlet all=0 ";
  expect_words(h + "--dt 0.1 --steps 0", "--steps", "must be at least 1");
  expect_words(h + "--dt 0.1 --steps 2 --every -1", "--every", "must be at least 0");
  expect_words(h + "--dt -1 --steps 2", "--dt", "must be positive");
  expect_words(h + "--dt nan --steps 2", "--dt", "must be positive");
  expect_words("poisson gen:square-tri3:4 --dirichlet all=0 --threads -1", "--threads", "must be at least 0");
  for (const char* bad : {"nan", "-1", "inf"}) {
    expect_words(std::string("nonlinear gen:square-tri3:4 --rtol ") + bad, "--rtol", "must be at least 0");
    expect_words(std::string("nonlinear gen:square-tri3:4 --atol ") + bad, "--atol", "must be at least 0");
  }
  expect_words("nonlinear gen:square-tri3:4 --lag 0", "--lag", "must be at least 1");
  expect_words("nonlinear gen:square-tri3:4 --lambda nan", "--lambda", "finite");
  // One value per tag: given twice (also by name and by number) with different values.
  const std::string p = "poisson gen:square-tri3:4 ";
  expect_words(p + "--dirichlet left=1 --dirichlet left=2", "--dirichlet", "two values");
  expect_words(p + "--dirichlet left=1 --dirichlet 1=2", "--dirichlet", "two values");
  expect_words(p + "--dirichlet all=0 --neumann right=1 --neumann right=3", "--neumann", "two values");
  expect_words(p + "--dirichlet all=0 --coefficient all=1 --coefficient all=2", "--coefficient",
               "two values");
  expect_words("elasticity gen:square-tri3:4 --fixed left --traction right=1,0 --traction right=2,0",
               "--traction", "two values");
  EXPECT_FALSE(run_json(p + "--dirichlet left=1 --dirichlet left=1 --dirichlet right=0", dir).is_null());
  // An assignment inside an expression is no expression.
  for (const char* bad : {"x=5", "y+=1", "x*=2"})
    expect_words(p + "--dirichlet all=0 --source '" + bad + "'", "--source", "assigns");
  EXPECT_FALSE(run_json(p + "--dirichlet all=0 --source '(x==0.5)+(x<=2)+(x>=0)+(x!=1)'", dir).is_null());
  fs::remove_all(dir);
}

// A time step so large that M + dt·K loses its mass term to rounding is reported as the time
// step's (dt against the mesh), not as a singular matrix or data that need a Dirichlet condition;
// with a Dirichlet condition the same dt is the steady state, solved as usual.
TEST(FemHeat, ATimeStepThatDrownsTheMassTermIsNamed) {
  const auto dir = temp_dir();
  for (const std::string mesh : {"gen:square-tri3:8", "gen:cube-tet4:4 --solver lu"}) {
    for (const char* dt : {"1e12", "1e20"}) {
      const auto r = fem_run("heat " + mesh + " --dt " + dt + " --steps 2 --initial x --quiet", dir);
      EXPECT_EQ(r.status, 3) << mesh << " " << dt << "\n" << r.err;
      expect_one_line_naming(r, "the time step is too large for this mesh");
      expect_one_line_naming(r, "dt·k/h² ≈ ");
      expect_one_line_naming(r, "take a smaller --dt");
    }
  }
  const auto j = run_json("heat gen:square-tri3:8 --dt 1e20 --steps 2 --initial x --dirichlet left=1", dir);
  ASSERT_FALSE(j.is_null());
  EXPECT_NEAR(j["solution"]["min"].get<double>(), 1.0, 1e-9);  // the steady state u = 1
  EXPECT_NEAR(j["solution"]["max"].get<double>(), 1.0, 1e-9);
  fs::remove_all(dir);
}

// A scalar is one value: a comma list where one value belongs is refused naming the option and
// the count (muparser's comma operator would silently keep the last item); vector options keep
// their lists, and commas inside a function's parentheses are no list.
TEST(FemSolvers, ACommaListWhereOneValueBelongsIsRefused) {
  const auto dir = temp_dir();
  auto expect_refused = [&](const std::string& args, const char* option, int given) {
    const auto r = fem_run(args, dir);
    expect_one_line_naming(r, option);
    expect_one_line_naming(r, "expected 1 value");
    expect_one_line_naming(r, fmt::format("got {}", given));
    EXPECT_EQ(r.status, 1) << args;
  };
  const std::string p = "poisson gen:square-tri3:4 ";
  expect_refused(p + "--dirichlet all=0 --source '1,5'", "--source", 2);
  expect_refused(p + "--dirichlet all=0,1", "--dirichlet all", 2);
  expect_refused(p + "--dirichlet left=0 --neumann 'right=1,2,3'", "--neumann right", 3);
  expect_refused(p + "--dirichlet all=0 --coefficient all=1,1000", "--coefficient all", 2);
  expect_refused(p + "--dirichlet all=0 --exact 'x,y'", "--exact", 2);
  expect_refused("heat gen:square-tri3:4 --dt 0.1 --steps 1 --dirichlet all=0 --initial '0,1'", "--initial",
                 2);
  const std::string e = "elasticity gen:square-tri3:4 --fixed left ";
  expect_refused(e + "--E all=1,1000", "--E all", 2);
  expect_refused(e + "--nu all=0.3,0.1", "--nu all", 2);
  // Vector options take one value per component.
  EXPECT_FALSE(run_json(e + "--traction right=1,0 --body-force 0,-1 --E all=2", dir).is_null());
  EXPECT_FALSE(run_json(p + "--dirichlet 'all=min(x,y)' --source 'max(1, 2)'", dir).is_null());
  fs::remove_all(dir);
}

// fem heat takes --exact (errors at the final time) like the other subcommands: with dt ~ h²,
// backward Euler's O(dt) + O(h²) error quarters when h halves.
TEST(FemHeat, ExactSolutionErrorsAtTheFinalTime) {
  const auto dir = temp_dir();
  auto l2 = [&](int n) {
    std::ostringstream dt;
    dt.precision(17);
    dt << 0.2 / (n * n);
    const auto j = run_json("heat gen:square-tri3:" + std::to_string(n) + " --dt " + dt.str() + " --steps " +
                                std::to_string(n * n / 2) +
                                " --initial 'sin(pi*x)*sin(pi*y)' --dirichlet all=0 "
                                "--exact 'exp(-2*pi^2*t)*sin(pi*x)*sin(pi*y)'",
                            dir);
    EXPECT_FALSE(j.is_null());
    if (j.is_null()) return 1.0;
    EXPECT_NEAR(j["time"]["final"].get<double>(), 0.1, 1e-12);
    EXPECT_EQ(j["error"]["h1"], j["error"]["h1_seminorm"]);
    return j["error"]["l2"].get<double>();
  };
  EXPECT_NEAR(std::log2(l2(8) / l2(16)), 2.0, 0.3);
  fs::remove_all(dir);
}

TEST(FemSolvers, BadInputsAreOneLineErrors) {
  const auto dir = temp_dir();
  const fs::path mesh = fs::path(FEM_MESHES_DIR) / "plate_hole_v41.msh";
  if (fs::exists(mesh))
    expect_one_line_naming(fem_run("poisson '" + mesh.string() + "' --dirichlet holes=1", dir), "holes");
  expect_one_line_naming(fem_run("poisson gen:square-tri3:4 --dirichlet ceiling=1", dir), "ceiling");
  expect_one_line_naming(fem_run("poisson gen:square-tri3:4 --dirichlet all=0 --source 'sin(x'", dir),
                         "sin(x");
  expect_one_line_naming(fem_run("poisson gen:square-tri3:4 --dirichlet all=0 --exact 'q*x'", dir), "q*x");
  expect_one_line_naming(fem_run("heat gen:square-tri3:4 --dt 0.1 --steps 2 --initial 'x+'", dir), "x+");
  expect_one_line_naming(fem_run("nonlinear gen:square-tri3:4 --problem quasilinear --source 'exp('", dir),
                         "exp(");
  expect_one_line_naming(fem_run("poisson gen:square-tri3:4 --dirichlet 1", dir), "--dirichlet");
  fs::remove_all(dir);
}

}  // namespace
