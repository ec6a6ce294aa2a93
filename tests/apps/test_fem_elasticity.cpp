// `fem elasticity` as a user runs it: affine displacements reproduced exactly, the P1/P2
// convergence rates on a manufactured solution, the von Mises stress of uniaxial tension, the
// --json contract and one-line errors; and `--device` of every solver subcommand (cuda without
// a usable GPU is a one-line error).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numbers>
#include <set>
#include <string>

#include "cli.hpp"
#include "fem/gpu/executor.hpp"
#include "fem/mesh/vtu.hpp"

namespace {

namespace fs = std::filesystem;

using fem::testing::CliResult;
using fem::testing::expect_one_line_naming;
using fem::testing::fem_run;
using fem::testing::run_json;
using fem::testing::temp_dir;

double number(const nlohmann::json& j) { return j.get<double>(); }

// An affine displacement solves -div σ = 0 for any material: P1 and P2 reproduce it to rounding.
TEST(FemElasticity, AffineDisplacementIsExact) {
  const auto dir = temp_dir();
  const double G[3][3] = {{0.01, 0.002, -0.004}, {-0.003, 0.004, 0.001}, {0.002, -0.001, 0.005}};
  const double c[3] = {0.001, -0.002, 0.0005};
  struct Case {
    std::string mesh;
    int dim, order;
    std::string material;
  };
  for (const auto& k :
       {Case{"gen:square-tri3:4", 2, 1, ""}, Case{"gen:square-tri3:4", 2, 2, " --E all=200 --nu all=0.3"},
        Case{"gen:square-quad4:4", 2, 1, " --E domain=3 --nu 1=0.45"},
        Case{"gen:cube-tet4:2", 3, 1, " --E all=70 --nu all=0.33"}, Case{"gen:cube-tet4:2", 3, 2, ""}}) {
    std::string field;
    for (int i = 0; i < k.dim; ++i) {
      field += fmt::format("{}{}", i ? "," : "", c[i]);
      for (int d = 0; d < k.dim; ++d) field += fmt::format("+{}*{}", G[i][d], "xyz"[d]);
    }
    const std::string what = k.mesh + " P" + std::to_string(k.order);
    const auto j = run_json("elasticity " + k.mesh + " --order " + std::to_string(k.order) + k.material +
                                " --dirichlet all=" + field + " --exact " + field,
                            dir);
    ASSERT_FALSE(j.is_null()) << what;
    EXPECT_LT(number(j["error"]["l2"]), 1e-10) << what;
    EXPECT_LT(number(j["error"]["h1"]), 1e-8) << what;
    // Each component's extremes sit at corners of the unit box, which are nodes.
    ASSERT_EQ(j["solution"]["components"].size(), static_cast<std::size_t>(k.dim)) << what;
    for (int i = 0; i < k.dim; ++i) {
      double lo = c[i], hi = c[i];
      for (int d = 0; d < k.dim; ++d) (G[i][d] < 0 ? lo : hi) += G[i][d];
      EXPECT_NEAR(number(j["solution"]["components"][i]["min"]), lo, 1e-12) << what << " component " << i;
      EXPECT_NEAR(number(j["solution"]["components"][i]["max"]), hi, 1e-12) << what << " component " << i;
    }
  }
  fs::remove_all(dir);
}

// u = s (1, 1), s = sin(πx) sin(πy), zero on the boundary; f = -(λ+μ) ∇(div u) - μ Δu.
std::string manufactured_run(int n, int order) {
  using std::numbers::pi;
  const double E = 10.0, nu = 0.3, lambda = E * nu / ((1 + nu) * (1 - 2 * nu)), mu = E / (2 * (1 + nu));
  const std::string s = "sin(pi*x)*sin(pi*y)", cc = "cos(pi*x)*cos(pi*y)";
  // f_x = f_y = (λ+μ) π² (s - cos cos) + 2 μ π² s
  const std::string f =
      fmt::format("{:.17g}*({}-{})+{:.17g}*{}", (lambda + mu) * pi * pi, s, cc, 2 * mu * pi * pi, s);
  return fmt::format(
      "elasticity gen:square-tri3:{} --order {} --E all={} --nu all={} --fixed all --body-force '{},{}' "
      "--exact '{},{}'",
      n, order, E, nu, f, f, s, s);
}

TEST(FemElasticity, ConvergesAtTheFiniteElementRate) {
  const auto dir = temp_dir();
  for (int order : {1, 2}) {
    double l2_previous = 0, h1_previous = 0;
    for (int n : {8, 16, 32}) {
      const auto j = run_json(manufactured_run(n, order), dir);
      ASSERT_FALSE(j.is_null());
      const double l2 = number(j["error"]["l2"]), h1 = number(j["error"]["h1"]);
      if (l2_previous > 0) {
        const double l2_rate = std::log2(l2_previous / l2), h1_rate = std::log2(h1_previous / h1);
        EXPECT_NEAR(l2_rate, order + 1, 0.1) << "P" << order << " n = " << n;
        EXPECT_NEAR(h1_rate, order, 0.1) << "P" << order << " n = " << n;
      }
      l2_previous = l2, h1_previous = h1;
    }
  }
  fs::remove_all(dir);
}

// A bar pulled by a traction t on `right`, on rollers elsewhere: σ = t e_x e_x everywhere, so the
// von Mises stress is |t| (3D, any ν; plane strain: σzz = ν t, so |t| √(1 - ν + ν²)).
TEST(FemElasticity, UniaxialTensionVonMises) {
  const auto dir = temp_dir();
  const double E = 70, nu = 0.33;
  for (double t : {2.5, -1.5}) {
    const auto j =
        run_json(fmt::format("elasticity gen:cube-tet4:3 --E all={} --nu all={} --dirichlet left=0,free,free "
                             "--dirichlet front=free,0,free --dirichlet bottom=free,free,0 --traction "
                             "right={},0,0 --exact {}*x,{}*y,{}*z",
                             E, nu, t, t / E, -nu * t / E, -nu * t / E),
                 dir);
    ASSERT_FALSE(j.is_null()) << t;
    EXPECT_NEAR(number(j["stress"]["von_mises_min"]), std::abs(t), 1e-10) << t;
    EXPECT_NEAR(number(j["stress"]["von_mises_max"]), std::abs(t), 1e-10) << t;
    EXPECT_LT(number(j["error"]["l2"]), 1e-10) << t;
  }
  // Plane strain, with the stresses read back from the .vtu.
  for (double nu2 : {0.0, 0.3}) {
    const double t = 4.0;
    const auto out = dir / "bar.vtu";
    const auto j =
        run_json(fmt::format("elasticity gen:square-tri3:4 --E all=5 --nu all={} --dirichlet left=0,free "
                             "--dirichlet bottom=free,0 --traction right={},0 --output '{}'",
                             nu2, t, out.string()),
                 dir);
    ASSERT_FALSE(j.is_null()) << nu2;
    const double expected = t * std::sqrt(1 - nu2 + nu2 * nu2);
    EXPECT_NEAR(number(j["stress"]["von_mises_max"]), expected, 1e-10) << nu2;
    const auto vtu = fem::mesh::read_vtu(out);
    const auto* mises = vtu.cell_array("von_mises");
    const auto* stress = vtu.cell_array("stress");
    const auto* u = vtu.point_array("displacement");
    ASSERT_TRUE(mises && stress && u);
    ASSERT_EQ(mises->values.size(), vtu.num_cells());
    ASSERT_EQ(stress->components, 6);
    ASSERT_EQ(u->components, 3);
    for (std::size_t c = 0; c < vtu.num_cells(); ++c) {
      EXPECT_NEAR(mises->values[c], expected, 1e-10);
      EXPECT_NEAR(stress->values[c * 6 + 0], t, 1e-10);        // σxx
      EXPECT_NEAR(stress->values[c * 6 + 1], 0.0, 1e-10);      // σyy
      EXPECT_NEAR(stress->values[c * 6 + 2], nu2 * t, 1e-10);  // σzz = ν(σxx + σyy)
      EXPECT_NEAR(stress->values[c * 6 + 3], 0.0, 1e-10);      // σxy
    }
    // ux = εxx x with εxx = (1 - ν²) t / E in plane strain; uz = 0.
    for (std::size_t p = 0; p < vtu.num_points(); ++p) {
      EXPECT_NEAR(u->values[p * 3], (1 - nu2 * nu2) * t / 5 * vtu.points[p * 3], 1e-12);
      EXPECT_EQ(u->values[p * 3 + 2], 0.0);
    }
  }
  fs::remove_all(dir);
}

TEST(FemElasticity, JsonHoldsTheContract) {
  const auto dir = temp_dir();
  const auto j =
      run_json("elasticity gen:square-tri3:4 --fixed left --traction right=0,-1 --body-force 0,-0.5", dir);
  ASSERT_FALSE(j.is_null());
  EXPECT_EQ(j["command"], "elasticity");
  EXPECT_EQ(j["mesh"]["nodes"], 25);
  EXPECT_EQ(j["mesh"]["cells"], 32);
  EXPECT_EQ(j["mesh"]["cell_type"], "tri3");
  EXPECT_EQ(j["dofs"], 50);
  EXPECT_EQ(j["dirichlet_dofs"], 10);  // 5 nodes on `left`, both components
  EXPECT_EQ(j["device"], "cpu");
  // The stiffness matrix with its Dirichlet rows is symmetric positive definite: a Cholesky.
  EXPECT_TRUE(j["solver"]["backend"] == "cholmod" || j["solver"]["backend"] == "ldlt") << j["solver"];
  for (const char* k : {"read_mesh", "connectivity", "assemble", "factorize", "solve", "write"})
    EXPECT_GE(number(j["timings"][k]), 0.0) << k;
  EXPECT_EQ(j["cache"]["pattern_builds"], 1);
  EXPECT_EQ(j["cache"]["pattern_hits"], 0);
  EXPECT_EQ(j["cache"]["symbolic_analyses"], 1);
  EXPECT_EQ(j["cache"]["factorizations"], 1);
  EXPECT_EQ(j["cache"]["solves"], 1);
  // A cantilever pushed down: |u| is 0 on the clamped side and u_y < 0 somewhere.
  EXPECT_EQ(number(j["solution"]["min"]), 0.0);
  EXPECT_GT(number(j["solution"]["max"]), 0.0);
  EXPECT_LT(number(j["solution"]["components"][1]["min"]), 0.0);
  EXPECT_GE(number(j["solution"]["max"]), -number(j["solution"]["components"][1]["min"]));  // |u| ≥ |u_y|
  EXPECT_GT(number(j["stress"]["von_mises_max"]), number(j["stress"]["von_mises_min"]));
  EXPECT_FALSE(j.contains("error"));
  fs::remove_all(dir);
}

// A locked answer is not an answer: degree 1 (P1, Q1) near ν = ½ is too stiff (here: the pulled
// square's axial displacement off P2's by about 10% at every mesh size), and the text and the JSON
// say so, pointing to --order 2; P2, ordinary materials and plane stress get no warning.
TEST(FemElasticity, LockingIsWarnedForDegreeOneNearIncompressibility) {
  const auto dir = temp_dir();
  const auto run = [&](const std::string& mesh, const std::string& nu, int order,
                       const std::string& extra = "") {
    const std::string pull = mesh.find("cube") == std::string::npos ? "1,0" : "1,0,0";
    return run_json("elasticity " + mesh + " --fixed left --traction right=" + pull + " --nu all=" + nu +
                        " --order " + std::to_string(order) + extra,
                    dir);
  };
  const auto warned = [](const nlohmann::json& j) {
    return std::any_of(j["warnings"].begin(), j["warnings"].end(), [](const nlohmann::json& w) {
      const std::string s = w.get<std::string>();
      return s.find("locking") != std::string::npos && s.find("--order 2") != std::string::npos;
    });
  };
  const auto axial = [](const nlohmann::json& j) { return number(j["solution"]["components"][0]["max"]); };
  const std::string square = "gen:square-tri3:8";
  const auto p1 = run(square, "0.4999999", 1), p2 = run(square, "0.4999999", 2);
  const auto p1_ordinary = run(square, "0.3", 1), p2_ordinary = run(square, "0.3", 2);
  ASSERT_FALSE(p1.is_null() || p2.is_null() || p1_ordinary.is_null() || p2_ordinary.is_null());
  EXPECT_TRUE(warned(p1)) << p1["warnings"];
  EXPECT_GT(number(p1["locking"]["indicator"]), 0.5);
  EXPECT_TRUE(p2["warnings"].empty()) << p2["warnings"];
  EXPECT_TRUE(p1_ordinary["warnings"].empty()) << p1_ordinary["warnings"];
  // What the warning is about: P1 is far from P2 near ν = ½, close to it at ν = 0.3.
  EXPECT_GT(std::abs(axial(p1) - axial(p2)), 0.05 * axial(p2));
  EXPECT_LT(std::abs(axial(p1_ordinary) - axial(p2_ordinary)), 0.02 * axial(p2_ordinary));
  // Q1 and 3D lock alike; plane stress does not (σzz = 0 lets the thickness change).
  EXPECT_TRUE(warned(run("gen:square-quad4:8", "0.4999999", 1)));
  EXPECT_TRUE(warned(run("gen:cube-tet4:3", "0.4999999", 1)));
  const auto stress = run(square, "0.4999999", 1, " --plane stress");
  ASSERT_FALSE(stress.is_null());
  EXPECT_TRUE(stress["warnings"].empty()) << stress["warnings"];
  // The text output says it too.
  const CliResult text =
      fem_run("elasticity " + square + " --fixed left --traction right=1,0 --nu all=0.4999999", dir);
  EXPECT_EQ(text.status, 0) << text.err;
  EXPECT_NE((text.out + text.err).find("warning     volumetric locking"), std::string::npos) << text.out;
  fs::remove_all(dir);
}

// Derived outputs (|u|, von Mises, the error norms) are computed scaled: finite components never
// give an infinite |u| (JSON null) or one rounded to 0. With E = 1e-300 the displacement is about
// 1e300, with E = 1e300 about 1e-300; both are the E = 1 answer scaled by 1/E.
TEST(FemElasticity, DerivedOutputsNeitherOverflowNorUnderflow) {
  const auto dir = temp_dir();
  const std::string run = "elasticity gen:square-tri3:4 --fixed left --traction right=1,0.5";
  const auto reference = run_json(run, dir);
  ASSERT_FALSE(reference.is_null());
  const double u1 = number(reference["solution"]["max"]),
               mises = number(reference["stress"]["von_mises_max"]);
  for (const double E : {1e-300, 1e300}) {
    const auto j = run_json(run + fmt::format(" --E all={:g}", E), dir);
    ASSERT_FALSE(j.is_null()) << E;
    ASSERT_TRUE(j["solution"]["max"].is_number()) << j["solution"];
    EXPECT_NEAR(number(j["solution"]["max"]) * E / u1, 1.0, 1e-8) << E;
    // The largest |u| is at least the largest |u_x|.
    const double ux = std::max(-number(j["solution"]["components"][0]["min"]),
                               number(j["solution"]["components"][0]["max"]));
    EXPECT_GE(number(j["solution"]["max"]), ux) << E;
    EXPECT_NEAR(number(j["stress"]["von_mises_max"]) / mises, 1.0, 1e-8) << E;
  }
  // Stresses of 1e300: a finite von Mises stress, 1e300 times the unit load's.
  const auto big = run_json("elasticity gen:square-tri3:4 --fixed left --traction right=1e300,5e299", dir);
  ASSERT_FALSE(big.is_null());
  ASSERT_TRUE(big["stress"]["von_mises_max"].is_number()) << big["stress"];
  EXPECT_NEAR(number(big["stress"]["von_mises_max"]) / (1e300 * mises), 1.0, 1e-8);
  // The error norms of an affine displacement of size 1e300 and 1e-300: rounding-sized, not inf or 0.
  for (const char* scale : {"1e300", "1e-300"}) {
    const std::string field = fmt::format("{0}*(1+x),{0}*(2-y)", scale);
    const auto j =
        run_json("elasticity gen:square-tri3:4 --dirichlet 'all=" + field + "' --exact '" + field + "'", dir);
    ASSERT_FALSE(j.is_null()) << scale;
    ASSERT_TRUE(j["error"]["l2"].is_number() && j["error"]["h1"].is_number()) << j["error"];
    const double size = std::stod(scale);
    EXPECT_LT(number(j["error"]["l2"]), 1e-10 * size) << scale;
    EXPECT_NEAR(number(j["solution"]["max"]) / size, std::sqrt(8.0), 1e-12) << scale;  // |(2, 2)| at (1, 0)
    EXPECT_NEAR(number(j["solution"]["min"]) / size, std::sqrt(2.0), 1e-12) << scale;  // |(1, 1)| at (0, 1)
  }
  fs::remove_all(dir);
}

// The constraints are checked against the rigid motions, not against which options were given:
// free motions with loads that push along them are named in a one-line error; with equilibrated
// loads the body is solved orthogonal to them.
TEST(FemElasticity, FreeRigidMotionsAreNamedOrSolvedOrthogonally) {
  const auto dir = temp_dir();
  auto r = fem_run("elasticity gen:square-tri3:6 --traction right=1,0", dir);
  for (const char* mode : {"translation x", "translation y", "rotation z"}) expect_one_line_naming(r, mode);
  // Rollers on the left stop x and the rotation; the load along y finds translation y free.
  r = fem_run("elasticity gen:square-tri3:6 --dirichlet left=0,free --traction right=1,0.5", dir);
  expect_one_line_naming(r, "translation y");
  EXPECT_EQ(r.err.find("translation x"), std::string::npos) << r.err;
  // Rollers on the left and bottom stop everything: solved as usual.
  auto j = run_json(
      "elasticity gen:square-tri3:6 --dirichlet left=0,free --dirichlet bottom=free,0 "
      "--traction right=1,0",
      dir);
  ASSERT_FALSE(j.is_null());
  EXPECT_EQ(j["solution"]["normalization"], "none");
  // Uniaxial tension with nothing fixed: the uniform stress, and the motion-free displacement.
  j = run_json("elasticity gen:square-tri3:6 --traction left=-1,0 --traction right=1,0", dir);
  ASSERT_FALSE(j.is_null());
  EXPECT_EQ(j["solution"]["normalization"], "orthogonal_to_rigid_motions");
  EXPECT_EQ(j["solution"]["null_space"].size(), 3u);
  EXPECT_NEAR(number(j["stress"]["von_mises_min"]), number(j["stress"]["von_mises_max"]), 1e-10);
  // Centred: ux ranges symmetrically about 0.
  EXPECT_NEAR(number(j["solution"]["components"][0]["min"]), -number(j["solution"]["components"][0]["max"]),
              1e-12);
  // 3D rollers on x = 0 leave y, z and the rotation about x; a load along x is in equilibrium.
  j = run_json("elasticity gen:cube-tet4:3 --dirichlet left=0,free,free --traction right=1,0,0", dir);
  ASSERT_FALSE(j.is_null());
  std::set<std::string> names;
  for (const auto& n : j["solution"]["null_space"]) names.insert(n.get<std::string>());
  EXPECT_EQ(names, (std::set<std::string>{"translation y", "translation z", "rotation x"}));
  fs::remove_all(dir);
}

TEST(FemElasticity, BadInputsAreOneLineErrors) {
  const auto dir = temp_dir();
  const std::string m = "elasticity gen:square-tri3:4 ";
  expect_one_line_naming(fem_run(m + "--fixed ceiling", dir), "ceiling");
  expect_one_line_naming(fem_run(m + "--fixed left --E steel=2", dir), "steel");
  expect_one_line_naming(fem_run(m + "--fixed left --traction right=1,0,0", dir), "--traction");
  expect_one_line_naming(fem_run(m + "--fixed left --body-force 1", dir), "--body-force");
  expect_one_line_naming(fem_run(m + "--fixed left --exact 'x,y,z'", dir), "--exact");
  expect_one_line_naming(fem_run(m + "--dirichlet left=0,", dir), "free");
  expect_one_line_naming(fem_run(m + "--dirichlet left=0,y+", dir), "y+");
  expect_one_line_naming(fem_run(m + "--dirichlet left", dir), "--dirichlet");
  expect_one_line_naming(fem_run(m + "--fixed left --nu all=0.5", dir), "--nu");
  expect_one_line_naming(fem_run(m + "--fixed left --E all=-1", dir), "--E");
  expect_one_line_naming(fem_run(m + "--traction right=1,0", dir), "--fixed");
  expect_one_line_naming(fem_run("elasticity gen:cube-tet4:2 --fixed left --body-force 0,0", dir),
                         "--body-force");
  // A comma inside a function's parentheses does not split the components.
  const auto j = run_json(m + "--dirichlet all='min(x,y),0' --exact 'min(x,y),0' --nu all=0", dir);
  EXPECT_FALSE(j.is_null());
  fs::remove_all(dir);
}

// --device: cpu by default and in the JSON; cuda builds the connectivity on the GPU where this
// build has CUDA and a device answers, and is a one-line error before any work otherwise.
TEST(FemDevice, CudaRunsOrFailsInOneLine) {
  const auto dir = temp_dir();
  const std::string runs[] = {
      "poisson gen:square-tri3:8 --source -6 --dirichlet all=1+x*x+2*y*y --exact 1+x*x+2*y*y",
      "heat gen:square-tri3:8 --dt 0.01 --steps 3 --dirichlet all=0 --initial 'sin(pi*x)*sin(pi*y)'",
      "nonlinear gen:square-tri3:8 --problem bratu --lambda 1",
      "elasticity gen:square-tri3:8 --dirichlet all=0.01*x,0.02*y --exact 0.01*x,0.02*y"};
  std::string reason;
  const bool gpu = fem::gpu::cuda_available(&reason);
  for (const auto& args : runs) {
    const CliResult r = fem_run(args + " --device cuda --json -", dir);
    if (!gpu) {
      expect_one_line_naming(r, "--device cuda");
      EXPECT_TRUE(r.out.empty()) << args;  // it failed before any work
      continue;
    }
    ASSERT_EQ(r.status, 0) << args << "\n" << r.err;
    const auto j = nlohmann::json::parse(r.out);
    const auto cpu = run_json(args + " --device cpu", dir);
    EXPECT_EQ(j["device"], "cuda") << args;
    EXPECT_NEAR(number(j["solution"]["max"]), number(cpu["solution"]["max"]), 1e-12) << args;
  }
  for (const auto& args : {runs[0], runs[1], runs[3]}) {
    const auto j = run_json(args, dir);
    ASSERT_FALSE(j.is_null()) << args;
    EXPECT_EQ(j["device"], "cpu") << args;
  }
  EXPECT_NE(fem_run(runs[0] + " --device tpu", dir).status, 0);
  fs::remove_all(dir);
}

// --device debug-device: the connectivity and every matrix go through the device code path on
// the CPU (separate buffers, explicit copies, the Assembler on that executor); the results equal the CPU
// run's to round-off, and a space the device does not assemble (P2) is a one-line error.
TEST(FemDevice, DebugDeviceMatchesTheCpu) {
  const auto dir = temp_dir();
  const std::string runs[] = {
      "poisson gen:square-tri3:12 --source -6 --dirichlet all=1+x*x+2*y*y --exact 1+x*x+2*y*y --coefficient "
      "all=2",
      "poisson gen:cube-tet4:4 --source 'sin(x)' --dirichlet all=0",
      "heat gen:square-quad4:10 --dt 0.01 --steps 3 --dirichlet all=0 --initial 'sin(pi*x)*sin(pi*y)'",
      "elasticity gen:square-tri3:8 --dirichlet all=0.01*x,0.02*y --exact 0.01*x,0.02*y",
      "elasticity gen:cube-tet4:3 --fixed left --body-force 0,0,-1 --E all=100 --nu all=0.3",
      "nonlinear gen:square-tri3:8 --problem bratu --lambda 2"};
  for (const auto& args : runs) {
    const auto dev = run_json(args + " --device debug-device", dir);
    const auto cpu = run_json(args, dir);
    ASSERT_FALSE(dev.is_null() || cpu.is_null()) << args;
    EXPECT_EQ(dev["device"], "debug-device") << args;
    for (const char* k : {"min", "max"}) {
      const double a = number(dev["solution"][k]), b = number(cpu["solution"][k]);
      EXPECT_NEAR(a, b, 1e-10 * std::max(1.0, std::abs(b))) << args << " solution." << k;
    }
    if (cpu.contains("error")) {
      EXPECT_NEAR(number(dev["error"]["l2"]), number(cpu["error"]["l2"]), 1e-10) << args;
    }
    EXPECT_EQ(number(dev["cache"]["pattern_builds"]), 1) << args;
  }
  expect_one_line_naming(
      fem_run("poisson gen:square-tri3:4 --order 2 --dirichlet all=0 --device debug-device", dir),
      "device assembly");
  fs::remove_all(dir);
}

// --plane stress: a plate on rollers pulled by σxx = t has εxx = t/E, εyy = −ν t/E (plane strain:
// εxx = (1−ν²) t/E, εyy = −ν(1+ν) t/E), read from the displacement ranges (ux = εxx x, uy = εyy y on
// the unit square), σzz = 0 in the .vtu and a von Mises stress of |t|; `plane` in the JSON and the
// text summary.
TEST(FemElasticity, PlaneStressUniaxialTension) {
  const auto dir = temp_dir();
  const double E = 5, nu = 0.3, t = 2;
  const std::string run = fmt::format(
      "elasticity gen:square-tri3:8 --E all={} --nu all={} --dirichlet left=0,free "
      "--dirichlet bottom=free,0 --traction right={},0",
      E, nu, t);
  for (int order : {1, 2}) {
    const auto out = dir / "plate.vtu";
    const auto j =
        run_json(fmt::format("{} --order {} --plane stress --output '{}'", run, order, out.string()), dir);
    ASSERT_FALSE(j.is_null()) << order;
    EXPECT_EQ(j["plane"], "stress");
    const auto& u = j["solution"]["components"];
    EXPECT_NEAR(number(u[0]["min"]), 0.0, 1e-12);
    EXPECT_NEAR(number(u[0]["max"]), t / E, 1e-12) << "εxx = t/E";
    EXPECT_NEAR(number(u[1]["min"]), -nu * t / E, 1e-12) << "εyy = -ν t/E";
    EXPECT_NEAR(number(u[1]["max"]), 0.0, 1e-12);
    EXPECT_NEAR(number(j["stress"]["von_mises_min"]), t, 1e-10);
    EXPECT_NEAR(number(j["stress"]["von_mises_max"]), t, 1e-10);
    const auto vtu = fem::mesh::read_vtu(out);
    const auto* stress = vtu.cell_array("stress");
    ASSERT_TRUE(stress != nullptr);
    for (std::size_t c = 0; c < vtu.num_cells(); ++c) {
      EXPECT_NEAR(stress->values[c * 6 + 0], t, 1e-10);  // σxx
      EXPECT_EQ(stress->values[c * 6 + 2], 0.0);         // σzz
    }
  }
  // Plane strain, by default and by name: the stiffer plate.
  for (const std::string plane : {"", " --plane strain"}) {
    const auto j = run_json(run + plane, dir);
    ASSERT_FALSE(j.is_null()) << plane;
    EXPECT_EQ(j["plane"], "strain") << plane;
    EXPECT_NEAR(number(j["solution"]["components"][0]["max"]), (1 - nu * nu) * t / E, 1e-12) << plane;
    EXPECT_NEAR(number(j["solution"]["components"][1]["min"]), -nu * (1 + nu) * t / E, 1e-12) << plane;
  }
  // The text summary names the model.
  const CliResult r = fem_run(run + " --plane stress", dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("), plane stress"), std::string::npos) << r.out;
  EXPECT_NE(fem_run(run, dir).out.find("), plane strain"), std::string::npos);
  fs::remove_all(dir);
}

TEST(FemElasticity, PlaneOptionErrorsAreOneLine) {
  const auto dir = temp_dir();
  expect_one_line_naming(fem_run("elasticity gen:square-tri3:4 --fixed left --plane foo", dir), "--plane");
  // 3D meshes have no plane model: an error rather than an option silently ignored.
  for (const char* plane : {"stress", "strain"})
    expect_one_line_naming(
        fem_run(std::string("elasticity gen:cube-tet4:2 --fixed left --body-force 0,0,-1 --plane ") + plane,
                dir),
        "--plane");
  const auto j = run_json("elasticity gen:cube-tet4:2 --fixed left --body-force 0,0,-1", dir);
  ASSERT_FALSE(j.is_null());
  EXPECT_FALSE(j.contains("plane"));
  fs::remove_all(dir);
}

// --plane stress goes through the device assembly too: the debug device's solution is the CPU's.
TEST(FemDevice, DebugDevicePlaneStressMatchesTheCpu) {
  const auto dir = temp_dir();
  for (const char* mesh : {"gen:square-tri3:8", "gen:square-quad4:8"}) {
    const std::string base =
        std::string("elasticity ") + mesh + " --fixed left --traction right=0,-1 --E all=3 --nu all=0.4";
    const std::string args = base + " --plane stress";
    const auto dev = run_json(args + " --device debug-device", dir);
    const auto cpu = run_json(args, dir);
    const auto strain = run_json(base, dir);
    ASSERT_FALSE(dev.is_null() || cpu.is_null() || strain.is_null()) << args;
    EXPECT_EQ(dev["plane"], "stress");
    for (int k = 0; k < 2; ++k)
      for (const char* m : {"min", "max"}) {
        const double a = number(dev["solution"]["components"][k][m]),
                     b = number(cpu["solution"]["components"][k][m]);
        EXPECT_NEAR(a, b, 1e-10 * std::max(1.0, std::abs(b))) << args << " component " << k << " " << m;
      }
    // Plane stress is the softer model: a larger deflection.
    EXPECT_LT(number(cpu["solution"]["components"][1]["min"]),
              number(strain["solution"]["components"][1]["min"]));
  }
  fs::remove_all(dir);
}

}  // namespace
