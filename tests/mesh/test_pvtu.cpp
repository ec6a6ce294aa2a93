// Parallel VTU output without MPI: pieces written by write_vtu, the .pvtu naming them (its
// declarations checked against what the pieces hold), read back concatenated, listed in a .pvd.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <array>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "../support/test_dir.hpp"
#include "fem/atomic_file.hpp"
#include "fem/error.hpp"
#include "fem/mesh/generate.hpp"
#include "fem/mesh/vtu.hpp"

namespace {

using fem::CellType;
namespace fm = fem::mesh;
namespace fs = std::filesystem;

fs::path temp_dir() { return fem::testing::test_dir("fem_test_pvtu", /*fresh=*/true); }

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

double u_at(double x, double y) { return 1.0 + x + 2.0 * y + std::sin(3.0 * x * y); }
double p_at(double x, double y) { return std::exp(x) - y / 3.0; }

// One rank's part of a mesh: its cells, its nodes renumbered locally (interface nodes in both
// parts), its cells tagged 1 + part, with fields computed from the coordinates.
struct Part {
  fem::Mesh mesh;
  std::vector<double> u, velocity, pressure, grad;

  std::vector<fm::Field> point_fields() const { return {{"u", 1, u}, {"velocity", 3, velocity}}; }
  std::vector<fm::Field> cell_fields() const { return {{"pressure", 1, pressure}, {"grad", 2, grad}}; }
};

std::array<double, 2> centroid(const fem::Mesh& m, fem::index_t c) {
  std::array<double, 2> x{0, 0};
  for (auto n : m.cell(c))
    for (int d = 0; d < 2; ++d) x[d] += m.node(n)[d] / m.nodes_per_cell();
  return x;
}

Part make_part(const fem::Mesh& whole, int part) {
  fem::Mesh::Data d;
  d.gdim = whole.gdim();
  d.cell_type = whole.cell_type();
  d.source = "part " + std::to_string(part);
  std::map<fem::index_t, fem::index_t> local;
  for (fem::index_t c = 0; c < whole.num_cells(); ++c) {
    if ((centroid(whole, c)[0] < 0.5) != (part == 0)) continue;
    for (auto n : whole.cell(c)) {
      auto [it, inserted] = local.emplace(n, static_cast<fem::index_t>(local.size()));
      if (inserted)
        for (int k = 0; k < d.gdim; ++k) d.coords.push_back(whole.node(n)[k]);
      d.cells.push_back(it->second);
    }
    d.cell_tags.push_back(1 + part);
  }
  Part p{fem::Mesh(std::move(d)), {}, {}, {}, {}};
  const fem::Mesh& m = p.mesh;
  for (fem::index_t i = 0; i < m.num_nodes(); ++i) {
    const double x = m.node(i)[0], y = m.node(i)[1];
    p.u.push_back(u_at(x, y));
    for (double v : {x * y, -y, 0.25 + part}) p.velocity.push_back(v);
  }
  for (fem::index_t c = 0; c < m.num_cells(); ++c) {
    const auto x = centroid(m, c);
    p.pressure.push_back(p_at(x[0], x[1]));
    p.grad.push_back(x[0] * 10);
    p.grad.push_back(x[1] * 10);
  }
  return p;
}

// Writes both parts as pieces u_p0.vtu and u_p1.vtu of dir/u.pvtu; returns the .pvtu.
fs::path write_parallel(const fs::path& dir, const std::array<Part, 2>& parts, const fm::VtuOptions& o = {}) {
  const fs::path pvtu = dir / "u.pvtu";
  std::vector<std::string> pieces;
  for (int r = 0; r < 2; ++r) {
    const auto piece = fm::pvtu_piece_path(pvtu, r);
    fm::write_vtu(piece, parts[r].mesh, parts[r].point_fields(), parts[r].cell_fields(), o);
    pieces.push_back(piece.string());
  }
  fm::write_pvtu(pvtu, pieces, parts[0].point_fields(), parts[0].cell_fields(), o);
  return pvtu;
}

std::array<Part, 2> split_unit_square(CellType type = CellType::quad4, fem::index_t n = 4) {
  const fem::Mesh whole = fm::unit_square(type, n);
  return {make_part(whole, 0), make_part(whole, 1)};
}

TEST(Pvtu, PiecesReadBackConcatenatedInEveryEncoding) {
  const auto dir = temp_dir();
  const auto parts = split_unit_square();
  ASSERT_EQ(parts[0].mesh.num_cells(), 8);
  ASSERT_EQ(parts[1].mesh.num_cells(), 8);
  ASSERT_EQ(parts[0].mesh.num_nodes(), 15);  // 5 of them on the interface x = 0.5, also in part 1
  for (const fm::VtuOptions o :
       {fm::VtuOptions{}, fm::VtuOptions{fm::VtuEncoding::appended_raw, true},
        fm::VtuOptions{fm::VtuEncoding::base64, true}, fm::VtuOptions{fm::VtuEncoding::ascii, false}}) {
    SCOPED_TRACE(static_cast<int>(o.encoding) * 2 + o.compress);
    const auto pvtu = write_parallel(dir, parts, o);
    const std::string text = slurp(pvtu);
    EXPECT_NE(text.find("<Piece Source=\"u_p0.vtu\"/>"), std::string::npos) << text;
    EXPECT_NE(text.find("<Piece Source=\"u_p1.vtu\"/>"), std::string::npos) << text;

    const fm::VtuData d = fm::read_pvtu(pvtu);
    EXPECT_EQ(d.source, pvtu.string());
    ASSERT_EQ(d.num_points(), 30u);  // interface nodes once per piece
    ASSERT_EQ(d.num_cells(), 16u);
    ASSERT_EQ(d.offsets.size(), 16u);
    for (std::size_t c = 0; c < 16; ++c) {
      EXPECT_EQ(d.types[c], 9);  // VTK_QUAD
      EXPECT_EQ(d.offsets[c], static_cast<std::int64_t>(4 * (c + 1)));
    }
    // Piece 0 first, as written; piece 1's connectivity shifted past piece 0's 15 points.
    const fm::VtuData p1 = fm::read_vtu(dir / "u_p1.vtu");
    for (std::size_t k = 0; k < p1.connectivity.size(); ++k)
      EXPECT_EQ(d.connectivity[32 + k], p1.connectivity[k] + 15);
    EXPECT_TRUE(std::equal(p1.points.begin(), p1.points.end(), d.points.begin() + 45));

    ASSERT_EQ(d.point_data.size(), 2u);
    ASSERT_EQ(d.cell_data.size(), 3u);
    EXPECT_EQ(d.point_data[0].name, "u");
    EXPECT_EQ(d.point_data[1].name, "velocity");
    EXPECT_EQ(d.cell_data[0].name, "tag");  // first, as in the pieces
    EXPECT_EQ(d.cell_data[1].name, "pressure");
    EXPECT_EQ(d.cell_data[2].name, "grad");
    const auto& u = d.point_array("u")->values;
    const auto& vel = d.point_array("velocity")->values;
    ASSERT_EQ(u.size(), 30u);
    ASSERT_EQ(vel.size(), 90u);
    EXPECT_EQ(d.point_array("velocity")->components, 3);
    for (std::size_t i = 0; i < 30; ++i) {
      const double x = d.points[3 * i], y = d.points[3 * i + 1];
      EXPECT_EQ(d.points[3 * i + 2], 0.0);
      EXPECT_EQ(u[i], u_at(x, y)) << i;  // exact in every encoding
      EXPECT_EQ(vel[3 * i], x * y);
      EXPECT_EQ(vel[3 * i + 2], i < 15 ? 0.25 : 1.25);
    }
    const auto& tag = d.cell_array("tag")->values;
    const auto& p = d.cell_array("pressure")->values;
    const auto& grad = d.cell_array("grad")->values;
    ASSERT_EQ(grad.size(), 32u);
    for (std::size_t c = 0; c < 16; ++c) {
      double x = 0, y = 0;
      for (int k = 0; k < 4; ++k) {
        const auto n = static_cast<std::size_t>(d.connectivity[4 * c + k]);
        x += d.points[3 * n] / 4, y += d.points[3 * n + 1] / 4;
      }
      EXPECT_EQ(tag[c], x < 0.5 ? 1 : 2) << c;
      EXPECT_EQ(tag[c], c < 8 ? 1 : 2) << c;
      EXPECT_NEAR(p[c], p_at(x, y), 1e-14) << c;
      EXPECT_NEAR(grad[2 * c], 10 * x, 1e-13);
      EXPECT_NEAR(grad[2 * c + 1], 10 * y, 1e-13);
    }
    // As one mesh: the two parts, not connected at the interface.
    const fem::Mesh back = d.to_mesh();
    EXPECT_EQ(back.gdim(), 2);
    EXPECT_EQ(back.num_nodes(), 30);
    EXPECT_EQ(back.num_cells(), 16);
    EXPECT_EQ(back.cell_tags()[15], 2);
  }
  fs::remove_all(dir);
}

TEST(Pvtu, PiecePathsAreWrittenRelativeToThePvtusFolder) {
  const auto dir = temp_dir();
  const auto parts = split_unit_square(CellType::tri3, 2);
  fs::create_directories(dir / "out" / "pieces");
  const fs::path pvtu = dir / "out" / "u.pvtu";
  fm::write_vtu(dir / "out" / "pieces" / "a.vtu", parts[0].mesh, parts[0].point_fields(),
                parts[0].cell_fields());
  fm::write_vtu(dir / "b.vtu", parts[1].mesh, parts[1].point_fields(), parts[1].cell_fields());
  // A path relative to the current folder, one with '..' in it: both written relative to out/.
  const std::vector<std::string> pieces{
      (dir / "out" / "pieces" / "a.vtu").lexically_relative(fs::current_path()).string(),
      (dir / "out" / ".." / "b.vtu").string()};
  fm::write_pvtu(pvtu, pieces, parts[0].point_fields(), parts[0].cell_fields());
  const std::string text = slurp(pvtu);
  EXPECT_NE(text.find("<Piece Source=\"pieces/a.vtu\"/>"), std::string::npos) << text;
  EXPECT_NE(text.find("<Piece Source=\"../b.vtu\"/>"), std::string::npos) << text;
  const auto d = fm::read_pvtu(pvtu);
  EXPECT_EQ(d.num_cells(), static_cast<std::size_t>(parts[0].mesh.num_cells() + parts[1].mesh.num_cells()));
  EXPECT_EQ(d.num_points(), static_cast<std::size_t>(parts[0].mesh.num_nodes() + parts[1].mesh.num_nodes()));
  EXPECT_EQ(fm::pvtu_piece_path(dir / "s_000003.pvtu", 12), dir / "s_000003_p12.vtu");
  EXPECT_EQ(fm::pvtu_piece_path("u.pvtu", 0), fs::path("u_p0.vtu"));
  fs::remove_all(dir);
}

// ---------------------------------------------------------------------------------------------
// The .pvtu's declarations against its pieces, read from the XML text.

struct Decl {
  std::string section, name, type, components;
  bool operator==(const Decl&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Decl& d) {
  return os << d.section << ":" << d.name << ":" << d.type << ":" << d.components;
}

std::map<std::string, std::string> attributes(const std::string& s) {
  std::map<std::string, std::string> out;
  static const std::regex attr(R"re((\w+)="([^"]*)")re");
  for (std::sregex_iterator it(s.begin(), s.end(), attr), end; it != end; ++it) out[(*it)[1]] = (*it)[2];
  return out;
}

// The data arrays of a .vtu (DataArray in PointData, CellData, Points) or of a .pvtu
// (PDataArray in PPointData, PCellData, PPoints, reported without the P), and the attributes of
// <VTKFile>.
std::vector<Decl> declarations(const std::string& file_text, std::map<std::string, std::string>* vtkfile) {
  const std::string text = file_text.substr(0, file_text.find("<AppendedData"));  // binary after
  static const std::regex tag(R"re(<(/?)(\w+)([^>]*)>)re");
  std::vector<Decl> out;
  std::string section;
  for (std::sregex_iterator it(text.begin(), text.end(), tag), end; it != end; ++it) {
    const bool closing = (*it)[1] == "/";
    std::string name = (*it)[2];
    const std::string rest = (*it)[3];
    if (name == "VTKFile" && !closing && vtkfile) *vtkfile = attributes(rest);
    if (name.size() > 1 && name[0] == 'P' && std::isupper(static_cast<unsigned char>(name[1])))
      name = name.substr(1);
    if (name == "PointData" || name == "CellData" || name == "Points" || name == "Cells")
      section = closing || (!rest.empty() && rest.back() == '/') ? "" : name;
    if (name == "DataArray" && !closing && section != "Cells" && !section.empty()) {
      auto a = attributes(rest);
      EXPECT_TRUE(a.count("Name") && a.count("type") && a.count("NumberOfComponents")) << rest;
      out.push_back({section, a["Name"], a["type"], a["NumberOfComponents"]});
    }
  }
  return out;
}

TEST(Pvtu, DeclaresExactlyTheArraysOfItsPieces) {
  const auto dir = temp_dir();
  const auto parts = split_unit_square(CellType::tri3, 3);
  for (const fm::VtuOptions o :
       {fm::VtuOptions{}, fm::VtuOptions{fm::VtuEncoding::appended_raw, true, 6, false},
        fm::VtuOptions{fm::VtuEncoding::base64, true},
        fm::VtuOptions{fm::VtuEncoding::ascii, true, 6, false}}) {
    SCOPED_TRACE(static_cast<int>(o.encoding) * 4 + o.compress * 2 + o.cell_tags);
    const auto pvtu = write_parallel(dir, parts, o);
    std::map<std::string, std::string> pattrs;
    const auto declared = declarations(slurp(pvtu), &pattrs);
    EXPECT_EQ(pattrs["type"], "PUnstructuredGrid");
    // Points, u, velocity, pressure, grad, and tag when written.
    EXPECT_EQ(declared.size(), 5u + o.cell_tags);
    for (int r = 0; r < 2; ++r) {
      const auto piece = fm::pvtu_piece_path(pvtu, r);
      std::map<std::string, std::string> attrs;
      EXPECT_EQ(declarations(slurp(piece), &attrs), declared) << piece;
      // Same header: its header_type, byte order and compressor.
      for (const char* k : {"version", "byte_order", "header_type", "compressor"})
        EXPECT_EQ(attrs[k], pattrs[k]) << k;
      // And what read_vtu sees in the piece: the same names and components, in the same order.
      const auto data = fm::read_vtu(piece);
      std::vector<Decl> seen;
      for (const auto& a : data.point_data)
        seen.push_back({"PointData", a.name, "", std::to_string(a.components)});
      for (const auto& a : data.cell_data)
        seen.push_back({"CellData", a.name, "", std::to_string(a.components)});
      std::vector<Decl> expected;
      for (auto d : declared)
        if (d.section != "Points") expected.push_back({d.section, d.name, "", d.components});
      EXPECT_EQ(seen, expected);
    }
    const auto d = fm::read_pvtu(pvtu);
    EXPECT_EQ(d.cell_array("tag") != nullptr, o.cell_tags);
  }
  // No fields and no tags: no PPointData and no PCellData, as the pieces have none.
  const fm::VtuOptions bare{fm::VtuEncoding::appended_raw, false, 6, false};
  fm::write_vtu(dir / "bare_p0.vtu", parts[0].mesh, {}, {}, bare);
  const std::vector<std::string> pieces{(dir / "bare_p0.vtu").string()};
  fm::write_pvtu(dir / "bare.pvtu", pieces, {}, {}, bare);
  const std::string text = slurp(dir / "bare.pvtu");
  EXPECT_EQ(text.find("PPointData"), std::string::npos) << text;
  EXPECT_EQ(text.find("PCellData"), std::string::npos) << text;
  EXPECT_EQ(declarations(text, nullptr), declarations(slurp(dir / "bare_p0.vtu"), nullptr));
  EXPECT_EQ(fm::read_pvtu(dir / "bare.pvtu").num_cells(),
            static_cast<std::size_t>(parts[0].mesh.num_cells()));
  fs::remove_all(dir);
}

// ---------------------------------------------------------------------------------------------
// Time series of parallel frames

TEST(Pvtu, PvdListsPvtuFramesRelativeToItsFolder) {
  const auto dir = temp_dir();
  const auto parts = split_unit_square(CellType::quad4, 2);
  const fem::Mesh whole = fm::unit_square(CellType::quad4, 2);
  fm::PvdWriter series(dir / "heat.pvd");
  // Frames wait in a private folder next to the .pvd until commit().
  const fs::path staging = series.next_path().parent_path();
  EXPECT_EQ(staging.parent_path(), dir);
  EXPECT_EQ(series.next_path().filename(), "heat_000000.vtu");
  EXPECT_EQ(series.write(0.0, whole), dir / "heat_000000.vtu");  // a serial frame
  EXPECT_EQ(series.next_path(".pvtu"), staging / "heat_000001.pvtu");
  EXPECT_THROW((void)series.next_path("pvtu"), fem::InvalidArgument);

  // Two parallel frames, as each rank and rank 0 would write them; the second added with a path
  // relative to the current folder.
  for (int step = 1; step <= 2; ++step) {
    const auto pvtu = series.next_path(".pvtu");
    std::vector<std::string> pieces;
    for (int r = 0; r < 2; ++r) {
      const auto piece = fm::pvtu_piece_path(pvtu, r);
      EXPECT_EQ(piece.filename().string(), fmt::format("heat_{:06d}_p{}.vtu", step, r));
      fm::write_vtu(piece, parts[r].mesh, parts[r].point_fields(), parts[r].cell_fields());
      pieces.push_back(piece.string());
    }
    fm::write_pvtu(pvtu, pieces, parts[0].point_fields(), parts[0].cell_fields());
    series.add(0.5 * step, step == 1 ? pvtu : pvtu.lexically_relative(fs::current_path()));
  }
  EXPECT_EQ(series.next_path(), staging / "heat_000003.vtu");
  series.write(1.5, whole);  // and serial again: numbering goes on
  series.commit();           // every frame and piece beside the .pvd, the private folder gone
  EXPECT_FALSE(fs::exists(staging));
  const auto steps = fm::read_pvd(dir / "heat.pvd");
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_EQ(steps[0].file, "heat_000000.vtu");
  EXPECT_EQ(steps[1].file, "heat_000001.pvtu");
  EXPECT_EQ(steps[2].file, "heat_000002.pvtu");
  EXPECT_EQ(steps[3].file, "heat_000003.vtu");
  EXPECT_EQ(steps[2].time, 1.0);
  for (int k : {1, 2}) {
    const auto d = fm::read_pvtu(dir / steps[k].file);
    EXPECT_EQ(d.num_cells(), 4u);
    EXPECT_EQ(d.num_points(), 12u);
    ASSERT_NE(d.point_array("u"), nullptr);
  }
  EXPECT_EQ(fm::read_vtu(dir / steps[3].file).num_cells(), 4u);
  fs::remove_all(dir);
}

// ---------------------------------------------------------------------------------------------
// Errors

TEST(Pvtu, MissingOrInconsistentPiecesAreParseErrorsNamingThem) {
  const auto dir = temp_dir();
  const auto parts = split_unit_square(CellType::tri3, 2);
  const auto pvtu = write_parallel(dir, parts);
  const auto message = [&]() -> std::string {
    try {
      fm::read_pvtu(pvtu);
    } catch (const fem::ParseError& e) {
      EXPECT_EQ(e.file(), pvtu.string());
      return e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not a ParseError: " << e.what();
      return e.what();
    }
    return "no error";
  };
  const auto contains = [](const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
  };

  // A piece that is not there.
  fs::remove(dir / "u_p1.vtu");
  std::string m = message();
  EXPECT_TRUE(contains(m, "u_p1.vtu") && contains(m, std::strerror(ENOENT))) << m;

  // A piece without an array the .pvtu declares.
  const fm::Field only_u[] = {{"u", 1, parts[1].u}};
  fm::write_vtu(dir / "u_p1.vtu", parts[1].mesh, only_u, parts[1].cell_fields());
  m = message();
  EXPECT_TRUE(contains(m, "u_p1.vtu") && contains(m, "point array 'velocity'")) << m;

  // A cell array with other components than declared.
  const fm::Field grad_as_1[] = {{"pressure", 1, parts[1].pressure}, {"grad", 1, parts[1].pressure}};
  fm::write_vtu(dir / "u_p1.vtu", parts[1].mesh, parts[1].point_fields(), grad_as_1);
  m = message();
  EXPECT_TRUE(contains(m, "u_p1.vtu") && contains(m, "'grad'") && contains(m, "1 components")) << m;

  // Without cell tags in a piece while the .pvtu declares them.
  fm::write_vtu(dir / "u_p1.vtu", parts[1].mesh, parts[1].point_fields(), parts[1].cell_fields(),
                {fm::VtuEncoding::appended_raw, false, 6, false});
  m = message();
  EXPECT_TRUE(contains(m, "u_p1.vtu") && contains(m, "cell array 'tag'")) << m;

  // A piece with arrays beyond the declared ones is read: they are dropped.
  std::vector<double> extra(parts[1].mesh.num_nodes(), 7.0);
  auto more = parts[1].point_fields();
  more.push_back({"extra", 1, extra});
  fm::write_vtu(dir / "u_p1.vtu", parts[1].mesh, more, parts[1].cell_fields());
  EXPECT_EQ(fm::read_pvtu(pvtu).point_array("extra"), nullptr);

  // Corrupt piece content: read_vtu's ParseError, naming the piece.
  const std::string piece = slurp(dir / "u_p1.vtu");
  std::ofstream(dir / "u_p1.vtu", std::ios::binary) << piece.substr(0, piece.size() - 80);
  try {
    fm::read_pvtu(pvtu);
    ADD_FAILURE() << "truncated piece accepted";
  } catch (const fem::ParseError& e) {
    EXPECT_EQ(e.file(), (dir / "u_p1.vtu").string());
  }

  // Not a .pvtu, no pieces, a .pvtu that is not there.
  EXPECT_THROW(fm::read_pvtu(dir / "u_p0.vtu"), fem::ParseError);
  std::ofstream(dir / "empty.pvtu") << "<VTKFile type=\"PUnstructuredGrid\"><PUnstructuredGrid/></VTKFile>";
  EXPECT_THROW(fm::read_pvtu(dir / "empty.pvtu"), fem::ParseError);
  EXPECT_THROW(fm::read_pvtu(dir / "missing.pvtu"), fem::Error);
  fs::remove_all(dir);
}

// Restores normal writes when a test leaves, also on a failed assertion.
struct InjectedWriteFailure {
  explicit InjectedWriteFailure(std::int64_t after) { fem::detail::fail_writes_after(after); }
  ~InjectedWriteFailure() { fem::detail::fail_writes_after(-1); }
};

TEST(Pvtu, UnwritableFoldersAndBadLayoutsAreErrorsInWords) {
  const auto dir = temp_dir();
  const auto parts = split_unit_square(CellType::tri3, 2);
  const std::vector<std::string> pieces{"u_p0.vtu", "u_p1.vtu"};
  const auto pd = parts[0].point_fields();
  const auto cd = parts[0].cell_fields();
  std::ofstream(dir / "plain") << "x";
  const auto message = [&](const fs::path& p) {
    try {
      fm::write_pvtu(p, pieces, pd, cd);
    } catch (const fem::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string m = message(dir / "missing" / "u.pvtu");
  EXPECT_NE(m.find("does not exist"), std::string::npos) << m;
  EXPECT_NE(m.find("u.pvtu"), std::string::npos) << m;
  m = message(dir / "plain" / "u.pvtu");
  EXPECT_NE(m.find("is a file, not a folder"), std::string::npos) << m;
  EXPECT_NE(message(dir).find("folder"), std::string::npos);

  // The layout is checked as write_vtu checks the fields (values ignored: empty here).
  const fm::Field twice[] = {{"u", 1, {}}, {"u", 3, {}}};
  const fm::Field tag[] = {{"tag", 1, {}}};
  const fm::Field none[] = {{"", 1, {}}};
  const fm::Field zero[] = {{"u", 0, {}}};
  const auto pvtu = dir / "u.pvtu";
  EXPECT_THROW(fm::write_pvtu(pvtu, pieces, twice, {}), fem::InvalidArgument);
  EXPECT_THROW(fm::write_pvtu(pvtu, pieces, {}, tag), fem::InvalidArgument);
  EXPECT_NO_THROW(fm::write_pvtu(pvtu, pieces, {}, tag, {fm::VtuEncoding::appended_raw, false, 6, false}));
  EXPECT_THROW(fm::write_pvtu(pvtu, pieces, none, {}), fem::InvalidArgument);
  EXPECT_THROW(fm::write_pvtu(pvtu, pieces, zero, {}), fem::InvalidArgument);
  EXPECT_THROW(fm::write_pvtu(pvtu, {}, pd, cd), fem::InvalidArgument);
  const std::vector<std::string> empty_piece{"u_p0.vtu", ""};
  EXPECT_THROW(fm::write_pvtu(pvtu, empty_piece, pd, cd), fem::InvalidArgument);

  // All or nothing: a failed write leaves the previous .pvtu.
  fm::write_pvtu(pvtu, pieces, pd, cd);
  const std::string before = slurp(pvtu);
  {
    const InjectedWriteFailure full(10);
    EXPECT_THROW(fm::write_pvtu(pvtu, pieces, {}, {}), fem::Error);
  }
  EXPECT_EQ(slurp(pvtu), before);
  fs::remove_all(dir);
}

}  // namespace
