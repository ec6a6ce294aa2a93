// The semantics of the drivers' words (docs/semantics.md) end to end, on meshes made by Gmsh
// (meshes/groups.geo: cells and facets in two groups, an interior interface, an untagged side),
// and time in fem heat: every datum at the time of its step.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "cli.hpp"

namespace {

using fem::testing::fem_run;
using fem::testing::run_json;
using fem::testing::temp_dir;

const std::string v22 = FEM_MESHES_DIR "/groups_v22.msh", v41 = FEM_MESHES_DIR "/groups_v41.msh";

TEST(FemSemantics, InfoCountsTheMembersOfEachGroup) {
  const auto dir = temp_dir();
  for (const auto& mesh : {v22, v41}) {
    const auto j = run_json("info " + mesh, dir);
    ASSERT_FALSE(j.is_null());
    EXPECT_EQ(j["cells"], 168) << mesh;  // not 336: an element in two groups is one element
    for (const auto& t : j["tags"]) {
      if (t["name"] == "plate") EXPECT_EQ(t["count"], 168);
      if (t["name"] == "plate") EXPECT_EQ(t["shared"], 168);
      if (t["name"] == "clamped") EXPECT_EQ(t["shared"], 4);
      if (t["name"] == "left") EXPECT_EQ(t["shared"], 0);
    }
  }
}

TEST(FemSemantics, BothGmshFormatsGiveOneAnswer) {
  // A flux on the whole boundary (the untagged side too, the interface not), materials by group.
  const auto dir = temp_dir();
  const std::string args =
      " --dirichlet left=0 --neumann all=1 --coefficient soft=1 --coefficient hard=2 --source 1";
  const auto a = run_json("poisson " + v22 + args, dir), b = run_json("poisson " + v41 + args, dir);
  ASSERT_FALSE(a.is_null());
  ASSERT_FALSE(b.is_null());
  EXPECT_NEAR(a["solution"]["max"].get<double>(), b["solution"]["max"].get<double>(), 1e-12);
  // 'plate' is every cell: k = 2 there is k = 2 everywhere, the maximum halves against k = 1.
  const auto one = run_json("poisson " + v22 + " --dirichlet left=0 --source 1", dir),
             two = run_json("poisson " + v22 + " --dirichlet left=0 --source 1 --coefficient plate=2", dir);
  EXPECT_NEAR(two["solution"]["max"].get<double>(), one["solution"]["max"].get<double>() / 2, 1e-12);
}

TEST(FemSemantics, PrecedenceIsOneRuleWhateverTheOrder) {
  const auto dir = temp_dir();
  const auto a = run_json("poisson " + v41 + " --dirichlet left=1 --dirichlet all=0", dir),
             b = run_json("poisson " + v41 + " --dirichlet all=0 --dirichlet left=1", dir);
  ASSERT_FALSE(a.is_null());
  EXPECT_EQ(a["solution"]["max"], 1.0);  // left = 1 kept, not dropped by the later `all`
  EXPECT_EQ(a["solution"], b["solution"]);
  // Two tags that meet with two values: refused, naming both (exit 1, an input error).
  const auto c = fem_run("poisson " + v41 + " --dirichlet left=1 --dirichlet bottom=0", dir);
  EXPECT_EQ(c.status, 1);
  EXPECT_NE(c.err.find("'left'"), std::string::npos) << c.err;
  EXPECT_NE(c.err.find("'bottom'"), std::string::npos) << c.err;
  const auto n =
      fem_run("poisson " + v41 + " --dirichlet left=0 --neumann bottom=1 --neumann clamped=2", dir);
  EXPECT_EQ(n.status, 1);
  EXPECT_NE(n.err.find("'clamped'"), std::string::npos) << n.err;
}

TEST(FemSemantics, TagsMustMatchSomethingOfTheirDimension) {
  const auto dir = temp_dir();
  const auto k = fem_run("poisson " + v41 + " --dirichlet left=0 --coefficient 7=2", dir);
  EXPECT_EQ(k.status, 1);
  EXPECT_NE(k.err.find("7"), std::string::npos) << k.err;
  EXPECT_NE(k.err.find("'soft'"), std::string::npos) << k.err;  // the cell tags present
  const auto e = fem_run("elasticity " + v41 + " --fixed left --E 99=5", dir);
  EXPECT_EQ(e.status, 1);
  EXPECT_NE(e.err.find("99"), std::string::npos) << e.err;
  const auto i = fem_run("poisson " + v41 + " --dirichlet left=0 --neumann interface=1", dir);
  EXPECT_EQ(i.status, 1);
  EXPECT_NE(i.err.find("interior"), std::string::npos) << i.err;
}

TEST(FemSemantics, TimeIsDefinedWhereThereIsTime) {
  const auto dir = temp_dir();
  for (const std::string& option : {"--source 'sin(t)'", "--dirichlet all=t", "--coefficient all=1+t"}) {
    const auto r = fem_run("poisson gen:square-tri3:4 --dirichlet left=0 " + option, dir);
    EXPECT_EQ(r.status, 1) << option;
    EXPECT_NE(r.err.find("no time"), std::string::npos) << r.err;
  }
}

TEST(FemHeat, EveryDatumIsEvaluatedAtTheTimeOfItsStep) {
  const auto dir = temp_dir();
  // u = t: backward Euler is exact for data linear in t, whatever enters in t.
  const auto d =
      run_json("heat gen:square-tri3:8 --dt 0.1 --steps 5 --source 1 --dirichlet all=t --exact t", dir);
  ASSERT_FALSE(d.is_null());
  EXPECT_LT(d["error"]["l2"].get<double>(), 1e-12);
  // u = x t: Neumann data in t (k du/dn = ±t on the right and left sides).
  const auto n = run_json(
      "heat gen:square-tri3:8 --dt 0.1 --steps 5 --source x --neumann right=t --neumann left=-t "
      "--dirichlet top=x*t --dirichlet bottom=x*t --exact x*t",
      dir);
  ASSERT_FALSE(n.is_null());
  EXPECT_LT(n["error"]["l2"].get<double>(), 1e-12);
  EXPECT_EQ(n["cache"]["factorizations"], 1);  // the matrix does not change
  // u = x² t with k = 1 + t: f = x² - 2 t (1 + t). A k in t is a new matrix every step:
  // refactorized (the counters say so) on one symbolic analysis.
  const std::string k_args =
      "heat gen:square-tri3:16 --dt 0.05 --steps 8 --source 'x^2-2*t*(1+t)' --dirichlet all=x^2*t "
      "--exact x^2*t --coefficient ";
  const auto k = run_json(k_args + "all=1+t", dir);
  ASSERT_FALSE(k.is_null());
  EXPECT_EQ(k["cache"]["factorizations"], 8);
  EXPECT_EQ(k["cache"]["symbolic_analyses"], 1);
  // The same data with k frozen at t = 0 is a different problem: its error is far larger.
  const auto frozen = run_json(k_args + "all=1", dir);
  EXPECT_GT(frozen["error"]["l2"].get<double>(), 20 * k["error"]["l2"].get<double>());
}

}  // namespace
