// Gmsh and MEDIT readers on data made in the test: exact round trips of generated meshes through
// write_gmsh in every format, tag handling, and bad input that must give a ParseError naming the
// file and the line or byte offset.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "fem/error.hpp"
#include "fem/mesh/mesh.hpp"

namespace {

using fem::CellType;
using fem::Mesh;
using fem::ParseError;
using fem::mesh::GmshVersion;
using fem::mesh::GmshWriteOptions;

void expect_same(const Mesh& a, const Mesh& b) {
  EXPECT_EQ(a.gdim(), b.gdim());
  EXPECT_EQ(a.cell_type(), b.cell_type());
  EXPECT_TRUE(std::ranges::equal(a.coords(), b.coords()));
  EXPECT_TRUE(std::ranges::equal(a.cells(), b.cells()));
  EXPECT_TRUE(std::ranges::equal(a.cell_tags(), b.cell_tags()));
  EXPECT_TRUE(std::ranges::equal(a.facets(), b.facets()));
  EXPECT_TRUE(std::ranges::equal(a.facet_tags(), b.facet_tags()));
  ASSERT_EQ(a.names().size(), b.names().size());
  for (std::size_t i = 0; i < a.names().size(); ++i) {
    EXPECT_EQ(a.names()[i].dim, b.names()[i].dim);
    EXPECT_EQ(a.names()[i].tag, b.names()[i].tag);
    EXPECT_EQ(a.names()[i].name, b.names()[i].name);
  }
}

std::vector<Mesh> generated() {
  namespace m = fem::mesh;
  std::vector<Mesh> v;
  v.push_back(m::interval(7, -1.0, 2.5));
  v.push_back(m::rectangle(CellType::tri3, 5, 3, {0.1, -0.3}, {1.0 / 3.0, 2.0}));
  v.push_back(m::rectangle(CellType::quad4, 4, 6));
  v.push_back(m::box(CellType::tet4, 3, 2, 4, {0, 0, 0}, {1.0, 0.7, 1e-3}));
  v.push_back(m::box(CellType::hex8, 2, 3, 2));
  return v;
}

struct Format {
  GmshVersion version;
  bool binary;
  std::endian order;
};
const Format kFormats[] = {
    {GmshVersion::msh22, false, std::endian::native}, {GmshVersion::msh22, true, std::endian::native},
    {GmshVersion::msh41, false, std::endian::native}, {GmshVersion::msh41, true, std::endian::native},
    {GmshVersion::msh22, true, std::endian::big},     {GmshVersion::msh41, true, std::endian::big}};

TEST(ReadGmsh, GeneratedMeshesRoundTripExactlyInEveryFormat) {
  for (const Mesh& m : generated())
    for (const Format& f : kFormats) {
      SCOPED_TRACE(fmt::format("{} v{} binary={} big={}", m.source(),
                               f.version == GmshVersion::msh41 ? "4.1" : "2.2", f.binary,
                               f.order == std::endian::big));
      const std::string bytes = fem::mesh::to_gmsh(m, GmshWriteOptions{f.version, f.binary, f.order});
      const Mesh r = fem::mesh::read_gmsh(bytes, "roundtrip.msh");
      expect_same(m, r);
      EXPECT_EQ(r.source(), "roundtrip.msh");
    }
}

TEST(ReadGmsh, WriteAndReadFileAndDispatchOnContent) {
  const Mesh m = fem::mesh::box(CellType::tet4, 2, 2, 2);
  const auto dir = std::filesystem::temp_directory_path();
  const auto file = dir / fmt::format("fem_test_read_{}.msh", ::getpid());
  const auto renamed = dir / fmt::format("fem_test_read_{}.dat", ::getpid());
  fem::mesh::write_gmsh(m, file, true);
  expect_same(m, fem::mesh::read_gmsh(file));
  std::filesystem::rename(file, renamed);
  const Mesh r = fem::mesh::read(renamed);  // no .msh extension: recognised by content
  expect_same(m, r);
  EXPECT_EQ(r.source(), renamed.string());
  std::filesystem::remove(renamed);
  EXPECT_THROW(fem::mesh::read(dir / "fem_no_such_file.msh"), ParseError);
}

// Hand-written MSH 4.1: non-contiguous node tags, an entity in two physical groups, points and
// edges that are not facets of a 3D mesh, a partitioned-entities section, an unknown section.
constexpr const char* kHandWritten41 = R"($MeshFormat
4.1 0 8
$EndMeshFormat
$Comments
anything $Nodes here is ignored
$EndComments
$PhysicalNames
3
1 7 "edge"
2 5 "outer"
3 9 "domain"
$EndPhysicalNames
$Entities
1 1 1 1
1 0 0 0 0
1 0 0 0 1 0 0 1 7 0
1 0 0 0 1 1 1 2 5 11 0
1 0 0 0 1 1 1 1 9 0
$EndEntities
$PartitionedEntities
1
0
0 0 0 0
$EndPartitionedEntities
$Nodes
2 4 10 1000
3 1 0 2
1000
10
0 0 0
1 0 0
2 1 0 2
20
500
0 1 0
0 0 1
$EndNodes
$Elements
4 5 1 5
0 1 15 1
1 10
1 1 1 1
2 10 1000
2 1 2 2
3 10 1000 20
4 10 20 500
3 1 4 1
5 10 1000 20 500
$EndElements
)";

TEST(ReadGmsh, TagsEntitiesAndNonContiguousNodes) {
  const Mesh m = fem::mesh::read_gmsh(kHandWritten41, "hand.msh");
  EXPECT_EQ(m.cell_type(), CellType::tet4);
  EXPECT_EQ(m.gdim(), 3);
  ASSERT_EQ(m.num_nodes(), 4);
  ASSERT_EQ(m.num_cells(), 1);
  // nodes in file order: tags 1000, 10, 20, 500
  EXPECT_EQ((std::vector<int>(m.cell(0).begin(), m.cell(0).end())), (std::vector<int>{1, 0, 2, 3}));
  EXPECT_EQ(m.cell_tags()[0], 9);
  // two triangles, each in physical groups 5 and 11: two facets, each of the set {5, 11}
  ASSERT_EQ(m.num_facets(), 2);
  EXPECT_EQ(m.facet_tags()[0], m.facet_tags()[1]);
  EXPECT_LT(m.facet_tags()[0], 0);
  EXPECT_EQ(m.groups(2, m.facet_tags()[0]), (std::vector<int>{5, 11}));
  EXPECT_TRUE(m.in_group(2, m.facet_tags()[1], 11));
  EXPECT_FALSE(m.in_group(2, m.facet_tags()[1], 9));
  EXPECT_EQ(m.tags(2), (std::vector<int>{5, 11}));
  EXPECT_EQ((std::vector<int>(m.facet(0).begin(), m.facet(0).end())), (std::vector<int>{1, 0, 2}));
  EXPECT_EQ(m.tag_of("outer"), 5);
  EXPECT_EQ(m.name_of(3, 9), "domain");
  EXPECT_EQ(m.names().size(), 3u);
}

// Node tags: not contiguous (a dense table) and very sparse (a sorted lookup), in MSH 4.1 (two
// blocks) and 2.2.
std::string nodes41(const std::string& t, const std::string& t2) {
  return "$MeshFormat\n4.1 0 8\n$EndMeshFormat\n$Nodes\n2 5 3 " + t + "\n2 1 0 3\n3\n" + t +  // lines 1-8
         "\n5\n0 0 0\n1 0 0\n0 1 0\n2 2 0 2\n" + t2 +                                         // lines 9-14
         "\n9\n1 0 0\n2 2 0\n$EndNodes\n$Elements\n1 1 1 1\n2 1 2 1\n1 3 " + t + " 5\n$EndElements\n";
}
std::string nodes22(const std::string& t, const std::string& t2) {
  return "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n4\n3 0 0 0\n" + t +  // lines 1-7
         " 1 0 0\n5 0 1 0\n" + t2 +                                          // lines 7-9
         " 1 0 0\n$EndNodes\n$Elements\n1\n1 2 2 0 1 3 " + t + " 5\n$EndElements\n";
}

TEST(ReadGmsh, SparseNodeTags) {
  for (std::uint64_t big : {std::uint64_t{7}, std::uint64_t{1} << 40}) {
    const std::string t = std::to_string(big), t2 = std::to_string(big + 1);
    for (const auto& [file, nodes] : {std::pair{nodes41(t, t2), 5}, std::pair{nodes22(t, t2), 4}}) {
      const Mesh m = fem::mesh::read_gmsh(file, "tags.msh");
      ASSERT_EQ(m.num_nodes(), nodes) << big;
      ASSERT_EQ(m.num_cells(), 1);
      const auto c = m.cell(0);  // tags 3, t, 5
      EXPECT_EQ(m.node(c[0])[0], 0.0);
      EXPECT_EQ(m.node(c[1])[0], 1.0);
      EXPECT_EQ(m.node(c[2])[1], 1.0);
    }
  }
}

// ---- bad input ------------------------------------------------------------------------------

// The error must name the file and the line (ASCII) or byte offset (binary). Returns the message.
std::string expect_parse_error(std::string_view bytes, ParseError::Position kind, std::uint64_t position = 0,
                               bool medit = false) {
  const std::string name = "bad-input.msh";
  try {
    if (medit)
      fem::mesh::read_medit(bytes, name);
    else
      fem::mesh::read_gmsh(bytes, name);
    ADD_FAILURE() << "no ParseError for input of " << bytes.size() << " bytes";
  } catch (const ParseError& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.file(), name);
    EXPECT_NE(what.find(name), std::string::npos) << what;
    EXPECT_EQ(e.position_kind(), kind) << what;
    EXPECT_NE(what.find(std::to_string(e.position())), std::string::npos) << what;
    if (position) {
      EXPECT_EQ(e.position(), position) << what;
    }
    return what;
  }
  return {};
}

// An error about something given twice must also name where it was given first.
void expect_names(const std::string& what, std::initializer_list<std::string> parts) {
  for (const std::string& p : parts)
    EXPECT_NE(what.find(p), std::string::npos) << "'" << p << "' in: " << what;
}

// The line (1-based) of byte `offset` of a text.
std::uint64_t line_at(std::string_view text, std::size_t offset) {
  return 1 + static_cast<std::uint64_t>(std::count(text.begin(), text.begin() + offset, '\n'));
}

std::string small_msh22() {
  return "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n"                                          // lines 1-3
         "$Nodes\n4\n1 0 0 0\n2 1 0 0\n3 1 1 0\n4 0 1 0\n$EndNodes\n"                      // lines 4-10
         "$Elements\n3\n1 2 2 1 1 1 2 3\n2 2 2 1 1 1 3 4\n3 1 2 4 2 1 2\n$EndElements\n";  // 11-16
}

std::string replace(std::string s, std::string_view from, std::string_view to) {
  const auto k = s.find(from);
  EXPECT_NE(k, std::string::npos) << from;
  return s.replace(k, from.size(), to);
}

TEST(ReadGmshBadInput, SmallFileIsValid) {
  const Mesh m = fem::mesh::read_gmsh(small_msh22(), "ok.msh");
  EXPECT_EQ(m.num_cells(), 2);
  EXPECT_EQ(m.num_facets(), 1);
  EXPECT_EQ(m.facet_tags()[0], 4);
  EXPECT_EQ(m.gdim(), 2);
}

TEST(ReadGmshBadInput, EmptyFileAndNotAMesh) {
  expect_parse_error("", ParseError::Position::line, 1);
  expect_parse_error("\n\n  \n", ParseError::Position::line);
  expect_parse_error("solid cube\n facet normal 0 0 1\n", ParseError::Position::line, 1);
  expect_parse_error("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", ParseError::Position::line, 1);
}

TEST(ReadGmshBadInput, TruncatedAnywhere) {
  const std::string full = small_msh22();
  for (std::size_t n = 0; n < full.size() - 1; ++n) {
    // cutting at the final newline leaves a complete file; cutting inside a token may leave a
    // valid shorter number, so only require that every prefix either parses or is a ParseError
    try {
      fem::mesh::read_gmsh(std::string_view(full).substr(0, n), "cut.msh");
    } catch (const ParseError& e) {
      EXPECT_NE(std::string(e.what()).find("cut.msh"), std::string::npos);
      EXPECT_EQ(e.position_kind(), ParseError::Position::line);
      continue;
    }
    // a prefix that parsed must still contain "$EndElements"
    EXPECT_NE(full.substr(0, n).find("$EndElements"), std::string::npos) << n;
  }
  expect_parse_error(full.substr(0, full.find("3 1 2 4")), ParseError::Position::line, 15);
}

TEST(ReadGmshBadInput, TruncatedBinaryGivesByteOffsets) {
  const Mesh m = fem::mesh::rectangle(CellType::tri3, 3, 3);
  for (auto v : {GmshVersion::msh22, GmshVersion::msh41}) {
    const std::string full = fem::mesh::to_gmsh(m, true, v);
    const auto data = full.find("$Nodes") + 10;
    for (std::size_t n = data; n < full.size() - 14; n += 7) {
      try {
        fem::mesh::read_gmsh(std::string_view(full).substr(0, n), "cut.msh");
        ADD_FAILURE() << "prefix of " << n << " bytes parsed";
      } catch (const ParseError& e) {
        EXPECT_EQ(e.position_kind(), ParseError::Position::byte) << e.what();
        EXPECT_LE(e.position(), n);
        EXPECT_NE(std::string(e.what()).find("cut.msh"), std::string::npos);
      }
    }
  }
}

TEST(ReadGmshBadInput, WrongCounts) {
  // more nodes announced than present: the $EndNodes line is read as a node tag
  expect_parse_error(replace(small_msh22(), "$Nodes\n4\n", "$Nodes\n5\n"), ParseError::Position::line, 10);
  // fewer: a node line where $EndNodes belongs
  expect_parse_error(replace(small_msh22(), "$Nodes\n4\n", "$Nodes\n3\n"), ParseError::Position::line, 9);
  expect_parse_error(replace(small_msh22(), "$Elements\n3\n", "$Elements\n4\n"), ParseError::Position::line,
                     16);
  const Mesh m = fem::mesh::rectangle(CellType::tri3, 2, 2);
  std::string v41 = fem::mesh::to_gmsh(m, false, GmshVersion::msh41);
  expect_parse_error(replace(v41, "$Nodes\n1 9 1 9\n", "$Nodes\n1 10 1 10\n"), ParseError::Position::line);
  expect_parse_error(replace(v41, "$Nodes\n1 9 1 9\n2 1 0 9\n", "$Nodes\n1 9 1 9\n2 1 0 8\n"),
                     ParseError::Position::line);
}

TEST(ReadGmshBadInput, HugeCountInASmallFileFailsBeforeAllocating) {
  // 4 billion nodes (or elements, names, entities) cannot be held by what is left of a 1 KB file
  std::string pad(1000, ' ');
  expect_parse_error("$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n4000000000\n" + pad,
                     ParseError::Position::line, 5);
  expect_parse_error("$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n18446744073709551615\n" + pad,
                     ParseError::Position::line, 5);
  expect_parse_error("$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n99999999999999999999999\n" + pad,
                     ParseError::Position::line, 5);
  expect_parse_error(replace(small_msh22(), "$Elements\n3\n", "$Elements\n4294967296\n") + pad,
                     ParseError::Position::line, 12);
  expect_parse_error("$MeshFormat\n4.1 0 8\n$EndMeshFormat\n$Nodes\n1 4000000000 1 4000000000\n" + pad,
                     ParseError::Position::line, 5);
  expect_parse_error("$MeshFormat\n4.1 0 8\n$EndMeshFormat\n$Entities\n4000000000 0 0 0\n" + pad,
                     ParseError::Position::line, 5);
  expect_parse_error("$MeshFormat\n4.1 0 8\n$EndMeshFormat\n$PhysicalNames\n4000000000\n" + pad,
                     ParseError::Position::line, 5);
  // binary: a size_t count of 2^62 nodes in a block
  const Mesh m = fem::mesh::rectangle(CellType::tri3, 1, 1);
  std::string bin = fem::mesh::to_gmsh(m, true, GmshVersion::msh41);
  const auto at = bin.find("$Nodes\n") + 7 + 8;  // the second size_t: total number of nodes
  const std::uint64_t huge = std::uint64_t{1} << 62;
  std::memcpy(bin.data() + at, &huge, 8);
  expect_parse_error(bin, ParseError::Position::byte, at);
}

TEST(ReadGmshBadInput, UnknownElementType) {
  expect_parse_error(replace(small_msh22(), "2 2 2 1 1 1 3 4", "2 99 2 1 1 1 3 4"),
                     ParseError::Position::line, 14);
  // prisms are Gmsh elements, but not supported here
  expect_parse_error(replace(small_msh22(), "2 2 2 1 1 1 3 4", "2 6 2 1 1 1 3 4"), ParseError::Position::line,
                     14);
  const Mesh m = fem::mesh::rectangle(CellType::tri3, 1, 1);
  std::string bin = fem::mesh::to_gmsh(m, true, GmshVersion::msh22);
  const auto at = bin.find('\n', bin.find("$Elements\n") + 10) + 1;  // first block header: element type
  const std::int32_t bad = 77;
  std::memcpy(bin.data() + at, &bad, 4);
  expect_parse_error(bin, ParseError::Position::byte, at);
}

TEST(ReadGmshBadInput, NodeReferenceOutOfRange) {
  expect_parse_error(replace(small_msh22(), "1 2 2 1 1 1 2 3", "1 2 2 1 1 1 2 5"), ParseError::Position::line,
                     13);
  expect_parse_error(replace(small_msh22(), "1 2 2 1 1 1 2 3", "1 2 2 1 1 0 2 3"), ParseError::Position::line,
                     13);
  expect_parse_error(replace(small_msh22(), "1 2 2 1 1 1 2 3", "1 2 2 1 1 -1 2 3"),
                     ParseError::Position::line, 13);
  const Mesh m = fem::mesh::rectangle(CellType::tri3, 1, 1);
  std::string bin = fem::mesh::to_gmsh(m, true, GmshVersion::msh41);
  const auto end = bin.find("\n$EndElements");
  const std::uint64_t bad = 5;                 // the mesh has 4 nodes
  std::memcpy(bin.data() + end - 8, &bad, 8);  // last node of the last element
  expect_parse_error(bin, ParseError::Position::byte, end - 8);
}

// A node tag given twice: which coordinates would the elements mean? An error at the second
// copy naming the tag and the first copy, whatever lookup the tags need (dense table, sorted
// list) and in every format.
TEST(ReadGmshBadInput, RepeatedNodeTagIsAnError) {
  using P = ParseError::Position;
  for (std::uint64_t big : {std::uint64_t{7}, std::uint64_t{1} << 40}) {
    const std::string t = std::to_string(big);
    SCOPED_TRACE(t);
    // MSH 4.1: the second block starts with a tag of the first block (line 8 or line 7)
    expect_names(expect_parse_error(nodes41(t, t), P::line, 14), {"node tag " + t, "line 8"});
    expect_names(expect_parse_error(nodes41(t, "3"), P::line, 14), {"node tag 3", "line 7"});
    // MSH 2.2: the fourth node repeats the second
    expect_names(expect_parse_error(nodes22(t, t), P::line, 9), {"node tag " + t, "line 7"});
  }
  // Repeats in the middle of generated files (nodes 1..9): node 5 gets tag 3.
  const Mesh m = fem::mesh::rectangle(CellType::tri3, 2, 2);
  for (auto v : {GmshVersion::msh22, GmshVersion::msh41}) {
    SCOPED_TRACE(v == GmshVersion::msh41 ? "4.1" : "2.2");
    // ASCII: the tag is the first number of the node's line (2.2) or on a line of its own (4.1)
    std::string text = fem::mesh::to_gmsh(m, false, v);
    const auto block =
        text.find('\n', text.find(v == GmshVersion::msh41 ? "\n2 1 0 9\n" : "$Nodes\n9\n") + 2);
    const auto node3 = text.find("\n3", block) + 1, node5 = text.find("\n5", block) + 1;
    text[node5] = '3';
    expect_names(expect_parse_error(text, P::line, line_at(text, node5)),
                 {"node tag 3", fmt::format("line {}", line_at(text, node3))});
    // binary: 2.2 writes records of an int32 tag and 3 doubles, 4.1 a block of size_t tags
    std::string bin = fem::mesh::to_gmsh(m, true, v);
    std::size_t first = 0, again = 0;
    if (v == GmshVersion::msh22) {
      const auto data = bin.find("$Nodes\n9\n") + 9;
      first = data + 2 * 28;
      again = data + 4 * 28;
      const std::int32_t three = 3;
      std::memcpy(bin.data() + again, &three, 4);
    } else {
      const auto tags = bin.find("$Nodes\n") + 7 + 4 * 8 + 3 * 4 + 8;  // header, block header
      first = tags + 2 * 8;
      again = tags + 4 * 8;
      const std::uint64_t three = 3;
      std::memcpy(bin.data() + again, &three, 8);
    }
    expect_names(expect_parse_error(bin, P::byte, again), {"node tag 3", fmt::format("byte {}", first)});
  }
}

// A generated square (tri3, facets of dimension 1) whose $PhysicalNames section is `body`.
std::string with_names(bool binary, GmshVersion v, const std::string& body) {
  std::string file = fem::mesh::to_gmsh(fem::mesh::rectangle(CellType::tri3, 2, 2), binary, v);
  const auto from = file.find("$PhysicalNames\n") + 15;
  return file.replace(from, file.find("$EndPhysicalNames") - from, body);
}

TEST(ReadGmsh, SamePhysicalNameInDifferentDimensionsIsAllowed) {
  for (bool binary : {false, true})
    for (auto v : {GmshVersion::msh22, GmshVersion::msh41}) {
      const Mesh m =
          fem::mesh::read_gmsh(with_names(binary, v, "3\n1 1 \"x\"\n1 2 \"y\"\n2 7 \"x\"\n"), "n.msh");
      EXPECT_EQ(m.tag_of("x", 1), 1);
      EXPECT_EQ(m.tag_of("x", 2), 7);
      EXPECT_EQ(m.name_of(1, 2), "y");
    }
}

// $PhysicalNames that name a (dimension, tag) twice, or give one name to two tags of the same
// dimension: tag_of()/name_of() would depend on the order of the lines. An error at the second
// line naming the first, as a line (ASCII) or byte offset (binary files: the section is text).
TEST(ReadGmshBadInput, DuplicatePhysicalNamesAreAnError) {
  struct Case {
    std::string body, second, mentions;
  };
  const Case cases[] = {
      {"3\n1 1 \"x\"\n1 2 \"y\"\n1 1 \"z\"\n", "1 1 \"z\"", "physical group 1 of dimension 1"},  // tag twice
      {"2\n1 1 \"x\"\n1 1 \"x\"\n", "1 1 \"x\"\n$End", "physical group 1 of dimension 1"},       // line twice
      {"3\n1 1 \"x\"\n2 7 \"y\"\n1 2 \"x\"\n", "1 2 \"x\"", "\"x\" of dimension 1"},             // name twice
  };
  using P = ParseError::Position;
  for (const Case& c : cases)
    for (bool binary : {false, true})
      for (auto v : {GmshVersion::msh22, GmshVersion::msh41}) {
        SCOPED_TRACE(c.body + (binary ? " binary" : " ASCII"));
        const std::string file = with_names(binary, v, c.body);
        const auto first = file.find("1 1 \"x\"");
        const auto again = file.find(c.second, first + 1);
        if (binary)
          expect_names(expect_parse_error(file, P::byte, again), {c.mentions, fmt::format("byte {}", first)});
        else
          expect_names(expect_parse_error(file, P::line, line_at(file, again)),
                       {c.mentions, fmt::format("line {}", line_at(file, first))});
      }
}

TEST(ReadGmshBadInput, NonFiniteCoordinates) {
  expect_parse_error(replace(small_msh22(), "3 1 1 0", "3 1 nan 0"), ParseError::Position::line, 8);
  expect_parse_error(replace(small_msh22(), "3 1 1 0", "3 1 inf 0"), ParseError::Position::line, 8);
  expect_parse_error(replace(small_msh22(), "3 1 1 0", "3 1 -1e999 0"), ParseError::Position::line, 8);
  expect_parse_error(replace(small_msh22(), "3 1 1 0", "3 1 1.x 0"), ParseError::Position::line, 8);
  const Mesh m = fem::mesh::rectangle(CellType::tri3, 1, 1);
  for (auto v : {GmshVersion::msh22, GmshVersion::msh41}) {
    std::string bin = fem::mesh::to_gmsh(m, true, v);
    const auto end = bin.find("\n$EndNodes");
    const double nan = std::numeric_limits<double>::quiet_NaN();
    std::memcpy(bin.data() + end - 16, &nan, 8);  // y of the last node
    expect_parse_error(bin, ParseError::Position::byte, end - 16);
  }
}

TEST(ReadGmshBadInput, BrokenStructure) {
  using P = ParseError::Position;
  expect_parse_error(replace(small_msh22(), "2.2 0 8", "3.0 0 8"), P::line, 2);
  expect_parse_error(replace(small_msh22(), "2.2 0 8", "2.2 0 4"), P::line, 2);
  expect_parse_error(replace(small_msh22(), "$EndNodes", "$EndNode"), P::line, 10);
  expect_parse_error(small_msh22().substr(0, small_msh22().find("$Elements")), P::line);  // no elements
  expect_parse_error(replace(small_msh22(), "$Elements\n", "$Foo\n"), P::line, 11);  // section never ends
  // a 2D mesh with a quad next to its triangles
  expect_parse_error(replace(small_msh22(), "2 2 2 1 1 1 3 4", "2 3 2 1 1 1 2 3 4"), P::line, 14);
  // the binary marker is neither 1 nor 1 byte-swapped
  const Mesh m = fem::mesh::rectangle(CellType::tri3, 1, 1);
  std::string bin = fem::mesh::to_gmsh(m, true, GmshVersion::msh41);
  const auto at = bin.find("4.1 1 8\n") + 8;
  bin[at + 1] = 7;
  expect_parse_error(bin, P::byte, at);
}

// ---- MEDIT ----------------------------------------------------------------------------------

constexpr const char* kMedit = R"(MeshVersionFormatted 2
# a unit square cut in two triangles
Dimension 2
Vertices
4
0 0 0
1 0 0
1 1 0
0 1 3
Edges
2
1 2 10
2 3 0
Triangles
2
1 2 3 1
1 3 4 2
Corners
1 1
End
)";

TEST(ReadMedit, TrianglesWithReferences) {
  const Mesh m = fem::mesh::read_medit(kMedit, "square.mesh");
  EXPECT_EQ(m.cell_type(), CellType::tri3);
  EXPECT_EQ(m.gdim(), 2);
  EXPECT_EQ(m.num_nodes(), 4);
  EXPECT_EQ((std::vector<int>(m.cell_tags().begin(), m.cell_tags().end())), (std::vector<int>{1, 2}));
  ASSERT_EQ(m.num_facets(), 1);  // the edge with reference 0 is not a tagged facet
  EXPECT_EQ(m.facet_tags()[0], 10);
  EXPECT_EQ(m.facet(0)[1], 1);
}

// Every MEDIT keyword may appear once. A second 'Dimension' used to reinterpret the vertices
// that follow (here 2 vertices of dimension 3 became 3 vertices of a valid triangle), a second
// element section was appended to the first. The error is at the second keyword and names the
// line of the first.
TEST(ReadMedit, RepeatedKeywordIsAnError) {
  using P = ParseError::Position;
  const std::string reinterpreted =
      "MeshVersionFormatted 2\nDimension 3\nVertices\n2\n0 0 0 0\n1 0 0 0\nDimension 2\n"  // lines 1-7
      "Triangles\n1\n1 2 3 0\nEnd\n";
  expect_names(expect_parse_error(reinterpreted, P::line, 7, true), {"'Dimension'", "line 2"});
  // Each section of kMedit once more, just before End (line 20).
  const std::string ok = kMedit;
  for (std::string_view section : {"MeshVersionFormatted 2\n", "Dimension 2\n", "Vertices\n1\n0 0 0\n",
                                   "Edges\n1\n1 2 10\n", "Triangles\n1\n1 2 3 4\n", "Corners\n1 1\n"}) {
    SCOPED_TRACE(section);
    const std::string keyword(section.substr(0, section.find_first_of(" \n")));
    const std::string file = replace(ok, "End\n", std::string(section) + "End\n");
    expect_names(expect_parse_error(file, P::line, 20, true),
                 {"'" + keyword + "'", fmt::format("line {}", line_at(ok, ok.find(keyword)))});
  }
  // Tetrahedra (a 3D file)
  const std::string tets =
      "MeshVersionFormatted 2\nDimension 3\nVertices\n4\n0 0 0 0\n1 0 0 0\n0 1 0 0\n0 0 1 0\n"  // 1-8
      "Tetrahedra\n1\n1 2 3 4 1\nTetrahedra\n1\n1 2 4 3 1\nEnd\n";                              // 9-15
  ASSERT_EQ(fem::mesh::read_medit(replace(tets, "Tetrahedra\n1\n1 2 4 3 1\n", ""), "tet.mesh").num_cells(),
            1);
  expect_names(expect_parse_error(tets, P::line, 12, true), {"'Tetrahedra'", "line 9"});
}

TEST(ReadMedit, BadInput) {
  using P = ParseError::Position;
  const std::string ok = kMedit;
  expect_parse_error("", P::line, 1, true);
  expect_parse_error("$MeshFormat\n", P::line, 1, true);
  expect_parse_error(replace(ok, "1 3 4 2", "1 3 5 2"), P::line, 17, true);
  expect_parse_error(replace(ok, "1 1 0", "1 nan 0"), P::line, 8, true);
  expect_parse_error(replace(ok, "Triangles\n2\n", "Triangles\n4000000000\n"), P::line, 15, true);
  expect_parse_error(replace(ok, "Triangles", "Prisms"), P::line, 14, true);
  expect_parse_error(ok.substr(0, ok.find("End\n")), P::line, 20, true);
  for (std::size_t n = 0; n + 5 < ok.size(); ++n) {
    try {
      fem::mesh::read_medit(std::string_view(ok).substr(0, n), "cut.mesh");
      ADD_FAILURE() << "prefix of " << n << " bytes parsed";
    } catch (const ParseError& e) {
      EXPECT_NE(std::string(e.what()).find("cut.mesh"), std::string::npos);
    }
  }
}

}  // namespace
