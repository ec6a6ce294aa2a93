// --probe of fem heat and fem dynamics: the field interpolated in the cell that holds the point
// (assembly::PointEvaluator), not the value at the nearest node: fields the space holds exactly
// come back exactly at points between the nodes, every component of a displacement; a point
// outside the mesh is one line naming it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli.hpp"

namespace {

using fem::testing::expect_one_line_naming;
using fem::testing::fem_run;
using fem::testing::run_json;
using fem::testing::temp_dir;

using Values = std::vector<std::vector<double>>;

// u = x is the steady solution with u = 0 on the left and 1 on the right: at (0.3, 0.4), between
// the nodes of a mesh of h = 1/4 (the nearest node has x = 0.25), every recorded value is 0.3.
TEST(FemHeat, ProbeInterpolatesInTheCellThatHoldsThePoint) {
  const auto dir = temp_dir();
  const auto j = run_json(
      "heat gen:square-tri3:4 --dirichlet left=0 --dirichlet right=1 --initial x --dt 1 --steps 2 "
      "--probe 0.3,0.4 --probe 1,1 -q",
      dir);
  ASSERT_FALSE(j.is_null());
  ASSERT_EQ(j["probes"].size(), 2u);
  const auto& p = j["probes"][0];
  EXPECT_EQ(p.size(), 3u) << p.dump();  // point, times, values
  EXPECT_EQ(p["point"].get<std::vector<double>>(), (std::vector<double>{0.3, 0.4}));
  EXPECT_EQ(p["times"].get<std::vector<double>>(), (std::vector<double>{0, 1, 2}));
  for (const auto& v : p["values"].get<Values>()) {
    ASSERT_EQ(v.size(), 1u);
    EXPECT_NEAR(v[0], 0.3, 1e-12);
  }
  for (const auto& v : j["probes"][1]["values"].get<Values>()) EXPECT_NEAR(v[0], 1.0, 1e-12);  // a corner
}

// The initial data at t = 0, on P2 (quadratic) and Q1 (bilinear) spaces that hold them exactly.
TEST(FemHeat, ProbeIsExactForWhatP2AndQ1Hold) {
  const auto dir = temp_dir();
  const auto p2 = run_json(
      "heat gen:square-tri3:3 --order 2 --initial 'x*x+x*y-y*y' --dt 1e-3 --steps 1 --probe 0.3,0.4 -q", dir);
  ASSERT_FALSE(p2.is_null());
  EXPECT_NEAR(p2["probes"][0]["values"][0][0].get<double>(), 0.09 + 0.12 - 0.16, 1e-12);
  const auto q1 =
      run_json("heat gen:square-quad4:3 --initial 'x*y' --dt 1e-3 --steps 1 --probe 0.3,0.4 -q", dir);
  ASSERT_FALSE(q1.is_null());
  EXPECT_NEAR(q1["probes"][0]["values"][0][0].get<double>(), 0.12, 1e-12);
}

// Every component of the displacement, in the space's layout: (0.1 x, 0.2 x y) on Q1 at t = 0.
TEST(FemDynamics, ProbeGivesEveryComponentInterpolated) {
  const auto dir = temp_dir();
  const auto j = run_json(
      "dynamics gen:square-quad4:4 --fixed left --initial-displacement '0.1*x,0.2*x*y' --dt 0.1 --steps 1 "
      "--probe 0.3,0.4 -q",
      dir);
  ASSERT_FALSE(j.is_null());
  const auto v = j["probes"][0]["values"].get<Values>();
  ASSERT_EQ(v.size(), 2u);
  ASSERT_EQ(v[0].size(), 2u);
  EXPECT_NEAR(v[0][0], 0.03, 1e-12);
  EXPECT_NEAR(v[0][1], 0.024, 1e-12);
}

TEST(FemDynamics, AProbeOutsideTheMeshIsOneLineNamingIt) {
  const auto dir = temp_dir();
  const auto heat = fem_run("heat gen:square-tri3:4 --dt 0.1 --steps 2 --probe 1.5,0.5", dir);
  expect_one_line_naming(heat, "--probe '1.5,0.5'");
  EXPECT_NE(heat.err.find("lies in no cell"), std::string::npos) << heat.err;
  expect_one_line_naming(fem_run("dynamics gen:square-tri3:4 --dt 0.1 --steps 2 --probe 0.5,-0.1", dir),
                         "--probe '0.5,-0.1'");
}

}  // namespace
