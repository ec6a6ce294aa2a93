// MEDIT .mesh reader (ASCII): Vertices, Edges, Triangles, Quadrilaterals, Tetrahedra, Hexahedra
// with their reference numbers as tags; the auxiliary sections (corners, ridges, normals, ...)
// are skipped. MEDIT has no names for references. Every keyword may appear once.
#include <array>
#include <optional>
#include <vector>

#include "fem/error.hpp"
#include "fem/mesh/detail/scanner.hpp"
#include "fem/mesh/read.hpp"

namespace fem::mesh {
namespace {

using detail::Scanner;

struct Section {
  std::string_view keyword;
  CellType type;
};
constexpr std::array<Section, 5> kElementSections{{{"Edges", CellType::line2},
                                                   {"Triangles", CellType::tri3},
                                                   {"Quadrilaterals", CellType::quad4},
                                                   {"Tetrahedra", CellType::tet4},
                                                   {"Hexahedra", CellType::hex8}}};

/// Sections read and dropped: keyword and numbers per item (-1: the space dimension).
struct Skipped {
  std::string_view keyword;
  int numbers;
};
constexpr std::array<Skipped, 17> kSkipped{{{"Corners", 1},
                                            {"RequiredVertices", 1},
                                            {"Ridges", 1},
                                            {"RequiredEdges", 1},
                                            {"RequiredTriangles", 1},
                                            {"RequiredQuadrilaterals", 1},
                                            {"RequiredTetrahedra", 1},
                                            {"RequiredHexahedra", 1},
                                            {"Normals", -1},
                                            {"Tangents", -1},
                                            {"NormalAtVertices", 2},
                                            {"TangentAtVertices", 2},
                                            {"NormalAtTriangleVertices", 3},
                                            {"NormalAtQuadrilateralVertices", 3},
                                            {"TangentAtEdgeVertices", 3},
                                            {"TangentAtEdges", 3},
                                            {"Crack", 2}}};

struct Elements {
  std::vector<index_t> nodes;
  std::vector<int> refs;
  const char* first = nullptr;
};

class MeditReader {
 public:
  MeditReader(std::string_view bytes, std::string_view name) : s_(bytes, std::string(name)) {}

  Mesh read() {
    skip_comments();
    if (s_.at_end()) s_.fail("empty file: expected 'MeshVersionFormatted'");
    if (s_.peek_token() != "MeshVersionFormatted")
      s_.expected("'MeshVersionFormatted' (not a MEDIT mesh file)");
    const char* mat = s_.pos();
    seen_.emplace_back(s_.token(), mat);
    const char* vat = s_.pos();
    const int version = s_.integer<int>("MEDIT version");
    if (version < 1 || version > 4)
      s_.fail_at(vat, fmt::format("expected MEDIT version 1..4, found {}", version));
    for (;;) {
      skip_comments();
      if (s_.at_end()) s_.fail("expected 'End', found end of file");
      const char* at = s_.pos();
      const auto word = s_.token();
      if (word == "End") break;
      if (word != "MeshVersionFormatted" && word != "Dimension" && word != "Vertices" &&
          !element_section(word) && !skipped(word)) {
        s_.seek(at);
        s_.expected("a MEDIT keyword such as 'Vertices', 'Triangles', 'Tetrahedra' or 'End'");
      }
      once(word, at);
      if (word == "Dimension") {
        const char* dat = s_.pos();
        gdim_ = s_.integer<int>("dimension");
        if (gdim_ != 2 && gdim_ != 3)
          s_.fail_at(dat, fmt::format("expected dimension 2 or 3, found {}", gdim_));
      } else if (word == "Vertices") {
        read_vertices(at);
      } else if (auto t = element_section(word)) {
        read_elements(*t, at);
      } else if (auto k = skipped(word)) {
        skip(*k, at);
      }
    }
    return finish();
  }

 private:
  void skip_comments() {
    for (;;) {
      s_.skip_space();
      if (!s_.at_end() && *s_.pos() == '#')
        s_.skip_line();
      else
        return;
    }
  }

  // Every keyword may appear once: a second 'Dimension' would reinterpret the vertices that
  // follow, a second element section would be appended to the first. `at` is the keyword's
  // position, the message names it and the first one.
  void once(std::string_view word, const char* at) {
    for (const auto& [w, first] : seen_)
      if (w == word) s_.fail_at(at, fmt::format("a second '{}' (the first is at {})", word, s_.where(first)));
    seen_.emplace_back(word, at);
  }

  static std::optional<CellType> element_section(std::string_view w) {
    for (const auto& s : kElementSections)
      if (s.keyword == w) return s.type;
    return std::nullopt;
  }
  static std::optional<int> skipped(std::string_view w) {
    for (const auto& s : kSkipped)
      if (s.keyword == w) return s.numbers;
    return std::nullopt;
  }

  std::uint64_t count(std::string_view what, std::size_t numbers_each) {
    skip_comments();
    const char* at = s_.pos();
    const auto n = s_.integer<std::uint64_t>(what);
    s_.check_count(n, 2 * numbers_each, what, at);
    if (n > static_cast<std::uint64_t>(std::numeric_limits<index_t>::max()))
      s_.fail_at(at, fmt::format("{} {} too large for 32-bit indices", what, n));
    return n;
  }

  void need_dimension(const char* at) {
    if (gdim_ == 0) s_.fail_at(at, "expected 'Dimension' before the mesh data");
  }

  void read_vertices(const char* at) {
    need_dimension(at);
    const auto n = count("number of vertices", gdim_ + 1);
    coords_.reserve(n * gdim_);
    for (std::uint64_t i = 0; i < n; ++i) {
      for (int k = 0; k < gdim_; ++k) coords_.push_back(s_.finite_real("vertex coordinate"));
      s_.integer<std::int64_t>("vertex reference");
    }
    have_vertices_ = true;
  }

  void read_elements(CellType type, const char* at) {
    if (!have_vertices_) s_.fail_at(at, fmt::format("expected 'Vertices' before '{}'", cell_info(type).name));
    const int k = cell_info(type).num_nodes;
    const auto n = count("number of elements", k + 1);
    Elements& e = elements_[static_cast<std::size_t>(type)];
    e.first = at;
    e.nodes.reserve(n * k);
    e.refs.reserve(n);
    const auto nv = static_cast<std::int64_t>(coords_.size() / gdim_);
    for (std::uint64_t i = 0; i < n; ++i) {
      for (int j = 0; j < k; ++j) {
        s_.skip_space();
        const char* p = s_.pos();
        const auto v = s_.integer<std::int64_t>("vertex number");
        if (v < 1 || v > nv) s_.fail_at(p, fmt::format("expected a vertex number in 1..{}, found {}", nv, v));
        e.nodes.push_back(static_cast<index_t>(v - 1));
      }
      e.refs.push_back(s_.integer<int>("element reference"));
    }
  }

  void skip(int numbers, const char* at) {
    if (numbers < 0) {
      need_dimension(at);
      numbers = gdim_;
    }
    const auto n = count("number of items", numbers);
    for (std::uint64_t i = 0; i < n * numbers; ++i) s_.real("number");
  }

  Mesh finish() {
    if (!have_vertices_) s_.fail("expected a 'Vertices' section");
    std::optional<CellType> cell;
    for (std::size_t t = 0; t < elements_.size(); ++t) {
      if (elements_[t].refs.empty()) continue;
      const auto type = static_cast<CellType>(t);
      if (!cell || cell_info(type).dim > cell_info(*cell).dim)
        cell = type;
      else if (cell_info(type).dim == cell_info(*cell).dim)
        s_.fail_at(std::max(elements_[t].first, elements_[static_cast<std::size_t>(*cell)].first),
                   fmt::format("mixed cell types {} and {} are not supported", cell_info(*cell).name,
                               cell_info(type).name));
    }
    if (!cell) s_.fail("expected at least one element section, found none");
    Mesh::Data d;
    d.gdim = gdim_;
    d.cell_type = *cell;
    d.coords = std::move(coords_);
    auto& ce = elements_[static_cast<std::size_t>(*cell)];
    d.cells = std::move(ce.nodes);
    d.cell_tags = std::move(ce.refs);
    const CellType ft = cell_info(*cell).facet;
    const auto& fe = elements_[static_cast<std::size_t>(ft)];
    const std::size_t npf = cell_info(ft).num_nodes;
    for (std::size_t r = 0; r < fe.refs.size(); ++r)
      if (fe.refs[r] != 0) {
        d.facets.insert(d.facets.end(), fe.nodes.begin() + r * npf, fe.nodes.begin() + (r + 1) * npf);
        d.facet_tags.push_back(fe.refs[r]);
      }
    d.source = s_.name();
    try {
      return Mesh(std::move(d));
    } catch (const InvalidArgument& e) {
      throw ParseError(s_.name(), ParseError::Position::none, 0, e.what());
    }
  }

  Scanner s_;
  int gdim_ = 0;
  bool have_vertices_ = false;
  std::vector<double> coords_;
  std::array<Elements, 11> elements_;
  std::vector<std::pair<std::string_view, const char*>> seen_;  // keywords read so far and where
};

}  // namespace

Mesh read_medit(std::string_view bytes, std::string_view name) { return MeditReader(bytes, name).read(); }

}  // namespace fem::mesh
