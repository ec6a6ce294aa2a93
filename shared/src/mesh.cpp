// Cell type tables and the checks every Mesh passes at construction.
#include "fem/mesh.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <set>

#include "fem/error.hpp"

namespace fem {
namespace {

using enum CellType;
constexpr std::array<CellTypeInfo, 11> kCellInfo{{
    {point, "point", 0, 1, 1, 1, point, 0, 15, 1},
    {line2, "line2", 1, 2, 2, 1, point, 2, 1, 3},
    {line3, "line3", 1, 3, 2, 2, point, 2, 8, 21},
    {tri3, "tri3", 2, 3, 3, 1, line2, 3, 2, 5},
    {tri6, "tri6", 2, 6, 3, 2, line3, 3, 9, 22},
    {quad4, "quad4", 2, 4, 4, 1, line2, 4, 3, 9},
    {quad9, "quad9", 2, 9, 4, 2, line3, 4, 10, 28},
    {tet4, "tet4", 3, 4, 4, 1, tri3, 4, 4, 10},
    {tet10, "tet10", 3, 10, 4, 2, tri6, 4, 11, 24},
    {hex8, "hex8", 3, 8, 8, 1, quad4, 6, 5, 12},
    {hex27, "hex27", 3, 27, 8, 2, quad9, 6, 12, 29},
}};

std::string where(const std::string& source) {
  return source.empty() ? std::string("mesh") : "mesh '" + source + "'";
}

}  // namespace

const CellTypeInfo& cell_info(CellType type) { return kCellInfo[static_cast<std::size_t>(type)]; }

std::optional<CellType> cell_type_from_name(std::string_view name) {
  for (const auto& i : kCellInfo)
    if (i.name == name) return i.type;
  return std::nullopt;
}

std::optional<CellType> cell_type_from_gmsh(int gmsh_type) {
  for (const auto& i : kCellInfo)
    if (i.gmsh_type == gmsh_type) return i.type;
  return std::nullopt;
}

Mesh::Mesh(Data data) : d_(std::move(data)), info_(&fem::cell_info(d_.cell_type)) {
  const std::string w = where(d_.source);
  FEM_EXPECTS(d_.gdim >= 1 && d_.gdim <= 3, "{}: coordinate dimension {} is not 1, 2 or 3", w, d_.gdim);
  FEM_EXPECTS(info_->dim <= d_.gdim, "{}: {} cells need coordinates of dimension >= {}, got {}", w,
              info_->name, info_->dim, d_.gdim);
  FEM_EXPECTS(d_.coords.size() % d_.gdim == 0, "{}: {} coordinates are not a multiple of dimension {}", w,
              d_.coords.size(), d_.gdim);
  FEM_EXPECTS(d_.coords.size() / d_.gdim <= static_cast<std::size_t>(std::numeric_limits<index_t>::max()),
              "{}: too many nodes for 32-bit indices", w);
  for (std::size_t k = 0; k < d_.coords.size(); ++k)
    FEM_EXPECTS(std::isfinite(d_.coords[k]), "{}: node {} has a non-finite coordinate ({})", w, k / d_.gdim,
                d_.coords[k]);
  const index_t nn = num_nodes();

  const auto npc = static_cast<std::size_t>(info_->num_nodes);
  FEM_EXPECTS(d_.cells.size() % npc == 0, "{}: {} cell node indices are not a multiple of {} ({})", w,
              d_.cells.size(), npc, info_->name);
  for (std::size_t k = 0; k < d_.cells.size(); ++k)
    FEM_EXPECTS(d_.cells[k] >= 0 && d_.cells[k] < nn,
                "{}: cell {} references node {}, but there are {} nodes", w, k / npc, d_.cells[k], nn);
  if (d_.cell_tags.empty()) d_.cell_tags.assign(d_.cells.size() / npc, 0);
  FEM_EXPECTS(d_.cell_tags.size() == d_.cells.size() / npc, "{}: {} cell tags for {} cells", w,
              d_.cell_tags.size(), d_.cells.size() / npc);

  const auto npf = static_cast<std::size_t>(facet_info().num_nodes);
  FEM_EXPECTS(d_.facets.size() % npf == 0, "{}: {} facet node indices are not a multiple of {} ({})", w,
              d_.facets.size(), npf, facet_info().name);
  for (std::size_t k = 0; k < d_.facets.size(); ++k)
    FEM_EXPECTS(d_.facets[k] >= 0 && d_.facets[k] < nn,
                "{}: boundary facet {} references node {}, but there are {} nodes", w, k / npf, d_.facets[k],
                nn);
  if (d_.facet_tags.empty()) d_.facet_tags.assign(d_.facets.size() / npf, 0);
  FEM_EXPECTS(d_.facet_tags.size() == d_.facets.size() / npf, "{}: {} facet tags for {} facets", w,
              d_.facet_tags.size(), d_.facets.size() / npf);

  // Sets of groups: negative tags of the cells' or facets' dimension, each named once, of at least
  // two positive members; every negative tag a cell or facet carries is one of them.
  for (std::size_t i = 0; i < d_.tag_sets.size(); ++i) {
    const TagSet& s = d_.tag_sets[i];
    FEM_EXPECTS(s.dim == tdim() || s.dim == tdim() - 1,
                "{}: a set of groups of dimension {} (the cells' is {}, the facets' {})", w, s.dim, tdim(),
                tdim() - 1);
    FEM_EXPECTS(s.tag < 0, "{}: the set of groups {} has tag {}, not a negative one", w, i, s.tag);
    FEM_EXPECTS(s.members.size() >= 2 && std::is_sorted(s.members.begin(), s.members.end()) &&
                    std::adjacent_find(s.members.begin(), s.members.end()) == s.members.end() &&
                    s.members.front() > 0,
                "{}: the set of groups with tag {} needs two or more distinct positive groups, sorted", w,
                s.tag);
    for (std::size_t j = 0; j < i; ++j)
      FEM_EXPECTS(d_.tag_sets[j].dim != s.dim || d_.tag_sets[j].tag != s.tag,
                  "{}: two sets of groups of dimension {} have tag {}", w, s.dim, s.tag);
  }
  const auto check_negative = [&](const std::vector<int>& tags, int dim, const char* what) {
    for (std::size_t k = 0; k < tags.size(); ++k)
      FEM_EXPECTS(tags[k] >= 0 || tag_set(dim, tags[k]),
                  "{}: {} {} has tag {}; physical tags are positive (0: none)", w, what, k, tags[k]);
  };
  check_negative(d_.cell_tags, tdim(), "cell");
  check_negative(d_.facet_tags, tdim() - 1, "boundary facet");
}

const TagSet* Mesh::tag_set(int dim, int tag) const noexcept {
  for (const auto& s : d_.tag_sets)
    if (s.dim == dim && s.tag == tag) return &s;
  return nullptr;
}

std::vector<int> Mesh::groups(int dim, int entity_tag) const {
  if (const TagSet* s = entity_tag < 0 ? tag_set(dim, entity_tag) : nullptr) return s->members;
  return {entity_tag};
}

std::optional<int> Mesh::tag_of(std::string_view name, int dim) const {
  for (const auto& n : d_.names)
    if (n.name == name && (dim < 0 || n.dim == dim)) return n.tag;
  return std::nullopt;
}

std::string_view Mesh::name_of(int dim, int tag) const {
  for (const auto& n : d_.names)
    if (n.dim == dim && n.tag == tag) return n.name;
  return {};
}

std::string Mesh::describe_names(int dim) const {
  std::string s;
  for (const auto& n : d_.names)
    if (dim < 0 || n.dim == dim)
      s += fmt::format("{}'{}' (dimension {}, tag {})", s.empty() ? "" : ", ", n.name, n.dim, n.tag);
  return s.empty() ? "none" : s;
}

std::vector<int> Mesh::tags(int dim) const {
  std::set<int> tags;
  if (dim == tdim() || dim == tdim() - 1) {
    const auto& carried = dim == tdim() ? d_.cell_tags : d_.facet_tags;
    std::set<int> distinct;
    for (std::size_t i = 0; i < carried.size(); ++i)  // tags come in runs: one set lookup per run
      if (i == 0 || carried[i] != carried[i - 1]) distinct.insert(carried[i]);
    for (int t : distinct)
      for (int g : groups(dim, t)) tags.insert(g);
  } else
    for (const auto& n : d_.names)
      if (n.dim == dim) tags.insert(n.tag);
  // A part of a distributed mesh lists its share of the boundary under a tag of no user's.
  if (const auto internal = tag_of(boundary_facets_name, dim)) tags.erase(*internal);
  return {tags.begin(), tags.end()};
}

std::string Mesh::describe_tags(std::span<const int> tags, int dim) const {
  std::string s;
  for (int t : tags) {
    const auto name = name_of(dim, t);
    s += fmt::format("{}{}{}", s.empty() ? "" : ", ", t, name.empty() ? "" : fmt::format(" '{}'", name));
  }
  return s.empty() ? "none" : s;
}

int Mesh::resolve_tag(std::string_view tag, int dim) const {
  int number = 0;
  const auto [end, ec] = std::from_chars(tag.data(), tag.data() + tag.size(), number);
  if (ec == std::errc() && end == tag.data() + tag.size()) return number;
  if (const auto t = tag_of(tag, dim)) return *t;
  throw InvalidArgument(unknown_tag(tag, dim));
}

std::string Mesh::unknown_tag(std::string_view tag, int dim) const {
  if (dim < 0)
    return fmt::format("mesh '{}' has no physical name '{}' (its names: {})", source(), tag,
                       describe_names());
  const std::string kind = dim == tdim()       ? "cell"
                           : dim == tdim() - 1 ? "facet"
                                               : fmt::format("dimension {}", dim);
  // The tags carried here and the named ones (a part of a distributed mesh has every name of the
  // whole, not every tag's cells or facets).
  std::vector<int> known = tags(dim);
  for (const auto& n : d_.names)
    if (n.dim == dim && n.name != boundary_facets_name) known.push_back(n.tag);
  std::sort(known.begin(), known.end());
  known.erase(std::unique(known.begin(), known.end()), known.end());
  return fmt::format("mesh '{}' has no {} tag '{}' (its {} tags: {})", source(), kind, tag, kind,
                     describe_tags(known, dim));
}

std::pair<std::array<double, 3>, std::array<double, 3>> Mesh::bounding_box() const {
  std::array<double, 3> lo{0, 0, 0}, hi{0, 0, 0};
  if (num_nodes() == 0) return {lo, hi};
  for (int d = 0; d < d_.gdim; ++d) {
    lo[d] = std::numeric_limits<double>::infinity();
    hi[d] = -lo[d];
  }
  for (index_t i = 0; i < num_nodes(); ++i)
    for (int d = 0; d < d_.gdim; ++d) {
      lo[d] = std::min(lo[d], d_.coords[i * d_.gdim + d]);
      hi[d] = std::max(hi[d], d_.coords[i * d_.gdim + d]);
    }
  return {lo, hi};
}

std::size_t Mesh::bytes() const noexcept {
  std::size_t b = sizeof(*this) + d_.coords.capacity() * sizeof(double) +
                  (d_.cells.capacity() + d_.facets.capacity()) * sizeof(index_t) +
                  (d_.cell_tags.capacity() + d_.facet_tags.capacity()) * sizeof(int) + d_.source.capacity();
  for (const auto& n : d_.names) b += sizeof(n) + n.name.capacity();
  for (const auto& t : d_.tag_sets) b += sizeof(t) + t.members.capacity() * sizeof(int);
  return b;
}

}  // namespace fem
