// fem modes: the JSON contract on problems with known answers (the unit square's Dirichlet
// Laplacian, its double eigenvalues twice), the Sturm count of a range and the modes missing
// from it, elasticity's frequencies and effective masses (every mode of a small model carries
// all of the free mass), the .pvd frames, and the refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "cli.hpp"

namespace {

using fem::testing::expect_one_line_naming;
using fem::testing::fem_run;
using fem::testing::run_json;
using fem::testing::temp_dir;
constexpr double pi2 = std::numbers::pi * std::numbers::pi;

TEST(FemModes, TheSquaresDirichletLaplacianWithItsDoubleEigenvalues) {
  const auto dir = temp_dir();
  const auto j = run_json(
      "modes gen:square-quad4:32 --count 6 --dirichlet all=0 --output " + (dir / "m.pvd").string() + " -q",
      dir);
  ASSERT_EQ(j["modes"], 6);
  const auto l = j["eigenvalues"].get<std::vector<double>>();
  const double exact[] = {2, 5, 5, 8, 10, 10};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(l[i], exact[i] * pi2, 0.02 * exact[i] * pi2) << i;
  for (int i = 1; i < 6; ++i) EXPECT_LE(l[i - 1], l[i]);
  EXPECT_NEAR(l[1], l[2], 1e-9 * l[1]);  // (1,2) and (2,1): twice
  EXPECT_TRUE(j["eigen"]["converged"].get<bool>());
  EXPECT_LT(j["eigen"]["orthogonality_max"].get<double>(), 1e-10);
  EXPECT_LT(j["eigen"]["residual_max"].get<double>(), 1e-8);
  EXPECT_EQ(j["frames"], 6);
  EXPECT_TRUE(std::filesystem::exists(dir / "m.pvd"));
  EXPECT_GE(j["cache"]["solves"].get<int>(), 6);
  EXPECT_FALSE(j.contains("frequencies"));  // laplace: eigenvalues only
}

TEST(FemModes, ARangeReportsItsSturmCountAndTheModesNotComputed) {
  const auto dir = temp_dir();
  // (·π²) 5, 5, 8, 10, 10, 13, 13 lie in [40, 140].
  const auto all = run_json("modes gen:square-quad4:32 --count 20 --range 40:140 --dirichlet all=0 -q", dir);
  EXPECT_EQ(all["eigen"]["sturm_count"], 7);
  EXPECT_EQ(all["modes"], 7);
  EXPECT_EQ(all["eigen"]["missing"], 0);
  const auto few = run_json("modes gen:square-quad4:32 --count 3 --range 40:140 --dirichlet all=0 -q", dir);
  EXPECT_EQ(few["modes"], 3);
  EXPECT_EQ(few["eigen"]["missing"], 4);
  ASSERT_FALSE(few["warnings"].empty());
  EXPECT_NE(few["warnings"][0].get<std::string>().find("holds 7 eigenvalues"), std::string::npos);
  // The lowest three of the range.
  const auto l = few["eigenvalues"].get<std::vector<double>>();
  EXPECT_NEAR(l[2], 8 * pi2, 0.02 * 8 * pi2);
}

TEST(FemModes, ElasticityFrequenciesAndEffectiveMassesThatAddUpToTheFreeMass) {
  const auto dir = temp_dir();
  // 25 nodes, 5 clamped: 40 free unknowns, every mode computed.
  const auto j = run_json(
      "modes gen:square-tri3:4 --problem elasticity --fixed left --count 40 --E all=210 --density all=7.8 -q",
      dir);
  ASSERT_EQ(j["modes"], 40);
  const auto l = j["eigenvalues"].get<std::vector<double>>();
  const auto f = j["frequencies"].get<std::vector<double>>();
  for (int i = 0; i < 40; ++i) EXPECT_NEAR(f[i], std::sqrt(l[i]) / (2 * std::numbers::pi), 1e-12 * f[i]);
  for (const char* axis : {"x", "y"})
    EXPECT_NEAR(j["effective_mass"]["cumulative_share"][axis].get<double>(), 1.0, 1e-10) << axis;
  // Mass = ρ × area: the free mass is a part of 7.8.
  EXPECT_LT(j["effective_mass"]["total"]["x"].get<double>(), 7.8);
}

TEST(FemModes, WithoutDirichletDataTheConstantModeComesFirst) {
  const auto dir = temp_dir();
  const auto j = run_json("modes gen:square-tri3:16 --count 3 -q", dir);
  EXPECT_NEAR(j["eigenvalues"][0].get<double>(), 0.0, 1e-8);
  ASSERT_FALSE(j["warnings"].empty());
  EXPECT_NE(j["warnings"].back().get<std::string>().find("constant mode"), std::string::npos);
}

TEST(FemModes, RefusalsNameWhatIsWrong) {
  const auto dir = temp_dir();
  expect_one_line_naming(fem_run("modes gen:square-tri3:8 --dirichlet all=1", dir), "--dirichlet");
  expect_one_line_naming(fem_run("modes gen:square-tri3:8 --shift 3 --range 1:2", dir), "--range");
  expect_one_line_naming(fem_run("modes gen:square-tri3:8 --range 5:1", dir), "--range");
  expect_one_line_naming(fem_run("modes gen:square-tri3:8 --fixed left", dir), "--fixed");
  expect_one_line_naming(fem_run("modes gen:square-tri3:8 --output m.vtu", dir), "--output");
}

}  // namespace
