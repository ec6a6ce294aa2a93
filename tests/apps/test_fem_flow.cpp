// fem stokes and fem navier-stokes: Poiseuille flow exact through the driver, the DFG benchmark
// 2D-1 (Schäfer & Turek 1996) within 1 % of its reference drag, lift and pressure difference on
// meshes/dfg_cylinder_v41.msh, the projection scheme's factorizations made once, and the refusals.
#include <gtest/gtest.h>

#include <cmath>

#include "cli.hpp"

namespace {

using fem::testing::expect_one_line_naming;
using fem::testing::fem_run;
using fem::testing::run_json;
using fem::testing::temp_dir;

TEST(FemFlow, StokesPoiseuilleIsExact) {
  const auto dir = temp_dir();
  const auto j = run_json(
      "stokes gen:square-quad4:4 --viscosity 0.5 --velocity all='y*(1-y)',0 --exact 'y*(1-y)',0 "
      "--exact-pressure '-x' --probe 0.3,0.4 --flux right -q",
      dir);
  // The probe: u = y(1 − y), v = 0 and the zero-mean p = −(x − ½), interpolated between the nodes.
  const auto probe = j["probes"][0]["values"][0];
  ASSERT_EQ(probe.size(), 3u);
  EXPECT_NEAR(probe[0].get<double>(), 0.24, 1e-12);
  EXPECT_NEAR(probe[1].get<double>(), 0.0, 1e-12);
  EXPECT_NEAR(probe[2].get<double>(), 0.2, 1e-11);
  EXPECT_NEAR(j["flow"]["flux"].get<double>(), 1.0 / 6, 1e-12);  // ∫ y(1 − y) dy
  EXPECT_LT(j["error"]["l2"].get<double>(), 1e-12);
  EXPECT_LT(j["pressure_error"]["l2"].get<double>(), 1e-11);
  EXPECT_EQ(j["solution"]["normalization"], "zero_mean_pressure");
  EXPECT_EQ(j["space"]["velocity"], "Q2x2");
  EXPECT_EQ(j["newton"]["iterations"], 1);  // linear: one solve
}

// A traction outflow: μ∂u/∂n − p n = (1, 0) at x = 1 fixes p(1) = −1, so p = −x for μ = ½.
TEST(FemFlow, ATractionFixesThePressure) {
  const auto dir = temp_dir();
  const auto j = run_json(
      "stokes gen:square-tri3:4 --viscosity 0.5 --velocity left='y*(1-y)',0 --velocity top=0,0 --velocity "
      "bottom=0,0 --traction right=1,0 --exact 'y*(1-y)',0 --exact-pressure '-x' -q",
      dir);
  EXPECT_EQ(j["solution"]["normalization"], "outflow");
  EXPECT_LT(j["error"]["l2"].get<double>(), 1e-12);
  EXPECT_LT(j["pressure_error"]["l2"].get<double>(), 1e-11);
  expect_one_line_naming(
      fem_run(
          "navier-stokes gen:square-tri3:4 --velocity left=1,0 --traction 'right=t,0' --dt 0.1 --steps 1 -q",
          dir),
      "--traction");
}

// DFG 2D-1: U_max = 0.3, ν = 10⁻³, a cylinder of diameter 0.1: c_D = 2F_x/(Ū²D) = 500 F_x with
// Ū = 0.2, likewise c_L; the references are 5.57953523384, 0.010618948146 and Δp = 0.11752016697.
TEST(FemFlow, DfgBenchmark2D1WithinOnePercent) {
  const auto dir = temp_dir();
  const auto j =
      run_json("navier-stokes " + std::string(FEM_MESHES_DIR) +
                   "/dfg_cylinder_v41.msh --viscosity 1e-3 --velocity "
                   "'inlet=4*0.3*y*(0.41-y)/0.41^2,0' --velocity walls=0,0 --velocity cylinder=0,0 "
                   "--outflow outlet --drag cylinder --pressure-difference 0.15,0.2:0.25,0.2 -q",
               dir);
  ASSERT_TRUE(j["newton"]["converged"].get<bool>());
  EXPECT_EQ(j["cache"]["symbolic_analyses"], 1);  // Picard's and Newton's Jacobians
  EXPECT_NEAR(500 * j["flow"]["drag"].get<double>(), 5.57953523384, 0.01 * 5.57953523384);
  EXPECT_NEAR(500 * j["flow"]["lift"].get<double>(), 0.010618948146, 0.05 * 0.010618948146);
  EXPECT_NEAR(j["flow"]["pressure_difference"].get<double>(), 0.11752016697, 0.01 * 0.11752016697);
}

TEST(FemFlow, TheProjectionSchemeFactorizesItsMatricesOnce) {
  const auto dir = temp_dir();
  const auto j = run_json(
      "navier-stokes gen:square-tri3:8 --velocity left='4*y*(1-y)',0 --velocity top=0,0 --velocity "
      "bottom=0,0 "
      "--outflow right --dt 0.02 --steps 25 --drag bottom -q",
      dir);
  EXPECT_EQ(j["time"]["steps"], 25);
  EXPECT_EQ(j["time"]["matrices"], 3);
  EXPECT_EQ(j["flow"]["factorizations_in_steps"], 0);
  EXPECT_EQ(j["cache"]["factorizations"], 3);
  EXPECT_EQ(j["flow"]["drag"].size(), 25u);
  EXPECT_EQ(j["flow"]["times"].size(), 25u);
}

// fem elasticity --formulation up at ν = 0.4999 on the annulus with a Lamé displacement on its
// whole boundary: displacement-only P1 locks (and says so), P2 still does a little, u–p does not.
// --scheme bdf2: the same channel by BDF2 + Newton, every Jacobian on one symbolic analysis and
// lagged across steps (far fewer Jacobians than steps); it ends near the projection scheme's flow.
TEST(FemFlow, MonolithicBdf2LagsItsJacobians) {
  const auto dir = temp_dir();
  const std::string channel =
      "navier-stokes gen:square-tri3:8 --velocity left='4*y*(1-y)',0 --velocity top=0,0 --velocity "
      "bottom=0,0 "
      "--outflow right --dt 0.02 --steps 25 -q ";
  const auto bdf2 = run_json(channel + "--scheme bdf2", dir), ipcs = run_json(channel, dir);
  EXPECT_EQ(bdf2["time"]["scheme"], "bdf2");
  EXPECT_EQ(bdf2["cache"]["symbolic_analyses"], 1);
  EXPECT_LT(bdf2["time"]["jacobian_refreshes"].get<int>(), 10);
  EXPECT_EQ(bdf2["time"]["failed_steps"], 0);
  EXPECT_NEAR(bdf2["solution"]["max_speed"].get<double>(), ipcs["solution"]["max_speed"].get<double>(), 0.02);
}

TEST(FemFlow, UpElasticityDoesNotLock) {
  const auto dir = temp_dir();
  const std::string u = "0.5*(0.0002+4/(x^2+y^2))*x,0.5*(0.0002+4/(x^2+y^2))*y";
  const std::string run = "elasticity " + std::string(FEM_MESHES_DIR) +
                          "/annulus_v41.msh --nu all=0.4999 --dirichlet 'all=" + u + "' --exact '" + u +
                          "' -q ";
  const auto p1 = run_json(run, dir), p2 = run_json(run + "--order 2", dir),
             up = run_json(run + "--formulation up", dir);
  EXPECT_EQ(p1["warnings"].size(), 1u);  // the locking warning
  EXPECT_EQ(up["formulation"], "up");
  EXPECT_TRUE(up["warnings"].empty());
  EXPECT_LT(up["error"]["l2"].get<double>(), p1["error"]["l2"].get<double>() / 100);
  EXPECT_LT(up["error"]["l2"].get<double>(), p2["error"]["l2"].get<double>() / 5);
  // p = −λ div u with div u = 2C(1 − 2ν) > 0: negative (its rate is
  // TaylorHood.UpElasticityConvergesWhereP1Locks').
  EXPECT_LT(up["pressure"]["max"].get<double>(), 0.0);
}

TEST(FemFlow, Refusals) {
  const auto dir = temp_dir();
  expect_one_line_naming(fem_run("stokes gen:square-tri3:4 -q", dir), "--velocity");
  expect_one_line_naming(fem_run("stokes gen:square-tri3:4 --velocity all=0 -q", dir), "--velocity all");
  expect_one_line_naming(fem_run("navier-stokes gen:square-tri3:4 --velocity all=0,0 --dt 0.1 -q", dir),
                         "--steps");
  expect_one_line_naming(fem_run("stokes gen:square-tri3:4 --velocity all=0,0 --drag nowhere -q", dir),
                         "--drag");
  expect_one_line_naming(
      fem_run("stokes " + std::string(FEM_MESHES_DIR) + "/annulus_p2_v41.msh --velocity all=0,0 -q", dir),
      "Taylor–Hood");
  EXPECT_EQ(fem_run("stokes gen:square-tri3:4 --velocity all=0,0 --dt 0.1 --steps 2 -q", dir).status, 2);
}

}  // namespace
