// The fem executable as a user runs it: `fem info --json -` on generated meshes (counts, tags,
// bounding box, check), `fem convert` to .vtu and .msh read back, and one-line errors.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli.hpp"
#include "fem/mesh/generate.hpp"
#include "fem/mesh/read.hpp"
#include "fem/mesh/vtu.hpp"

namespace {

namespace fs = std::filesystem;
using fem::CellType;

using fem::testing::CliResult;
using fem::testing::expect_one_line_naming;
using fem::testing::fem_run;
using fem::testing::slurp;
using fem::testing::temp_dir;

const nlohmann::json* find_tag(const nlohmann::json& tags, int dim, int tag) {
  for (const auto& t : tags)
    if (t["dim"] == dim && t["tag"] == tag) return &t;
  return nullptr;
}

TEST(FemInfo, JsonOnStandardOutputForGeneratedMeshes) {
  const auto dir = temp_dir();
  struct Case {
    std::string spec;
    CellType type;
    long cells, nodes, facets_per_side;
    int sides;
  };
  const int n = 4;
  for (const Case& c :
       {Case{"gen:square-tri3:4", CellType::tri3, 2 * n * n, (n + 1) * (n + 1), n, 4},
        Case{"gen:square-quad4:4", CellType::quad4, n * n, (n + 1) * (n + 1), n, 4},
        Case{"gen:cube-tet4:4", CellType::tet4, 6 * n * n * n, (n + 1) * (n + 1) * (n + 1), 2 * n * n, 6},
        Case{"gen:cube-hex8:4", CellType::hex8, n * n * n, (n + 1) * (n + 1) * (n + 1), n * n, 6},
        Case{"gen:interval-line2:4", CellType::line2, n, n + 1, 1, 2}}) {
    SCOPED_TRACE(c.spec);
    const CliResult r = fem_run("info " + c.spec + " --json -", dir);
    ASSERT_EQ(r.status, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);  // standard output is nothing but the JSON
    EXPECT_EQ(j["cells"], c.cells);
    EXPECT_EQ(j["nodes"], c.nodes);
    EXPECT_EQ(j["cell_type"], std::string(fem::cell_info(c.type).name));
    const int tdim = fem::cell_info(c.type).dim;
    const auto* domain = find_tag(j["tags"], tdim, fem::mesh::domain_tag);
    ASSERT_TRUE(domain);
    EXPECT_EQ((*domain)["count"], c.cells);
    EXPECT_EQ((*domain)["name"], "domain");
    for (int side = 1; side <= c.sides; ++side) {
      const auto* t = find_tag(j["tags"], tdim - 1, side);
      ASSERT_TRUE(t) << "side " << side;
      EXPECT_EQ((*t)["count"], c.facets_per_side);
    }
    const auto& bb = j["bounding_box"];
    ASSERT_EQ(bb["min"].size(), static_cast<std::size_t>(tdim));
    for (int d = 0; d < tdim; ++d) {
      EXPECT_EQ(bb["min"][d], 0.0);
      EXPECT_EQ(bb["max"][d], 1.0);
    }
    const auto& ck = j["check"];
    EXPECT_EQ(ck["ok"], true);
    for (const char* k : {"inverted", "degenerate", "tangled", "duplicate_nodes", "unreferenced_nodes",
                          "untagged_boundary_facets", "tagged_interior_facets"})
      EXPECT_EQ(ck[k], 0) << k;
    EXPECT_GT(j["bytes"].get<long>(), c.nodes * static_cast<long>(sizeof(double)) * tdim);
  }
  fs::remove_all(dir);
}

TEST(FemInfo, JsonToFileAndTextOnStandardOutput) {
  const auto dir = temp_dir();
  const CliResult r = fem_run("info gen:square-tri3:3 --json '" + (dir / "info.json").string() + "'", dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(r.out.empty());
  const auto j = nlohmann::json::parse(slurp(dir / "info.json"));
  EXPECT_EQ(j["cells"], 18);
  fs::remove_all(dir);
}

TEST(FemConvert, VtuOfGeneratedMeshesReadsBackAsTheSameMesh) {
  const auto dir = temp_dir();
  for (const std::string opts : {"", " --encoding base64 --compress", " --encoding ascii"})
    for (const auto& [spec, mesh] :
         {std::pair{std::string("gen:cube-tet4:3"), fem::mesh::unit_cube(CellType::tet4, 3)},
          std::pair{std::string("gen:square-quad4:5"), fem::mesh::unit_square(CellType::quad4, 5)}}) {
      SCOPED_TRACE(spec + opts);
      const auto out = dir / "out.vtu";
      const CliResult r = fem_run("convert " + spec + " '" + out.string() + "'" + opts, dir);
      ASSERT_EQ(r.status, 0) << r.err;
      const auto back = fem::mesh::read_vtu(out).to_mesh();
      EXPECT_EQ(back.cell_type(), mesh.cell_type());
      EXPECT_TRUE(
          std::equal(mesh.coords().begin(), mesh.coords().end(), back.coords().begin(), back.coords().end()));
      EXPECT_TRUE(
          std::equal(mesh.cells().begin(), mesh.cells().end(), back.cells().begin(), back.cells().end()));
      EXPECT_TRUE(std::equal(mesh.cell_tags().begin(), mesh.cell_tags().end(), back.cell_tags().begin(),
                             back.cell_tags().end()));
    }
  fs::remove_all(dir);
}

TEST(FemConvert, MshReadsBackWithItsTaggedFacets) {
  const auto dir = temp_dir();
  const auto out = dir / "cube.msh";
  const CliResult r = fem_run("convert gen:cube-hex8:2 '" + out.string() + "'", dir);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto mesh = fem::mesh::unit_cube(CellType::hex8, 2);
  const auto back = fem::mesh::read(out);
  EXPECT_EQ(back.num_cells(), mesh.num_cells());
  EXPECT_EQ(back.num_facets(), mesh.num_facets());
  // and fem info on the written file agrees with the generated mesh
  const CliResult info = fem_run("info '" + out.string() + "' --json -", dir);
  ASSERT_EQ(info.status, 0) << info.err;
  const auto j = nlohmann::json::parse(info.out);
  EXPECT_EQ(j["cells"], 8);
  EXPECT_EQ(j["check"]["ok"], true);
  EXPECT_EQ(j["check"]["untagged_boundary_facets"], 0);
  fs::remove_all(dir);
}

TEST(FemCli, MissingFileIsOneLineNamingItAndAnError) {
  const auto dir = temp_dir();
  const std::string missing = (dir / "no_such_mesh.msh").string();
  expect_one_line_naming(fem_run("info '" + missing + "'", dir), "no_such_mesh.msh");
  expect_one_line_naming(fem_run("convert '" + missing + "' '" + (dir / "x.vtu").string() + "'", dir),
                         "no_such_mesh.msh");
  fs::remove_all(dir);
}

// One exit code per class of outcome (the table in README.md), never CLI11's own 101-114:
// 2 usage, 1 input refused, 3 numerical failure, 0 success and --help.
TEST(FemCli, ExitCodesFollowTheClassOfTheError) {
  const auto dir = temp_dir();
  auto expect_code = [&](const std::string& args, int code) {
    const CliResult r = fem_run(args, dir);
    EXPECT_EQ(r.status, code) << args << "\n" << r.err;
    if (code != 0) {
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << "\n" << r.err;
    }
  };
  expect_code("--help", 0);
  expect_code("poisson --help", 0);
  expect_code("info gen:square-tri3:2", 0);
  // Usage: what CLI11 checks while parsing, before any work.
  expect_code("", 2);                                              // no subcommand
  expect_code("no-such-command", 2);                               // unknown subcommand
  expect_code("info gen:square-tri3:2 --no-such-option", 2);       // unknown option (CLI11: 109)
  expect_code("info", 2);                                          // missing argument (CLI11: 106)
  expect_code("heat gen:square-tri3:4 --dt 0.1 --steps 0", 2);     // out of range (CLI11: 105)
  expect_code("heat gen:square-tri3:4 --dt 0.1 --steps many", 2);  // not a number
  expect_code("poisson gen:square-tri3:4 --solver no-such-solver", 2);
  // Input refused: the file, the tags, the expressions.
  expect_code("info '" + (dir / "no_such_mesh.msh").string() + "'", 1);
  expect_code("poisson gen:square-tri3:4 --dirichlet ceiling=0", 1);
  expect_code("poisson gen:square-tri3:4 --dirichlet all=0 --source 'sin(x'", 1);
  expect_code("poisson gen:square-tri3:4 --dirichlet all=0 --source '1,5'", 1);
  // Numerical failure: accepted, but no trustworthy answer.
  expect_code("elasticity gen:square-tri3:4 --traction right=1,0", 3);  // free rigid motions, unbalanced
  expect_code("poisson gen:square-tri3:4 --source 1", 3);               // pure Neumann, ∫f ≠ 0
  expect_code("nonlinear gen:square-tri3:16 --problem bratu --lambda 7 --quiet", 3);  // Bratu past the fold
  fs::remove_all(dir);
}

TEST(FemCli, CorruptFileAndBadSpecsAreOneLineErrors) {
  const auto dir = temp_dir();
  std::ofstream(dir / "broken.msh") << "$MeshFormat\n4.1 0 8\n$EndMeshFormat\n$Nodes\n1 2\n";
  expect_one_line_naming(fem_run("info '" + (dir / "broken.msh").string() + "'", dir), "broken.msh");
  expect_one_line_naming(fem_run("info gen:sphere-tri3:4", dir), "gen:sphere-tri3:4");
  expect_one_line_naming(fem_run("info gen:square-tri3:zero", dir), "gen:square-tri3:zero");
  expect_one_line_naming(fem_run("convert gen:square-tri3:2 '" + (dir / "x.stl").string() + "'", dir),
                         "x.stl");
  fs::remove_all(dir);
}

}  // namespace

namespace {

// The drivers on the sample meshes (meshes/README.md): every one is clean and fully tagged, and
// converts to a .vtu that reads back as the same cells.
TEST(FemInfo, SampleMeshesAreCleanAndConvertToVtu) {
  const auto dir = temp_dir();
  int seen = 0;
  for (const char* name : {"plate_hole_v41.msh", "annulus_v41.msh", "annulus_p2_v41.msh", "lshape_v41.msh",
                           "cylinder_v41.msh"}) {
    const fs::path file = fs::path(FEM_MESHES_DIR) / name;
    if (!fs::exists(file)) continue;
    ++seen;
    SCOPED_TRACE(name);
    const CliResult info = fem_run("info '" + file.string() + "' --json -", dir);
    ASSERT_EQ(info.status, 0) << info.err;
    const auto j = nlohmann::json::parse(info.out);
    EXPECT_EQ(j["check"]["ok"], true) << j["check"].dump();
    EXPECT_EQ(j["check"]["untagged_boundary_facets"], 0);
    long tagged_facets = 0;
    for (const auto& t : j["tags"])
      if (t["dim"] == j["tdim"].get<int>() - 1) tagged_facets += t["count"].get<long>();
    EXPECT_EQ(tagged_facets, j["boundary_facets"].get<long>());

    const auto out = dir / "sample.vtu";
    const CliResult conv = fem_run("convert '" + file.string() + "' '" + out.string() + "' --compress", dir);
    ASSERT_EQ(conv.status, 0) << conv.err;
    const auto mesh = fem::mesh::read(file);
    const auto back = fem::mesh::read_vtu(out).to_mesh(mesh.gdim());
    EXPECT_EQ(back.cell_type(), mesh.cell_type());
    EXPECT_TRUE(
        std::equal(mesh.cells().begin(), mesh.cells().end(), back.cells().begin(), back.cells().end()));
    EXPECT_TRUE(
        std::equal(mesh.coords().begin(), mesh.coords().end(), back.coords().begin(), back.coords().end()));
  }
  if (seen == 0) GTEST_SKIP() << "no sample meshes in " << FEM_MESHES_DIR;
  fs::remove_all(dir);
}

}  // namespace
