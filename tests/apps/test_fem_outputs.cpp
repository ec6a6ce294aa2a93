// What the drivers write, as a hostile world treats it: the format follows the extension or the
// run is refused; a path through a regular file is a one-line error; a run that fails midway (a
// full disk, Newton diverging) leaves the previous result intact, writes no partial file and
// never a NaN.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "fem/mesh/vtu.hpp"

namespace {

namespace fs = std::filesystem;
using fem::testing::expect_one_line_naming;
using fem::testing::fem_run;
using fem::testing::run_json;
using fem::testing::slurp;
using fem::testing::temp_dir;

bool no_temporary_files(const fs::path& dir) {
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().filename().string().find(".tmp") != std::string::npos) return false;
  return true;
}

// Every file and folder under `dir` (relative paths) with its bytes.
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    out[fs::relative(e.path(), dir).string()] = e.is_regular_file() ? slurp(e.path()) : "(folder)";
  return out;
}

TEST(FemOutput, FormatFollowsTheExtensionOrTheRunIsRefused) {
  const auto dir = temp_dir();
  const std::string p = "poisson gen:square-tri3:4 --dirichlet all=0 --source 1 ";
  expect_one_line_naming(fem_run(p + "--output '" + (dir / "u.msh").string() + "'", dir), ".vtu");
  EXPECT_FALSE(fs::exists(dir / "u.msh"));
  expect_one_line_naming(
      fem_run("elasticity gen:square-tri3:4 --fixed left --output '" + (dir / "e.pvd").string() + "'", dir),
      ".vtu");
  const std::string h = "heat gen:square-tri3:4 --dt 0.1 --steps 2 ";
  expect_one_line_naming(fem_run(h + "--output '" + (dir / "h.vtu").string() + "'", dir), ".pvd");
  EXPECT_FALSE(fs::exists(dir / "h.vtu"));  // not a folder of that name either
  ASSERT_FALSE(run_json(h + "--output '" + (dir / "series").string() + "'", dir).is_null());
  EXPECT_EQ(fem::mesh::read_pvd(dir / "series" / "heat.pvd").size(), 3u);
  expect_one_line_naming(fem_run("convert gen:square-tri3:4 '" + (dir / "m.txt").string() + "'", dir),
                         ".txt");
  // Missing folders of a well-formed path are made.
  ASSERT_FALSE(run_json(p + "--output '" + (dir / "a" / "b" / "u.vtu").string() + "'", dir).is_null());
  EXPECT_TRUE(fs::exists(dir / "a" / "b" / "u.vtu"));
  fs::remove_all(dir);
}

TEST(FemOutput, PathThroughARegularFileIsAOneLineError) {
  const auto dir = temp_dir();
  const auto plain = dir / "plain";
  std::ofstream(plain) << "not a folder";
  const std::string p = "poisson gen:square-tri3:4 --dirichlet all=0 --source 1 ";
  for (const std::string& args :
       {p + "--output '" + (plain / "u.vtu").string() + "'",
        p + "--json '" + (plain / "x.json").string() + "'",
        "heat gen:square-tri3:4 --dt 0.1 --steps 2 --output '" + (plain / "h.pvd").string() + "'",
        "heat gen:square-tri3:4 --dt 0.1 --steps 2 --output '" + (plain / "sub").string() + "'",
        "convert gen:square-tri3:4 '" + (plain / "m.vtu").string() + "'"}) {
    const auto r = fem_run(args, dir);
    expect_one_line_naming(r, "is a file, not a folder");
    EXPECT_EQ(r.status, 1) << args << "\n" << r.err;  // an input error, not an internal one (4)
  }
  EXPECT_EQ(slurp(plain), "not a folder");
  fs::remove_all(dir);
}

// A time series is one output: a run that fails at some step leaves the previous series (its
// .pvd and every frame) exactly as it was, and no frame, .pvd or temporary file of its own. The
// source turns NaN from t = 0.05 on: the run fails at step 5, after frames 0..4.
TEST(FemOutput, AFailedTimeSeriesLeavesThePreviousOneIntact) {
  const auto dir = temp_dir();
  const auto out = dir / "out";
  const std::string h =
      "heat gen:square-tri3:4 --dt 0.01 --every 1 --dirichlet all=0 --output '" + out.string() + "' ";
  ASSERT_FALSE(run_json(h + "--steps 10 --initial 1", dir).is_null());
  const auto before = snapshot(out);
  ASSERT_EQ(fem::mesh::read_pvd(out / "heat.pvd").size(), 11u);
  const auto r = fem_run(h + "--steps 10 --initial 2 --source 'sqrt(0.045 - t)'", dir);
  EXPECT_NE(r.status, 0) << r.err;
  EXPECT_EQ(snapshot(out), before);
  // A run that succeeds replaces it: frames and .pvd together.
  ASSERT_FALSE(run_json(h + "--initial 2 --steps 3", dir).is_null());
  const auto steps = fem::mesh::read_pvd(out / "heat.pvd");
  ASSERT_EQ(steps.size(), 4u);
  const auto first = fem::mesh::read_vtu(out / steps[0].file);
  const auto& u0 = first.point_array("u")->values;
  EXPECT_EQ(*std::max_element(u0.begin(), u0.end()), 2.0);  // the new initial value
  EXPECT_TRUE(no_temporary_files(dir));
  fs::remove_all(dir);
}

TEST(FemOutput, DivergedNewtonWritesNothingAndKeepsThePreviousFile) {
  const auto dir = temp_dir();
  const std::string out = " --output '" + (dir / "b.vtu").string() + "'";
  ASSERT_FALSE(run_json("nonlinear gen:square-tri3:8 --lambda 1" + out, dir).is_null());
  const std::string good = slurp(dir / "b.vtu");
  const auto r = fem_run("nonlinear gen:square-tri3:8 --lambda 8 --json -" + out, dir);
  EXPECT_EQ(r.status, 3);
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["newton"]["converged"], false);
  EXPECT_FALSE(j.contains("output"));
  EXPECT_EQ(slurp(dir / "b.vtu"), good);
  EXPECT_TRUE(no_temporary_files(dir));
  fs::remove_all(dir);
}

// A small tmpfs that the runs fill up. Mounting needs root (and a kernel that lets this process
// mount); elsewhere the test is skipped with the reason (AtomicOutput.* in the mesh tests covers
// the same with an injected failure).
struct SmallDisk {
  fs::path path;
  bool mounted = false;
  std::string why;
  SmallDisk(const fs::path& at, const char* size) : path(at) {
    fs::create_directories(path);
    if (::geteuid() != 0) {
      why = "not root: cannot mount a small tmpfs";
      return;
    }
    const std::string cmd =
        "mount -t tmpfs -o size=" + std::string(size) + " tmpfs '" + path.string() + "' 2>/dev/null";
    mounted = std::system(cmd.c_str()) == 0;
    if (!mounted) why = "mount -t tmpfs failed here (no CAP_SYS_ADMIN?)";
  }
  ~SmallDisk() {
    if (mounted) std::system(("umount '" + path.string() + "'").c_str());
  }
};

void fill_the_disk(const fs::path& dir) {
  const SmallDisk disk(dir / "disk", "256k");
  if (!disk.mounted) GTEST_SKIP() << disk.why;
  const auto u = disk.path / "u.vtu", json = disk.path / "u.json";
  const std::string p = "poisson --dirichlet all=0 --source 1 --output '" + u.string() + "' --json '" +
                        json.string() + "' gen:square-tri3:";
  ASSERT_EQ(fem_run(p + "4", dir).status, 0);
  const std::string good_vtu = slurp(u), good_json = slurp(json);
  // 128² cells: a .vtu of several MB that cannot fit.
  auto r = fem_run(p + "128", dir);
  expect_one_line_naming(r, "No space left on device");
  expect_one_line_naming(r, "u.vtu");
  EXPECT_EQ(slurp(u), good_vtu);
  EXPECT_EQ(slurp(json), good_json);
  EXPECT_TRUE(no_temporary_files(disk.path));

  // A time series that runs out of space midway: the previous series stays as it was, and
  // nothing of the new one is left.
  fs::remove(u);
  const std::string h = "heat --dt 0.01 --every 1 --dirichlet all=1 --output '" +
                        (disk.path / "h.pvd").string() + "' gen:square-tri3:";
  ASSERT_EQ(fem_run(h + "2 --steps 3", dir).status, 0);
  const auto before = snapshot(disk.path);
  r = fem_run(h + "24 --steps 100", dir);
  expect_one_line_naming(r, "No space left on device");
  EXPECT_EQ(snapshot(disk.path), before);
}

TEST(FemOutput, FullDiskLeavesThePreviousResultIntact) {
  const auto dir = temp_dir();
  fill_the_disk(dir);  // unmounted when it returns
  fs::remove_all(dir);
}

// A JSON summary without its wall-clock times ("timings", "seconds", at any depth).
void strip_times(nlohmann::json& j) {
  if (!j.is_object()) return;
  j.erase("timings");
  j.erase("seconds");
  for (auto& [key, value] : j.items()) strip_times(value);
}

TEST(FemOutput, ARunIsReplayedFromItsWrittenConfig) {
  // Every solver subcommand: --write-config writes the effective options (defaults too), the
  // JSON records them with the version, and --config replays the run to the same JSON.
  const auto dir = temp_dir();
  const std::vector<std::string> runs = {
      "poisson gen:square-tri3:8 --dirichlet left=0 --dirichlet top=x --neumann right=1 --source 'x*y' "
      "--order 2",
      "heat gen:square-tri3:6 --dt 0.01 --steps 3 --dirichlet all=t --initial 'x*y'",
      "elasticity gen:square-quad4:4 --fixed left --traction right=1,0 --nu all=0.25",
      "nonlinear gen:square-tri3:6 --problem quasilinear --source 10"};
  for (const auto& args : runs) {
    const auto config = (dir / "case.toml").string();
    auto first = run_json(args + " --write-config " + config, dir);
    ASSERT_FALSE(first.is_null()) << args;
    EXPECT_EQ(first["options"], slurp(config)) << args;
    EXPECT_FALSE(first["version"].get<std::string>().empty());
    const std::string subcommand = args.substr(0, args.find(' '));
    auto again = run_json(subcommand + " --config " + config, dir);
    ASSERT_FALSE(again.is_null()) << args;
    strip_times(first);
    strip_times(again);
    EXPECT_EQ(again, first) << args;
  }
  // A config file that is not there: a usage error.
  EXPECT_EQ(fem_run("poisson --config " + (dir / "none.toml").string(), dir).status, 2);
}

TEST(FemOutput, VersionSaysWhatWasBuilt) {
  const auto r = fem_run("--version", temp_dir());
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out.rfind("fem ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("build"), std::string::npos) << r.out;
}

TEST(FemStartUp, ASerialRunLoadsNeitherMpiNorPetsc) {
  // The dynamic loader lists every library it loads (LD_DEBUG=files): a serial run, even one
  // that solves, loads no MPI and no PETSc (libfem_dist is dlopen()ed by distributed runs only),
  // and not the CUDA driver (the CUDA runtime loads it at its first call: --device cuda).
  const auto dir = temp_dir();
  const auto err = dir / "loader.txt";
  for (const std::string args : {"--help", "poisson gen:square-tri3:8 --dirichlet all=0 --source 1 -q"}) {
    const std::string cmd = std::string("LD_DEBUG=files '") + FEM_EXECUTABLE + "' " + args +
                            " >/dev/null 2>'" + err.string() + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    const std::string loaded = slurp(err);
    EXPECT_NE(loaded.find("libfem_solve"), std::string::npos) << "LD_DEBUG lists nothing?\n" << loaded;
    EXPECT_EQ(loaded.find("petsc"), std::string::npos) << args;
    EXPECT_EQ(loaded.find("libmpi"), std::string::npos) << args;
    EXPECT_EQ(loaded.find("libcuda.so"), std::string::npos)
        << args;  // the driver: when a device is asked for
  }
}

TEST(FemProgress, ALiveLineOnATerminalOnly) {
  // script(1) gives the run a terminal: time steps and long phases (every phase is long with
  // FEM_PROGRESS_AFTER=0) show a live line; --quiet, the JSON on stdout or a file do not.
  const auto dir = temp_dir();
  const auto out = dir / "terminal.txt";
  auto on_terminal = [&](const std::string& args) {
    const std::string cmd = "script -qec \"FEM_PROGRESS_AFTER=0 '" + std::string(FEM_EXECUTABLE) + "' " +
                            args + " >/dev/null\" '" + out.string() + "' >/dev/null";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    return slurp(out);
  };
  const std::string heat = "heat gen:square-tri3:16 --dt 0.01 --steps 5 --dirichlet all=0 --initial 1";
  const std::string shown = on_terminal(heat);
  if (shown.find("script:") != std::string::npos) GTEST_SKIP() << "no pseudo-terminal here: " << shown;
  EXPECT_NE(shown.find("step 5/5"), std::string::npos) << shown;
  EXPECT_NE(shown.find("ETA"), std::string::npos) << shown;
  EXPECT_NE(shown.find("factorizing"), std::string::npos) << shown;
  EXPECT_EQ(on_terminal(heat + " -q").find("ETA"), std::string::npos);
  EXPECT_EQ(on_terminal(heat + " --json -").find("ETA"), std::string::npos);
  const auto piped = fem_run(heat, dir);  // standard error to a file
  EXPECT_EQ(piped.err.find("ETA"), std::string::npos) << piped.err;
}

}  // namespace
