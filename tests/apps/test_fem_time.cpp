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

TEST(FemHeatSchemes, RefusalsNameWhatIsWrong) {
  const auto dir = temp_dir();
  expect_one_line_naming(
      fem_run("heat gen:square-tri3:4 --dt 0.1 --steps 2 --scheme cn --coefficient all=1+t", dir),
      "--scheme cn");
  EXPECT_EQ(fem_run("heat gen:square-tri3:4 --dt 0.1 --steps 2 --scheme rk4", dir).status, 2);
  EXPECT_EQ(fem_run("heat gen:square-tri3:4 --dt 0.1 --steps 2 --scheme theta --theta 0.2", dir).status, 2);
}

}  // namespace
