// The fem drivers under mpirun give the serial run's answer: the gathered .vtu of a distributed
// run is compared with the serial .vtu node by node; counters and Newton iterations come from
// the JSON; an error on any rank is one line from rank 0 and a non-zero exit.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fem/mesh/vtu.hpp"

namespace {

namespace fs = std::filesystem;

struct Outcome {
  int status = -1;
  std::string output;
};

// `fem ARGS` on `ranks` processes (0: without mpirun), stdout and stderr together.
Outcome fem(int ranks, const std::string& args) {
  const std::string launcher =
      ranks > 0 ? std::string(FEM_MPIEXEC) + " -n " + std::to_string(ranks) + " --bind-to none " : "";
  const std::string command = launcher + FEM_EXECUTABLE + " " + args + " 2>&1";
  Outcome r;
  FILE* pipe = popen(command.c_str(), "r");
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe)) r.output += buffer;
  const int s = pclose(pipe);
  r.status = WIFEXITED(s) ? WEXITSTATUS(s) : -1;
  return r;
}

fs::path scratch(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / "fem_dist_drivers" / name;
  fs::create_directories(p.parent_path());
  return p;
}

const std::string meshes = FEM_MESHES_DIR;

std::string fmt_name(const std::string& name, int ranks) {
  return name + "_np" + std::to_string(ranks) + ".vtu";
}

// max |a − b| / max |b| of a point array of two .vtu files of one mesh.
double difference(const fs::path& a, const fs::path& b, const std::string& array) {
  const auto da = fem::mesh::read_vtu(a), db = fem::mesh::read_vtu(b);
  const auto *x = da.point_array(array), *y = db.point_array(array);
  if (!x || !y || x->values.size() != y->values.size()) return INFINITY;
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < x->values.size(); ++i) {
    diff = std::max(diff, std::abs(x->values[i] - y->values[i]));
    scale = std::max(scale, std::abs(y->values[i]));
  }
  return diff / scale;
}

nlohmann::json json(const fs::path& p) { return nlohmann::json::parse(std::ifstream(p)); }

TEST(Drivers, PoissonP1AndP2AreTheSerialSolution) {
  const std::string p1 = meshes + "/plate_hole_v41.msh --dirichlet hole=1 --dirichlet left=0 --source 1+x*y";
  const std::string p2 =
      meshes + "/annulus_p2_v41.msh --order 2 --dirichlet inner=1 --dirichlet outer=0 --source 1";
  for (const auto& [name, args] : {std::pair{"p1", p1}, {"p2", p2}}) {
    const auto serial = scratch(std::string(name) + "_serial.vtu");
    ASSERT_EQ(fem(0, "poisson " + args + " -q --output " + serial.string()).status, 0);
    for (int ranks : {2, 3}) {
      const auto dist = scratch(fmt_name(name, ranks));
      const auto j = scratch(fmt_name(name, ranks) + ".json");
      const Outcome r =
          fem(ranks, "poisson " + args + " -q --output " + dist.string() + " --json " + j.string());
      ASSERT_EQ(r.status, 0) << r.output;
      EXPECT_LE(difference(dist, serial, "u"), 1e-10) << name << " on " << ranks;
      const auto js = json(j);
      EXPECT_EQ(js["ranks"], ranks);
      EXPECT_EQ(js["dist"]["coo_preallocations"], 1);
      EXPECT_EQ(js["solver"]["backend"], "mumps");
    }
  }
}

TEST(Drivers, TheDistributedPathIsLoadedWhenAskedFor) {
  // fem links no MPI and no PETSc (tests/apps: FemStartUp): a PETSc solver loads libfem_dist,
  // and with it both, at start-up.
  const Outcome r = fem(0, "poisson gen:square-tri3:8 --dirichlet all=0 --source 1 -q --solver mumps");
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string cmd = std::string("LD_DEBUG=files ") + FEM_EXECUTABLE +
                          " poisson gen:square-tri3:8 --dirichlet all=0 -q --solver mumps 2>&1 >/dev/null";
  std::string loaded;
  FILE* pipe = popen(cmd.c_str(), "r");
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe)) loaded += buffer;
  pclose(pipe);
  EXPECT_NE(loaded.find("libfem_dist"), std::string::npos);
  EXPECT_NE(loaded.find("petsc"), std::string::npos);
}

TEST(Drivers, GroupsAreSetsAndAllIsTheWholeBoundaryOnEveryRank) {
  // meshes/groups.geo (MSH 2.2: every cell written twice, once per group): materials by group, a
  // flux on the whole boundary (the untagged side too, the interior interface not).
  const std::string args = "poisson " + meshes +
                           "/groups_v22.msh --dirichlet left=0 --neumann all=1 --coefficient soft=1 "
                           "--coefficient hard=2 -q --output ";
  const auto serial = scratch("g_serial.vtu");
  ASSERT_EQ(fem(0, args + serial.string()).status, 0);
  for (int ranks : {2, 3}) {
    const auto dist = scratch(fmt_name("g", ranks));
    const Outcome r = fem(ranks, args + dist.string());
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_LE(difference(dist, serial, "u"), 1e-10) << ranks;
  }
  // A cell tag of no cell of the whole mesh, on parts that lack others: refused on every rank.
  const Outcome k = fem(2, "poisson " + meshes + "/groups_v41.msh --dirichlet left=0 --coefficient 7=2 -q");
  EXPECT_EQ(k.status, 1);
  EXPECT_NE(k.output.find("7"), std::string::npos) << k.output;
}

TEST(Drivers, OverlappingDirichletConditionsFollowTheSerialRule) {
  // `all` loses to the tags whatever the order, and left = 0, top = x meet at the corner (0, 1)
  // where they agree, whichever rank holds which facet; the elasticity components likewise.
  const std::string args =
      "poisson gen:square-tri3:24 --dirichlet all=5 --dirichlet left=0 --dirichlet top=x --dirichlet "
      "bottom=x "
      "-q --output ";
  const auto serial = scratch("o_serial.vtu");
  ASSERT_EQ(fem(0, args + serial.string()).status, 0);
  for (int ranks : {2, 3}) {
    const auto dist = scratch(fmt_name("o", ranks));
    const Outcome r = fem(ranks, args + dist.string());
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_LE(difference(dist, serial, "u"), 1e-10) << ranks;
  }
  const std::string e =
      "elasticity gen:square-quad4:12 --fixed left --dirichlet top=free,0.1*x --dirichlet right=0.2*y,free "
      "-q "
      "--output ";
  const auto es = scratch("oe_serial.vtu"), ed = scratch("oe_dist.vtu");
  ASSERT_EQ(fem(0, e + es.string()).status, 0);
  const Outcome r = fem(3, e + ed.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_LE(difference(ed, es, "displacement"), 1e-10);
  // Two tags that disagree at the corner: refused on every rank count, naming both, exit 1.
  for (int ranks : {0, 2}) {
    const Outcome c = fem(ranks, "poisson gen:square-tri3:8 --dirichlet left=0 --dirichlet top=1 -q");
    EXPECT_EQ(c.status, 1) << ranks;
    EXPECT_NE(c.output.find("'left'"), std::string::npos) << c.output;
    EXPECT_NE(c.output.find("'top'"), std::string::npos) << c.output;
  }
}

TEST(Drivers, TagsAreCheckedAgainstTheWholeMesh) {
  // A tag no facet carries is an error under mpirun as serially, on every rank, though each
  // part lacks most tags of the whole mesh.
  for (const char* option : {"--dirichlet 99=0", "--neumann 7=1 --dirichlet left=0"}) {
    const Outcome serial = fem(0, std::string("poisson gen:square-tri3:8 ") + option);
    EXPECT_NE(serial.status, 0);
    const Outcome r = fem(3, std::string("poisson gen:square-tri3:8 ") + option);
    EXPECT_NE(r.status, 0) << option;
    EXPECT_NE(r.output.find("no boundary facet with tag"), std::string::npos) << r.output;
  }
}

TEST(Drivers, ElasticityIsTheSerialSolution) {
  const std::string args = meshes + "/plate_hole_v41.msh --fixed left --traction right=1,0.5 -q --output ";
  const auto serial = scratch("e_serial.vtu"), dist = scratch("e_dist.vtu");
  ASSERT_EQ(fem(0, "elasticity " + args + serial.string()).status, 0);
  const Outcome r = fem(3, "elasticity " + args + dist.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_LE(difference(dist, serial, "displacement"), 1e-10);
}

// fem modes under mpirun (SLEPc's Krylov–Schur on MUMPS) against the serial run (Spectra on
// CHOLMOD): the eigenvalues to 1e-8, the Sturm count of a range, elasticity's frequencies.
TEST(Drivers, ModesAreTheSerialEigenvalues) {
  const std::vector<std::string> cases = {
      "modes gen:square-quad4:24 --count 6 --dirichlet all=0",
      "modes " + meshes + "/plate_hole_v41.msh --count 5 --range 5:200 --dirichlet hole=0",
      "modes gen:square-tri3:12 --problem elasticity --fixed left --count 6 --shift 0.2",
  };
  for (const auto& args : cases) {
    const auto serial_json = scratch("modes_serial.json");
    const Outcome s = fem(0, args + " -q --json " + serial_json.string());
    ASSERT_EQ(s.status, 0) << args << "\n" << s.output;
    const auto serial = json(serial_json);
    for (int ranks : {2, 3}) {
      const auto path = scratch("modes_np" + std::to_string(ranks) + ".json");
      const Outcome d = fem(ranks, args + " -q --json " + path.string());
      ASSERT_EQ(d.status, 0) << args << " on " << ranks << "\n" << d.output;
      const auto dist = json(path);
      EXPECT_EQ(dist["ranks"], ranks);
      const auto a = dist["eigenvalues"].get<std::vector<double>>(),
                 b = serial["eigenvalues"].get<std::vector<double>>();
      ASSERT_EQ(a.size(), b.size()) << args << " on " << ranks;
      for (std::size_t i = 0; i < a.size(); ++i)
        EXPECT_NEAR(a[i], b[i], 1e-8 * std::abs(b[i]) + 1e-12) << args << " " << i;
      EXPECT_LT(dist["eigen"]["orthogonality_max"].get<double>(), 1e-10);
      EXPECT_TRUE(dist["eigen"]["converged"].get<bool>());
      if (serial["eigen"].contains("sturm_count")) {
        EXPECT_EQ(dist["eigen"]["sturm_count"], serial["eigen"]["sturm_count"]);
      }
      if (serial.contains("effective_mass")) {
        EXPECT_NEAR(dist["effective_mass"]["cumulative_share"]["y"].get<double>(),
                    serial["effective_mass"]["cumulative_share"]["y"].get<double>(), 1e-8);
      }
    }
  }
}

// fem dynamics under mpirun: the energies and a probe equal the serial run's to 1e-10.
TEST(Drivers, DynamicsIsTheSerialRun) {
  const std::string args = "dynamics " + meshes +
                           "/plate_hole_v41.msh --fixed left --traction 'right=0,sin(t)' --dt 0.1 --steps 20 "
                           "--probe 1,0.5 -q --json ";
  const auto sj = scratch("dyn_serial.json"), dj = scratch("dyn_dist.json");
  ASSERT_EQ(fem(0, args + sj.string()).status, 0);
  const Outcome r = fem(2, args + dj.string());
  ASSERT_EQ(r.status, 0) << r.output;
  const auto s = json(sj), d = json(dj);
  EXPECT_EQ(d["ranks"], 2);
  for (const char* e : {"kinetic", "strain"}) {
    const auto a = d["energy"][e].get<std::vector<double>>(), b = s["energy"][e].get<std::vector<double>>();
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i)
      EXPECT_NEAR(a[i], b[i], 1e-10 * std::max(1e-12, b.back())) << e << i;
  }
  const auto pa = d["probes"][0]["values"].get<std::vector<std::vector<double>>>();
  const auto pb = s["probes"][0]["values"].get<std::vector<std::vector<double>>>();
  ASSERT_EQ(pa.size(), pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i)
    for (int c = 0; c < 2; ++c) EXPECT_NEAR(pa[i][c], pb[i][c], 1e-10) << i;
}

// --probe under mpirun: each point's value from the lowest rank whose part holds it (a point on
// an interface between parts counted once), interpolated in its cell: u = x (steady) at points
// between and on the nodes all over the square, on 2 and 3 processes. A point in no process's part
// is one error and a non-zero exit, not a wait.
TEST(Drivers, ProbesAreInterpolatedByTheLowestRankThatHoldsThePoint) {
  std::string probes;
  for (int i = 0; i <= 6; ++i)
    for (int j = 0; j <= 8; ++j)
      probes += " --probe " + std::to_string(i / 6.0) + "," + std::to_string(j / 8.0);
  const std::string args =
      "heat gen:square-tri3:8 --dirichlet left=0 --dirichlet right=1 --initial x --dt 1 --steps 2 -q" +
      probes;
  for (int ranks : {2, 3}) {
    const auto j = scratch("probes_np" + std::to_string(ranks) + ".json");
    const Outcome r = fem(ranks, args + " --json " + j.string());
    ASSERT_EQ(r.status, 0) << r.output;
    const auto d = json(j);
    EXPECT_EQ(d["ranks"], ranks);
    ASSERT_EQ(d["probes"].size(), 63u);
    for (const auto& p : d["probes"])
      for (const auto& v : p["values"])
        EXPECT_NEAR(v[0].get<double>(), p["point"][0].get<double>(), 1e-10)
            << p["point"].dump() << " on " << ranks;
  }
  const Outcome outside = fem(2, "heat gen:square-tri3:8 --dt 1 --steps 2 --probe 0.5,1.5 -q");
  EXPECT_EQ(outside.status, 1);
  EXPECT_NE(outside.output.find("--probe '0.5,1.5': the point lies in no cell"), std::string::npos)
      << outside.output;
}

TEST(Drivers, HeatFactorizesOnceAndEndsWhereTheSerialRunEnds) {
  for (const std::string scheme : {"be", "cn", "bdf2"}) {
    SCOPED_TRACE(scheme);
    const std::string args =
        meshes +
        "/plate_hole_v41.msh --dt 0.01 --steps 10 --every 10 --initial 0 --dirichlet hole=1 "
        "--dirichlet left=0 --scheme " +
        scheme + " -q --json ";
    const int matrices = scheme == "bdf2" ? 2 : 1;  // BDF2 starts with a backward-Euler step
    const auto sj = scratch("heat_serial.json"), dj = scratch("heat_dist.json");
    const auto sd = scratch("heat_serial"), dd = scratch("heat_dist");
    fs::remove_all(sd), fs::remove_all(dd);
    ASSERT_EQ(fem(0, "heat " + args + sj.string() + " --output " + sd.string()).status, 0);
    const Outcome r = fem(2, "heat " + args + dj.string() + " --output " + dd.string());
    ASSERT_EQ(r.status, 0) << r.output;
    const auto js = json(dj);
    EXPECT_EQ(js["dist"]["coo_preallocations"], matrices);
    EXPECT_EQ(js["dist"]["preconditioner_setups"],
              matrices);  // one factorization per matrix for the 10 steps
    EXPECT_EQ(js["solver"]["solves"], 10);
    // One counter contract: the distributed run's cache counters are the serial run's.
    const auto serial_json = json(sj);
    for (const char* counter : {"symbolic_analyses", "factorizations", "solves", "cache_hits"})
      if (matrices == 1 || std::string(counter) != "symbolic_analyses") {  // MUMPS analyses each new matrix
        EXPECT_EQ(js["cache"][counter], serial_json["cache"][counter]) << counter;
      }
    EXPECT_EQ(js["cache"]["factorizations"], matrices);
    EXPECT_EQ(js["cache"]["solves"], 10);
    // The last frame: the .pvtu pieces, read back and matched to the serial frame by point.
    const auto serial = fem::mesh::read_vtu(sd / "heat_000001.vtu");
    const auto dist = fem::mesh::read_pvtu(dd / "heat_000001.pvtu");
    std::map<std::array<double, 3>, double> by_point;
    for (std::size_t i = 0; i < serial.num_points(); ++i)
      by_point[{serial.points[3 * i], serial.points[3 * i + 1], serial.points[3 * i + 2]}] =
          serial.point_array("u")->values[i];
    double diff = 0;
    for (std::size_t i = 0; i < dist.num_points(); ++i) {
      auto it = by_point.find({dist.points[3 * i], dist.points[3 * i + 1], dist.points[3 * i + 2]});
      ASSERT_NE(it, by_point.end());
      diff = std::max(diff, std::abs(it->second - dist.point_array("u")->values[i]));
    }
    EXPECT_LE(diff, 1e-10);
  }
}

// Every file and folder under `dir` with its bytes.
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    std::string bytes = "(folder)";
    if (e.is_regular_file()) {
      std::ifstream in(e.path(), std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    out[fs::relative(e.path(), dir).string()] = bytes;
  }
  return out;
}

// A time series is one output under mpirun too: a run that fails at step 5 (its source turns NaN
// at t = 0.05) leaves the previous series (the .pvd, every .pvtu and every rank's piece) as it
// was, and nothing of its own; a run that succeeds replaces it.
TEST(Drivers, AFailedDistributedSeriesLeavesThePreviousOneIntact) {
  const auto dir = scratch("heat_series");
  fs::remove_all(dir);
  const std::string h = "heat " + meshes +
                        "/plate_hole_v41.msh --dt 0.01 --steps 8 --every 1 --dirichlet hole=1 -q --output " +
                        dir.string() + " ";
  ASSERT_EQ(fem(2, h + "--initial 0").status, 0);
  const auto before = snapshot(dir);
  ASSERT_EQ(fem::mesh::read_pvd(dir / "heat.pvd").size(), 9u);
  ASSERT_TRUE(before.count("heat_000008_p1.vtu"));
  const Outcome r = fem(2, h + "--initial 1 --source 'sqrt(0.045 - t)'");
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_EQ(snapshot(dir), before);
  ASSERT_EQ(fem(2, h + "--initial 1").status, 0);
  const auto after = snapshot(dir);
  EXPECT_EQ(after.size(), before.size());
  EXPECT_NE(after.at("heat_000000_p0.vtu"), before.at("heat_000000_p0.vtu"));
  fs::remove_all(dir);
}

TEST(Drivers, BratuTakesTheSerialNewtonIterations) {
  for (const char* lag : {"", " --lag 3 --anderson 2"}) {
    const std::string args = "nonlinear gen:square-tri3:24 --lambda 6 --line-search backtracking" +
                             std::string(lag) + " -q --output ";
    const auto serial = scratch("b_serial.vtu"), dist = scratch("b_dist.vtu");
    const auto sj = scratch("b_serial.json"), dj = scratch("b_dist.json");
    ASSERT_EQ(fem(0, args + serial.string() + " --json " + sj.string()).status, 0);
    for (int ranks : {2, 3}) {
      const Outcome r = fem(ranks, args + dist.string() + " --json " + dj.string());
      ASSERT_EQ(r.status, 0) << r.output;
      EXPECT_EQ(json(dj)["newton"]["iterations"], json(sj)["newton"]["iterations"]) << lag << " on " << ranks;
      EXPECT_EQ(json(dj)["newton"]["jacobian_refreshes"], json(sj)["newton"]["jacobian_refreshes"]);
      EXPECT_LE(difference(dist, serial, "u"), 1e-9);
    }
  }
}

TEST(Drivers, IterativeSolversOnOneProcess) {
  const std::string args = "poisson gen:square-tri3:64 --dirichlet all=0 --source 1 -q --output ";
  const auto serial = scratch("g_serial.vtu");
  ASSERT_EQ(fem(0, args + serial.string()).status, 0);
  for (const char* solver : {"gamg", "hypre"}) {
    const auto out = scratch(std::string("g_") + solver + ".vtu"), j = scratch("g.json");
    const Outcome r =
        fem(0, args + out.string() + " --solver " + solver + " --ksp-rtol 1e-12 --json " + j.string());
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_GT(json(j)["solver"]["iterations"].get<int>(), 0);
    EXPECT_EQ(json(j)["ranks"], 1);
    EXPECT_LE(difference(out, serial, "u"), 1e-9) << solver;
  }
}

// fem stokes and steady fem navier-stokes under mpirun: MUMPS on the mixed space's stacked index
// map gives the serial run (UMFPACK) to 1e-8: the gathered velocity and pressure node by node,
// the solution's ranges, the force and the pressure difference, and the same Newton (and Picard)
// iterations. The cavity's pressure is free (a pinned unknown on the lowest rank that owns one,
// normalized to ∫p = 0 with global sums); the channel's is fixed by its outflow.
struct FlowCase {
  std::string name, args;
  std::vector<int> ranks;
};

void expect_the_serial_flow(const FlowCase& c) {
  SCOPED_TRACE(c.name);
  const auto sv = scratch(c.name + "_serial.vtu"), sj = scratch(c.name + "_serial.json");
  const Outcome s = fem(0, c.args + " -q --output " + sv.string() + " --json " + sj.string());
  ASSERT_EQ(s.status, 0) << s.output;
  const auto serial = json(sj);
  for (int ranks : c.ranks) {
    SCOPED_TRACE(ranks);
    const auto dv = scratch(fmt_name(c.name, ranks)), dj = scratch(fmt_name(c.name, ranks) + ".json");
    const Outcome r = fem(ranks, c.args + " -q --output " + dv.string() + " --json " + dj.string());
    ASSERT_EQ(r.status, 0) << r.output;
    const auto dist = json(dj);
    EXPECT_EQ(dist["ranks"], ranks);
    EXPECT_EQ(dist["solver"]["backend"], "mumps");
    EXPECT_EQ(dist["dofs"], serial["dofs"]);
    EXPECT_EQ(dist["dirichlet_dofs"], serial["dirichlet_dofs"]);
    for (const char* n : {"iterations", "picard_iterations", "jacobian_refreshes"}) {
      EXPECT_EQ(dist["newton"][n], serial["newton"][n]) << n;
    }
    EXPECT_EQ(dist["cache"]["symbolic_analyses"], 1);  // Picard's and Newton's Jacobians: one analysis
    EXPECT_EQ(dist["solution"]["normalization"], serial["solution"]["normalization"]);
    EXPECT_LE(difference(dv, sv, "velocity"), 1e-8);
    EXPECT_LE(difference(dv, sv, "pressure"), 1e-8);
    const double speed = serial["solution"]["max_speed"].get<double>();
    const double p_scale = std::max(std::abs(serial["solution"]["pressure_min"].get<double>()),
                                    std::abs(serial["solution"]["pressure_max"].get<double>()));
    EXPECT_NEAR(dist["solution"]["max_speed"].get<double>(), speed, 1e-8 * speed);
    for (const char* n : {"pressure_min", "pressure_max"}) {
      EXPECT_NEAR(dist["solution"][n].get<double>(), serial["solution"][n].get<double>(), 1e-8 * p_scale)
          << n;
    }
    if (serial.contains("flow")) {
      // The force's components to 1e-8 of its size (the lift is a small difference of large
      // terms), the pressure difference to 1e-8 of the pressure's.
      const double force =
          std::hypot(serial["flow"]["drag"].get<double>(), serial["flow"]["lift"].get<double>());
      for (const char* n : {"drag", "lift"}) {
        EXPECT_NEAR(dist["flow"][n].get<double>(), serial["flow"][n].get<double>(), 1e-8 * force) << n;
      }
      EXPECT_NEAR(dist["flow"]["pressure_difference"].get<double>(),
                  serial["flow"]["pressure_difference"].get<double>(), 1e-8 * p_scale);
    }
  }
}

TEST(Drivers, StokesIsTheSerialFlow) {
  expect_the_serial_flow(
      {"cavity", "stokes gen:square-tri3:16 --velocity all=0,0 --velocity top=1,0", {2, 3}});
  expect_the_serial_flow(
      {"channel",
       "stokes gen:square-tri3:12 --viscosity 0.5 --velocity 'left=4*y*(1-y),0' --velocity "
       "top=0,0 --velocity bottom=0,0 --outflow right --drag bottom --pressure-difference "
       "0.2,0.5:0.8,0.5",
       {2}});
}

TEST(Drivers, SteadyNavierStokesIsTheSerialFlow) {
  // DFG 2D-1 (tests/apps: FemFlow.DfgBenchmark2D1WithinOnePercent): 3 Picard + 3 Newton iterations.
  expect_the_serial_flow(
      {"dfg",
       "navier-stokes " + meshes +
           "/dfg_cylinder_v41.msh --viscosity 1e-3 --velocity "
           "'inlet=4*0.3*y*(0.41-y)/0.41^2,0' --velocity walls=0,0 --velocity cylinder=0,0 "
           "--outflow outlet --drag cylinder --pressure-difference 0.15,0.2:0.25,0.2",
       {2}});
}

// One line from rank 0, whichever rank failed; every rank exits non-zero.
void expect_one_line_error(const Outcome& r, const std::string& words) {
  EXPECT_NE(r.status, 0);
  std::size_t lines = 0, pos = 0;
  while ((pos = r.output.find("fem: error:", pos)) != std::string::npos) ++lines, ++pos;
  EXPECT_EQ(lines, 1u) << r.output;
  EXPECT_NE(r.output.find(words), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("MPI_ABORT"), std::string::npos) << r.output;
}

TEST(Drivers, AnErrorOnAnyRankIsOneLineAndEveryRankFails) {
  // Rank 0 cannot read the mesh.
  expect_one_line_error(fem(2, "poisson " + meshes + "/no_such.msh --dirichlet all=0"), "no_such.msh");
  // A source that is not a number on part of the domain only (x < 0.5): some ranks fail.
  expect_one_line_error(fem(3, "poisson gen:square-tri3:16 --dirichlet all=0 --source 'sqrt(x-0.5)'"),
                        "--source");
  // No Dirichlet condition on a vector problem: its rigid motions are refused in words.
  expect_one_line_error(fem(2, "elasticity gen:square-tri3:8 --traction right=1,0 --traction left=-1,0"),
                        "rigid motions");
  // Unsteady flow stays on one process.
  expect_one_line_error(
      fem(2, "navier-stokes gen:square-tri3:4 --velocity left=1,0 --outflow right --dt 0.1 --steps 2"),
      "one process");
}

// A pure Neumann Poisson problem under mpirun: the constant declared as serially (the mass's
// row sums as its functional), one unknown pinned on the lowest rank: the serial zero-mean
// solution to 1e-8 on 2 and 3 processes; incompatible data refused in words on every process.
TEST(Drivers, APureNeumannProblemIsTheSerialSolution) {
  const std::string args = "poisson gen:square-tri3:16 --neumann all=0 --source 'x-0.5' -q --output ";
  const auto sv = scratch("neumann_serial.vtu");
  ASSERT_EQ(fem(0, args + sv.string()).status, 0);
  for (int ranks : {2, 3}) {
    const auto dv = scratch(fmt_name("neumann", ranks)), dj = scratch("neumann.json");
    const Outcome r = fem(ranks, args + dv.string() + " --json " + dj.string());
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(json(dj)["solution"]["normalization"], "zero_mean");
    EXPECT_LE(difference(dv, sv, "u"), 1e-8) << ranks;
  }
  expect_one_line_error(fem(2, "poisson gen:square-tri3:8 --neumann all=0 --source 1"), "not compatible");
}

// --solver fieldsplit (FGMRES with the Schur complement preconditioned by the pressure mass over
// the viscosity, the velocity block by GAMG) gives the direct solver's answer, on one process
// and on two; its iterations barely grow with the mesh (a 3D channel at 4³ and 8³ cells: 74 and
// 96); a free pressure (pinned, its preconditioner pinned alike), u–p elasticity, and DFG's
// channel at ν = 3e-3 on two processes with the pressure convection–diffusion preconditioner
// (about 370 iterations a solve, where the mass alone took 1000 to 1800).
TEST(Drivers, FieldSplitGivesTheDirectSolution) {
  struct Case {
    std::string name, args;
    int ranks;
  };
  const std::string channel =
      "stokes gen:cube-tet4:{} --velocity 'left=y*(1-y)*z*(1-z),0,0' --velocity bottom=0,0,0 --velocity "
      "top=0,0,0 --velocity front=0,0,0 --velocity back=0,0,0 --outflow right";
  const auto with = [](std::string text, int n) {
    return text.replace(text.find("{}"), 2, std::to_string(n));
  };
  const Case cases[] = {
      {"channel4", with(channel, 4), 2},
      {"channel8", with(channel, 8), 0},
      {"cavity", "stokes gen:square-tri3:16 --velocity all=0,0 --velocity top=1,0", 2},
      {"up",
       "elasticity " + meshes +
           "/annulus_v41.msh --nu all=0.4999 --fixed outer --traction inner=1,0 "
           "--formulation up",
       0},
      {"dfg",
       "navier-stokes " + meshes +
           "/dfg_cylinder_v41.msh --viscosity 3e-3 --velocity "
           "'inlet=4*0.3*y*(0.41-y)/0.41^2,0' --velocity walls=0,0 --velocity cylinder=0,0 --outflow outlet",
       2},
  };
  std::map<std::string, int> iterations;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const bool up = c.name == "up";
    const char* u = up ? "displacement" : "velocity";
    const auto sv = scratch(c.name + "_direct.vtu"), fv = scratch(c.name + "_split.vtu"),
               fj = scratch(c.name + "_split.json");
    const Outcome s = fem(0, c.args + " -q --output " + sv.string());
    ASSERT_EQ(s.status, 0) << s.output;
    const Outcome f = fem(c.ranks, c.args + " --solver fieldsplit --ksp-rtol 1e-12 -q --output " +
                                       fv.string() + " --json " + fj.string());
    ASSERT_EQ(f.status, 0) << f.output;
    const auto j = json(fj);
    EXPECT_EQ(j["solver"]["backend"], "fieldsplit");
    EXPECT_EQ(j["solver"]["method"], "fgmres");
    iterations[c.name] = j["solver"]["iterations"].get<int>();
    EXPECT_GT(iterations[c.name], 0);
    EXPECT_LE(difference(fv, sv, u), 1e-8);
    EXPECT_LE(difference(fv, sv, "pressure"), 1e-7);
  }
  EXPECT_LE(iterations["channel8"], 1.5 * iterations["channel4"]);
  // The field split is the mixed spaces': one field is refused in words, unsteady flow too.
  expect_one_line_error(fem(0, "poisson gen:square-tri3:4 --dirichlet all=0 --solver fieldsplit"), "mixed");
  expect_one_line_error(fem(0,
                            "navier-stokes gen:square-tri3:4 --velocity left=1,0 --outflow right --dt 0.1 "
                            "--steps 2 --solver fieldsplit"),
                        "steady flow");
}

}  // namespace
