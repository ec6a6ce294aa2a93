// fem heat's schemes through fem::time: Crank–Nicolson and BDF2 second order and backward Euler
// first order on a solution P1 represents exactly in space (every error is the scheme's), one
// matrix per step size in the counters, adaptive steps that meet their tolerance, and the
// refusals.
#include <gtest/gtest.h>

#include <cmath>

#include "cli.hpp"

namespace {

using fem::testing::expect_one_line_naming;
using fem::testing::fem_run;
using fem::testing::run_json;
using fem::testing::temp_dir;

const std::string problem =
    " --initial '1+x+2*y' --source '-(1+x+2*y)*exp(-t)' --dirichlet 'all=(1+x+2*y)*exp(-t)' --exact "
    "'(1+x+2*y)*exp(-t)' -q";

double l2_error(const std::string& scheme, double dt, int steps, const std::filesystem::path& dir) {
  const auto j = run_json("heat gen:square-tri3:8 --scheme " + scheme + " --dt " + std::to_string(dt) +
                              " --steps " + std::to_string(steps) + problem,
                          dir);
  return j.is_null() ? NAN : j["error"]["l2"].get<double>();
}

TEST(FemHeatSchemes, ObservedTemporalOrders) {
  const auto dir = temp_dir();
  for (const auto& [scheme, order] : {std::pair{"be", 1.0}, std::pair{"cn", 2.0}, std::pair{"bdf2", 2.0}}) {
    const double e1 = l2_error(scheme, 0.1, 10, dir), e2 = l2_error(scheme, 0.05, 20, dir);
    EXPECT_NEAR(std::log2(e1 / e2), order, 0.15) << scheme;
  }
}

TEST(FemHeatSchemes, OneMatrixPerStepSize) {
  const auto dir = temp_dir();
  const auto cn =
      run_json("heat gen:square-tri3:8 --scheme cn --rannacher 2 --dt 0.05 --steps 20" + problem, dir);
  EXPECT_EQ(cn["time"]["scheme"], "crank-nicolson");
  EXPECT_EQ(cn["time"]["accepted"], 20);
  EXPECT_EQ(cn["cache"]["factorizations"], 1);  // Rannacher's half steps share CN's matrix
  const auto bdf = run_json("heat gen:square-tri3:8 --scheme bdf2 --dt 0.05 --steps 20" + problem, dir);
  EXPECT_EQ(bdf["cache"]["factorizations"], 2);  // and its backward-Euler start
  const auto adaptive =
      run_json("heat gen:square-tri3:8 --scheme cn --dt 0.8 --steps 2 --adaptive 1e-5" + problem, dir);
  EXPECT_GT(adaptive["time"]["rejected"].get<int>(), 0);
  EXPECT_NEAR(adaptive["time"]["final"].get<double>(), 1.6, 1e-12);
  EXPECT_LT(adaptive["error"]["l2"].get<double>(), 1e-3);
  const double ratio = adaptive["time"]["dt_max"].get<double>() / adaptive["time"]["dt_min"].get<double>();
  EXPECT_NEAR(std::log2(ratio), std::round(std::log2(ratio)), 1e-9) << "steps on a ladder dt·2^k";
}

// k(u) = 1 + u² on the same u: f = −u (1 + 10 e^{−2t}). Each step by Newton, its Jacobian lagged
// across steps; Crank–Nicolson keeps order 2. A constant law is the linear run.
TEST(FemHeatSchemes, AConductivityInUIsSolvedByNewtonAndKeepsTheOrder) {
  const auto dir = temp_dir();
  const std::string nonlinear =
      " --initial '1+x+2*y' --source '-(1+x+2*y)*exp(-t)*(1+10*exp(-2*t))' --dirichlet "
      "'all=(1+x+2*y)*exp(-t)' "
      "--exact '(1+x+2*y)*exp(-t)' --conductivity-law '1+u^2' -q";
  const auto run = [&](double dt, int steps) {
    return run_json("heat gen:square-tri3:8 --scheme cn --dt " + std::to_string(dt) + " --steps " +
                        std::to_string(steps) + nonlinear,
                    dir);
  };
  const auto coarse = run(0.1, 10), fine = run(0.05, 20);
  EXPECT_NEAR(std::log2(coarse["error"]["l2"].get<double>() / fine["error"]["l2"].get<double>()), 2.0, 0.15);
  EXPECT_EQ(fine["newton"]["failed_steps"], 0);
  EXPECT_GE(fine["newton"]["iterations"].get<int>(), 20);
  EXPECT_LT(fine["newton"]["jacobian_refreshes"].get<int>(), 20);  // lagged across steps
  EXPECT_EQ(fine["cache"]["symbolic_analyses"], 1);
  EXPECT_EQ(fine["cache"]["factorizations"], fine["newton"]["jacobian_refreshes"]);

  const std::string heat = "heat gen:square-tri3:8 --dt 0.05 --steps 4 --initial 'sin(pi*x)*sin(pi*y)' -q ";
  const auto linear = run_json(heat + "--coefficient all=2", dir),
             law = run_json(heat + "--conductivity-law 2", dir);
  EXPECT_NEAR(law["solution"]["max"].get<double>(), linear["solution"]["max"].get<double>(), 1e-9);
  expect_one_line_naming(fem_run(heat + "--conductivity-law '1+x'", dir), "--conductivity-law");
  expect_one_line_naming(fem_run(heat + "--conductivity-law 'u-10'", dir), "--conductivity-law");
  expect_one_line_naming(fem_run(heat + "--conductivity-law 2 --coefficient all=1", dir), "--coefficient");
}

TEST(FemHeatSchemes, ACoefficientInTimeAndTheRefusals) {
  const auto dir = temp_dir();
  // A k in t: every scheme, a new matrix (a refactorization) every step.
  const auto kt =
      run_json("heat gen:square-tri3:4 --dt 0.1 --steps 4 --scheme cn --coefficient all=1+t -q", dir);
  EXPECT_EQ(kt["cache"]["factorizations"], 4);
  EXPECT_EQ(kt["cache"]["symbolic_analyses"], 1);
  expect_one_line_naming(fem_run("heat gen:square-tri3:4 --dt 0.1 --steps 2 --probe 1", dir), "--probe");
  EXPECT_EQ(fem_run("heat gen:square-tri3:4 --dt 0.1 --steps 2 --scheme rk4", dir).status, 2);
  EXPECT_EQ(fem_run("heat gen:square-tri3:4 --dt 0.1 --steps 2 --scheme theta --theta 0.2", dir).status, 2);
}

}  // namespace

namespace {

// --adaptive: a load pulse at t = 1 makes the steps shrink and grow again on the ladder dt·2^k,
// one factorization per step size (and the initial acceleration's), ending at steps·dt.
TEST(FemDynamics, AdaptiveStepsFollowALoadPulse) {
  const auto dir = fem::testing::temp_dir();
  const auto j =
      fem::testing::run_json("dynamics " + std::string(FEM_MESHES_DIR) +
                                 "/beam_v41.msh --fixed left --plane stress --traction "
                                 "'right=0,-exp(-((t-1)/0.3)^2)' --dt 0.2 --steps 20 --adaptive 1e-3 -q",
                             dir);
  EXPECT_GT(j["time"]["rejected"].get<int>(), 0);
  EXPECT_GT(j["time"]["accepted"].get<int>(), 20);
  EXPECT_NEAR(j["time"]["final"].get<double>(), 4.0, 1e-12);
  const double ratio = j["time"]["dt_max"].get<double>() / j["time"]["dt_min"].get<double>();
  EXPECT_GE(ratio, 2.0);
  EXPECT_NEAR(std::log2(ratio), std::round(std::log2(ratio)), 1e-9) << "steps on a ladder dt·2^k";
  EXPECT_LE(j["cache"]["factorizations"].get<int>(),
            1 + 1 + static_cast<int>(std::round(std::log2(ratio))) + 2);
  EXPECT_EQ(j["energy"]["times"].size(), static_cast<std::size_t>(j["time"]["accepted"].get<int>()) + 1);
}

// A slender cantilever (meshes/beam_v41.msh, 10 × 1, clamped on the left, plane stress) released
// from its static tip-load deflection, close to its first mode: the tip's period is 2π/ω₁ with
// ω₁² the first eigenvalue of `fem modes` on the same mesh.
TEST(FemDynamics, ACantileversPeriodIsTheFirstModes) {
  const auto dir = fem::testing::temp_dir();
  const std::string mesh = std::string(FEM_MESHES_DIR) + "/beam_v41.msh --fixed left --plane stress";
  const auto modes = fem::testing::run_json("modes " + mesh + " --problem elasticity --count 1 -q", dir);
  const double period = 2 * M_PI / std::sqrt(modes["eigenvalues"][0].get<double>());
  const double dt = period / 400;
  const auto j =
      fem::testing::run_json("dynamics " + mesh + " --initial-displacement '0,1e-4*x^2*(30-x)' --dt " +
                                 std::to_string(dt) + " --steps 2400 --probe 10,1 -q",
                             dir);
  ASSERT_FALSE(j.is_null());
  const auto t = j["probes"][0]["times"].get<std::vector<double>>();
  const auto v = j["probes"][0]["values"].get<std::vector<std::vector<double>>>();
  // Zero crossings of the tip's vertical displacement, each counted once: the higher modes'
  // ripple near zero is skipped until the swing is back above a third of its amplitude.
  std::vector<double> crossings;
  const double armed_above = std::abs(v[0][1]) / 3;
  bool armed = true;
  for (std::size_t i = 1; i < t.size(); ++i) {
    if (std::abs(v[i][1]) > armed_above) armed = true;
    if (armed && (v[i - 1][1] < 0) != (v[i][1] < 0)) {
      crossings.push_back(t[i - 1] + (t[i] - t[i - 1]) * v[i - 1][1] / (v[i - 1][1] - v[i][1]));
      armed = false;
    }
  }
  ASSERT_GE(crossings.size(), 8u);
  const double measured =
      2 * (crossings.back() - crossings.front()) / static_cast<double>(crossings.size() - 1);
  EXPECT_NEAR(measured, period, 0.01 * period);
  // Average acceleration, no damping: the energy stays.
  const auto kinetic = j["energy"]["kinetic"].get<std::vector<double>>();
  const auto strain = j["energy"]["strain"].get<std::vector<double>>();
  EXPECT_NEAR(kinetic.back() + strain.back(), kinetic.front() + strain.front(), 1e-10 * strain.front());
  EXPECT_EQ(j["cache"]["factorizations"], 2);  // M (the initial acceleration) and the step's matrix
}

TEST(FemDynamics, GeneralizedAlphaDampsAndRefusalsAreInWords) {
  const auto dir = fem::testing::temp_dir();
  const auto j = fem::testing::run_json(
      "dynamics gen:square-tri3:6 --fixed left --initial-velocity 0,x --scheme galpha --rho-inf 0 --dt 0.5 "
      "--steps 40 -q",
      dir);
  const auto kinetic = j["energy"]["kinetic"].get<std::vector<double>>();
  const auto strain = j["energy"]["strain"].get<std::vector<double>>();
  EXPECT_LT(kinetic.back() + strain.back(), 0.9 * kinetic.front());  // ρ∞ = 0 dissipates
  EXPECT_EQ(j["time"]["scheme"], "generalized-alpha");
  fem::testing::expect_one_line_naming(
      fem::testing::fem_run("dynamics gen:square-tri3:4 --dt 0.1 --steps 2 --probe 1", dir), "--probe");
  fem::testing::expect_one_line_naming(
      fem::testing::fem_run("dynamics gen:square-tri3:4 --dt 0.1 --steps 2 --rayleigh 1", dir), "--rayleigh");
}

}  // namespace
