// VTU writer and reader: VTK's node order against VTK's reference coordinates, exact round
// trips for every cell type, encoding and compression with point and cell data, PVD series.
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>

#include "../support/test_dir.hpp"
#include "fem/atomic_file.hpp"
#include "fem/error.hpp"
#include "fem/mesh/vtu.hpp"
#include "fem/mesh/write_gmsh.hpp"
#include "test_check_util.hpp"

namespace {

using fem::CellType;
namespace fm = fem::mesh;
namespace fs = std::filesystem;

fs::path temp_dir() { return fem::testing::test_dir("fem_test_vtu"); }

// VTK's parametric coordinates of the nodes of its cells (vtkQuadraticTetra,
// vtkBiQuadraticQuad, vtkTriQuadraticHexahedron, ...), on [0, 1]^d.
std::vector<std::array<double, 3>> vtk_reference(CellType t) {
  switch (t) {
    case CellType::line3:
      return {{0, 0, 0}, {1, 0, 0}, {0.5, 0, 0}};
    case CellType::tri6:
      return {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0.5, 0, 0}, {0.5, 0.5, 0}, {0, 0.5, 0}};
    case CellType::quad9:
      return {{0, 0, 0},   {1, 0, 0},   {1, 1, 0},   {0, 1, 0},    {0.5, 0, 0},
              {1, 0.5, 0}, {0.5, 1, 0}, {0, 0.5, 0}, {0.5, 0.5, 0}};
    case CellType::tet10:
      return {{0, 0, 0},     {1, 0, 0},   {0, 1, 0},   {0, 0, 1},     {0.5, 0, 0},
              {0.5, 0.5, 0}, {0, 0.5, 0}, {0, 0, 0.5}, {0.5, 0, 0.5}, {0, 0.5, 0.5}};
    case CellType::hex27:
      return {{0, 0, 0},     {1, 0, 0},     {1, 1, 0},      {0, 1, 0},     {0, 0, 1},     {1, 0, 1},
              {1, 1, 1},     {0, 1, 1},     {0.5, 0, 0},    {1, 0.5, 0},   {0.5, 1, 0},   {0, 0.5, 0},
              {0.5, 0, 1},   {1, 0.5, 1},   {0.5, 1, 1},    {0, 0.5, 1},   {0, 0, 0.5},   {1, 0, 0.5},
              {1, 1, 0.5},   {0, 1, 0.5},   {0, 0.5, 0.5},  {1, 0.5, 0.5}, {0.5, 0, 0.5}, {0.5, 1, 0.5},
              {0.5, 0.5, 0}, {0.5, 0.5, 1}, {0.5, 0.5, 0.5}};
    default:
      return {};
  }
}

TEST(VtkNodeOrder, MatchesVtkReferenceCoordinates) {
  for (CellType t : {CellType::line3, CellType::tri6, CellType::quad9, CellType::tet10, CellType::hex27}) {
    const auto order = fm::vtk_node_order(t);
    const auto gmsh = fem::reference_nodes(t);
    const auto vtk = vtk_reference(t);
    ASSERT_EQ(order.size(), vtk.size()) << cell_info(t).name;
    const bool simplex = t == CellType::tri6 || t == CellType::tet10;
    for (std::size_t i = 0; i < vtk.size(); ++i)
      for (int d = 0; d < cell_info(t).dim; ++d) {
        const double g = gmsh[order[i]][d];
        EXPECT_DOUBLE_EQ(simplex ? g : (g + 1) / 2, vtk[i][d]) << cell_info(t).name << " VTK node " << i;
      }
  }
}

TEST(VtkNodeOrder, IsAPermutation) {
  for (CellType t : fem::test::all_types()) {
    auto o = fm::vtk_node_order(t);
    std::vector<int> s(o.begin(), o.end());
    std::sort(s.begin(), s.end());
    for (std::size_t i = 0; i < s.size(); ++i) EXPECT_EQ(s[i], static_cast<int>(i));
    EXPECT_EQ(static_cast<int>(s.size()), cell_info(t).num_nodes);
  }
}

struct Case {
  fm::VtuEncoding encoding;
  bool compress;
};

class VtuRoundTrip : public ::testing::TestWithParam<Case> {};

TEST_P(VtuRoundTrip, EveryCellTypeWithPointAndCellData) {
  const auto dir = temp_dir();
  for (CellType t : fem::test::all_types()) {
    const fem::Mesh m = fem::test::small_mesh(t);
    const auto nn = static_cast<std::size_t>(m.num_nodes()), nc = static_cast<std::size_t>(m.num_cells());
    std::vector<double> u(nn), v(3 * nn), p(nc), g(nc * m.gdim());
    for (std::size_t i = 0; i < nn; ++i) {
      u[i] = std::sin(1.0 + std::sqrt(2.0) * i) * 1e-3;
      for (int d = 0; d < 3; ++d) v[3 * i + d] = std::exp(-0.1 * i) * (d + 1) / 3.0 - 1e200 * (i == 1);
    }
    for (std::size_t c = 0; c < nc; ++c) {
      p[c] = 1.0 / (c + 3.0);
      for (int d = 0; d < m.gdim(); ++d) g[c * m.gdim() + d] = std::cbrt(c + d + 0.5);
    }
    const fm::Field pd[] = {{"u", 1, u}, {"velocity & <flow>", 3, v}};
    const fm::Field cd[] = {{"pressure", 1, p}, {"grad", m.gdim(), g}};
    const auto file = dir / (std::string(cell_info(t).name) + ".vtu");
    fm::write_vtu(file, m, pd, cd, {GetParam().encoding, GetParam().compress});

    const auto data = fm::read_vtu(file);
    SCOPED_TRACE(cell_info(t).name);
    ASSERT_EQ(data.num_points(), nn);
    ASSERT_EQ(data.num_cells(), nc);
    for (auto type : data.types) EXPECT_EQ(type, cell_info(t).vtk_type);
    const fem::Mesh back = data.to_mesh();
    EXPECT_EQ(back.gdim(), m.gdim());
    EXPECT_EQ(back.cell_type(), m.cell_type());
    EXPECT_TRUE(std::equal(m.coords().begin(), m.coords().end(), back.coords().begin(), back.coords().end()));
    EXPECT_TRUE(std::equal(m.cells().begin(), m.cells().end(), back.cells().begin(), back.cells().end()));
    EXPECT_TRUE(std::equal(m.cell_tags().begin(), m.cell_tags().end(), back.cell_tags().begin(),
                           back.cell_tags().end()));

    ASSERT_EQ(data.point_data.size(), 2u);
    ASSERT_EQ(data.cell_data.size(), 3u);  // "tag" first
    const auto* ru = data.point_array("u");
    const auto* rv = data.point_array("velocity & <flow>");
    ASSERT_TRUE(ru && rv);
    EXPECT_EQ(ru->values, u);  // exact, in every encoding
    EXPECT_EQ(rv->components, 3);
    EXPECT_EQ(rv->values, v);
    ASSERT_TRUE(data.cell_array("pressure") && data.cell_array("grad") && data.cell_array("tag"));
    EXPECT_EQ(data.cell_array("pressure")->values, p);
    EXPECT_EQ(data.cell_array("grad")->components, m.gdim());
    EXPECT_EQ(data.cell_array("grad")->values, g);
    // VTK node i of each cell sits where Gmsh node order[i] sits.
    const auto order = fm::vtk_node_order(t);
    for (std::size_t c = 0; c < nc; ++c)
      for (int k = 0; k < m.nodes_per_cell(); ++k)
        EXPECT_EQ(data.connectivity[c * m.nodes_per_cell() + k],
                  m.cell(static_cast<fem::index_t>(c))[order[k]]);
  }
  fs::remove_all(dir);
}

TEST_P(VtuRoundTrip, ArraysLargerThanOneCompressionBlock) {
  const auto dir = temp_dir();
  const fem::Mesh m = fm::unit_cube(CellType::hex8, 24);  // 15625 nodes: 375 kB of points
  std::vector<double> u(m.num_nodes());
  for (std::size_t i = 0; i < u.size(); ++i) u[i] = std::cos(0.001 * i);
  const fm::Field pd[] = {{"u", 1, u}};
  fm::write_vtu(dir / "big.vtu", m, pd, {}, {GetParam().encoding, GetParam().compress});
  const auto data = fm::read_vtu(dir / "big.vtu");
  EXPECT_EQ(data.point_data.at(0).values, u);
  const auto back = data.to_mesh();
  EXPECT_TRUE(std::equal(m.cells().begin(), m.cells().end(), back.cells().begin(), back.cells().end()));
  fs::remove_all(dir);
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  static const char* const names[] = {"raw", "base64", "ascii"};
  return std::string(names[static_cast<int>(info.param.encoding)]) + (info.param.compress ? "_zlib" : "");
}

INSTANTIATE_TEST_SUITE_P(AllEncodings, VtuRoundTrip,
                         ::testing::Values(Case{fm::VtuEncoding::appended_raw, false},
                                           Case{fm::VtuEncoding::appended_raw, true},
                                           Case{fm::VtuEncoding::base64, false},
                                           Case{fm::VtuEncoding::base64, true},
                                           Case{fm::VtuEncoding::ascii, false}),
                         case_name);

TEST(Vtu, CompressionMakesRegularDataSmaller) {
  const auto dir = temp_dir();
  const fem::Mesh m = fm::unit_cube(CellType::tet4, 10);
  fm::write_vtu(dir / "a.vtu", m);
  fm::write_vtu(dir / "b.vtu", m, {}, {}, {fm::VtuEncoding::appended_raw, true});
  EXPECT_LT(fs::file_size(dir / "b.vtu"), fs::file_size(dir / "a.vtu") / 2);
  fs::remove_all(dir);
}

TEST(Vtu, RejectsFieldsOfTheWrongSizeAndDuplicateNames) {
  const auto dir = temp_dir();
  const fem::Mesh m = fm::unit_square(CellType::tri3, 2);
  std::vector<double> u(m.num_nodes() + 1);
  const fm::Field bad[] = {{"u", 1, u}};
  EXPECT_THROW(fm::write_vtu(dir / "x.vtu", m, bad), fem::InvalidArgument);
  std::vector<double> w(m.num_nodes());
  const fm::Field twice[] = {{"u", 1, w}, {"u", 1, w}};
  EXPECT_THROW(fm::write_vtu(dir / "x.vtu", m, twice), fem::InvalidArgument);
  EXPECT_THROW(fm::write_vtu(dir / "no" / "such" / "dir.vtu", m), fem::Error);
  fs::remove_all(dir);
}

TEST(Vtu, CorruptFilesAreParseErrorsNamingTheFile) {
  const auto dir = temp_dir();
  const fem::Mesh m = fm::unit_square(CellType::quad4, 3);
  for (bool compress : {false, true}) {
    fm::write_vtu(dir / "ok.vtu", m, {}, {}, {fm::VtuEncoding::appended_raw, compress});
    std::ifstream in(dir / "ok.vtu", std::ios::binary);
    std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto cut = dir / "cut.vtu";
    std::ofstream(cut, std::ios::binary) << s.substr(0, s.size() - 60);
    try {
      fm::read_vtu(cut);
      ADD_FAILURE() << "truncated file accepted";
    } catch (const fem::ParseError& e) {
      EXPECT_EQ(e.file(), cut.string());
      EXPECT_NE(std::string(e.what()).find("cut.vtu"), std::string::npos);
    }
  }
  std::ofstream(dir / "junk.vtu") << "<VTKFile type=\"PolyData\"></VTKFile>";
  EXPECT_THROW(fm::read_vtu(dir / "junk.vtu"), fem::ParseError);
  EXPECT_THROW(fm::read_vtu(dir / "missing.vtu"), fem::Error);
  fs::remove_all(dir);
}

TEST(Pvd, ListsEveryStepAndItsFile) {
  const auto dir = temp_dir();
  const fem::Mesh m = fm::unit_square(CellType::tri3, 4);
  fm::PvdWriter series(dir / "heat.pvd", {fm::VtuEncoding::appended_raw, true});
  std::vector<double> u(m.num_nodes());
  const std::vector<double> times{0.0, 0.125, 1.0 / 3.0};
  std::vector<fs::path> files;
  for (double t : times) {
    for (std::size_t i = 0; i < u.size(); ++i) u[i] = t * i;
    const fm::Field pd[] = {{"u", 1, u}};
    files.push_back(series.write(t, m, pd));
    EXPECT_EQ(files.back().parent_path(), dir);
    EXPECT_FALSE(fs::exists(files.back()));  // published with the .pvd, by commit()
  }
  EXPECT_FALSE(fs::exists(dir / "heat.pvd"));
  series.commit();
  for (const auto& f : files) EXPECT_TRUE(fs::exists(f)) << f;
  const auto steps = fm::read_pvd(dir / "heat.pvd");
  ASSERT_EQ(steps.size(), times.size());
  for (std::size_t k = 0; k < steps.size(); ++k) {
    EXPECT_EQ(steps[k].time, times[k]);  // shortest round-trip form: exact
    EXPECT_EQ(steps[k].file, series.steps()[k].file);
    const auto data = fm::read_vtu(dir / steps[k].file);
    EXPECT_EQ(data.point_array("u")->values.back(), times[k] * (u.size() - 1));
  }
  series.add(2.0, dir / steps[0].file);  // absolute path stored relative to the .pvd
  series.commit();                       // a writer goes on after a commit
  const auto again = fm::read_pvd(dir / "heat.pvd");
  ASSERT_EQ(again.size(), 4u);
  EXPECT_EQ(again[3].file, steps[0].file);
  EXPECT_EQ(again[3].time, 2.0);
  fs::remove_all(dir);
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

std::vector<std::string> files_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// Restores normal writes when a test leaves, also on a failed assertion.
struct InjectedWriteFailure {
  explicit InjectedWriteFailure(std::int64_t after) { fem::detail::fail_writes_after(after); }
  ~InjectedWriteFailure() { fem::detail::fail_writes_after(-1); }
};

// Every writer is all or nothing: a write that fails midway (the disk fills up: here an injected
// ENOSPC) leaves the previous file as it was, and no partial or temporary file.
TEST(AtomicOutput, FailedWritesLeaveThePreviousFilesIntact) {
  const auto dir = temp_dir();
  const fem::Mesh small = fm::unit_square(CellType::tri3, 2), big = fm::unit_square(CellType::tri3, 64);
  fm::write_vtu(dir / "u.vtu", small);
  fm::write_gmsh(small, dir / "m.msh", false);
  const std::string vtu = slurp(dir / "u.vtu"), msh = slurp(dir / "m.msh");
  {
    const InjectedWriteFailure full(1000);
    try {
      fm::write_vtu(dir / "u.vtu", big);
      ADD_FAILURE() << "a full disk went unnoticed";
    } catch (const fem::Error& e) {
      EXPECT_NE(std::string(e.what()).find("u.vtu"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(std::strerror(ENOSPC)), std::string::npos) << e.what();
    }
    EXPECT_THROW(fm::write_gmsh(big, dir / "m.msh", true), fem::Error);
  }
  EXPECT_EQ(slurp(dir / "u.vtu"), vtu);
  EXPECT_EQ(slurp(dir / "m.msh"), msh);
  EXPECT_EQ(files_in(dir), (std::vector<std::string>{"m.msh", "u.vtu"}));

  fs::remove_all(dir);
}

// Every file of a folder and its bytes.
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& f : files_in(dir)) out[f] = slurp(dir / f);
  return out;
}

// A series is one output: a new series that fails at some step (an exception, a full disk while
// writing a frame or its .pvd) leaves the previous series exactly as it was, and nothing of its
// own, not even its private folder.
TEST(AtomicOutput, AFailedSeriesLeavesThePreviousOneIntact) {
  const auto dir = temp_dir();
  const fem::Mesh small = fm::unit_square(CellType::tri3, 2), big = fm::unit_square(CellType::tri3, 64);
  std::vector<double> one(small.num_nodes(), 1.0), two(small.num_nodes(), 2.0);
  const fm::Field first[] = {{"u", 1, one}}, second[] = {{"u", 1, two}};
  {
    fm::PvdWriter series(dir / "s.pvd");
    for (double t : {0.0, 0.5, 1.0}) series.write(t, small, first);
    series.commit();
  }
  const auto before = snapshot(dir);
  ASSERT_EQ(before.size(), 4u);  // s.pvd and three frames

  {  // an exception at the third step (the writer destroyed before commit)
    fm::PvdWriter series(dir / "s.pvd");
    try {
      for (double t : {0.0, 0.25, 0.5}) {
        if (t == 0.5) throw std::runtime_error("step failed");
        series.write(t, small, second);
      }
    } catch (const std::runtime_error&) {
    }
  }
  EXPECT_EQ(snapshot(dir), before);
  {  // a full disk while writing a frame
    fm::PvdWriter series(dir / "s.pvd");
    series.write(0.0, small, second);
    const InjectedWriteFailure full(100);
    EXPECT_THROW(series.write(1.0, big, second), fem::Error);
  }
  EXPECT_EQ(snapshot(dir), before);
  {  // a full disk while writing the .pvd: the frames already moved go back
    fm::PvdWriter series(dir / "s.pvd");
    for (double t : {0.0, 0.25, 0.5, 0.75}) series.write(t, small, second);
    const InjectedWriteFailure full(10);
    EXPECT_THROW(series.commit(), fem::Error);
  }
  EXPECT_EQ(snapshot(dir), before);

  {  // a run that succeeds replaces it, frames and .pvd together
    fm::PvdWriter series(dir / "s.pvd");
    for (double t : {0.0, 0.25}) series.write(t, small, second);
    series.commit();
  }
  const auto steps = fm::read_pvd(dir / "s.pvd");
  ASSERT_EQ(steps.size(), 2u);
  for (const auto& s : steps) EXPECT_EQ(fm::read_vtu(dir / s.file).point_array("u")->values[0], 2.0);
  for (const auto& f : files_in(dir)) EXPECT_EQ(f.find(".tmp"), std::string::npos) << f;
  fs::remove_all(dir);
}

TEST(AtomicOutput, UnwritablePathsAreErrorsInWords) {
  const auto dir = temp_dir();
  const fem::Mesh m = fm::unit_square(CellType::tri3, 2);
  std::ofstream(dir / "plain") << "x";
  auto message = [&](const fs::path& p) {
    try {
      fm::write_vtu(p, m);
    } catch (const fem::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(dir / "plain" / "u.vtu").find("is a file, not a folder"), std::string::npos);
  EXPECT_NE(message(dir / "missing" / "u.vtu").find("does not exist"), std::string::npos);
  EXPECT_NE(message(dir).find("folder"), std::string::npos);
  EXPECT_THROW(fm::PvdWriter(dir / "plain" / "s.pvd"), fem::Error);
  fs::remove_all(dir);
}

}  // namespace
