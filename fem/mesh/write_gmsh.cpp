// Gmsh MSH 2.2 / 4.1 writer (ASCII and binary, native byte order), built in memory and written
// with one call: numbers through std::to_chars, so coordinates round-trip exactly.
#include "fem/mesh/write_gmsh.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <map>

#include "fem/atomic_file.hpp"
#include "fem/error.hpp"

namespace fem::mesh {
namespace {

class Out {
 public:
  explicit Out(bool binary, bool swap = false) : binary_(binary), swap_(swap) {}
  std::string& str() { return s_; }

  Out& text(std::string_view t) {
    s_.append(t);
    return *this;
  }
  template <class T>
  Out& num(T v) {  // ASCII number followed by a space
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    s_.append(std::string_view(buf, static_cast<std::size_t>(r.ptr - buf)));
    s_.push_back(' ');
    return *this;
  }
  void eol() {
    if (!s_.empty() && s_.back() == ' ')
      s_.back() = '\n';
    else
      s_.push_back('\n');
  }
  template <class T>
  Out& raw(T v) {
    if (swap_) {
      char b[sizeof v];
      std::memcpy(b, &v, sizeof v);
      std::reverse(b, b + sizeof v);
      std::memcpy(&v, b, sizeof v);
    }
    s_.append(reinterpret_cast<const char*>(&v), sizeof v);
    return *this;
  }
  // An int (4 bytes binary) / size_t (8 bytes binary) / double, in the current encoding.
  Out& i4(long long v) { return binary_ ? raw(static_cast<std::int32_t>(v)) : num(v); }
  Out& s8(unsigned long long v) { return binary_ ? raw(static_cast<std::uint64_t>(v)) : num(v); }
  Out& f8(double v) { return binary_ ? raw(v) : num(v); }
  void line() {  // end of a record: a newline in ASCII, nothing in binary
    if (!binary_) eol();
  }
  bool binary() const { return binary_; }

 private:
  bool binary_;
  bool swap_;
  std::string s_;
};

struct Entity {
  int dim;
  int tag;   // entity tag (per dimension, from 1)
  int phys;  // physical tag, 0 for none
};

struct Block {
  int entity;  // index into entities
  CellType type;
  std::size_t first;  // first row in cells (facet == false) or facets
  std::size_t count;
  bool facet;
};

}  // namespace

std::string to_gmsh(const Mesh& mesh, const GmshWriteOptions& options) {
  const bool binary = options.binary;
  const GmshVersion version = options.version;
  const int tdim = mesh.tdim();
  const int gdim = mesh.gdim();
  const CellType ct = mesh.cell_type(), ft = mesh.facet_info().type;
  const auto nc = static_cast<std::size_t>(mesh.num_cells()),
             nf = static_cast<std::size_t>(mesh.num_facets());
  const auto nn = static_cast<std::size_t>(mesh.num_nodes());

  // Entities and blocks: runs of equal tags, cells first.
  std::vector<Entity> entities;
  std::map<std::pair<int, int>, int> entity_of;  // (dim, phys) -> index
  std::array<int, 4> per_dim{};
  auto entity = [&](int dim, int phys) {
    auto [it, fresh] = entity_of.try_emplace({dim, phys}, static_cast<int>(entities.size()));
    if (fresh) entities.push_back({dim, ++per_dim[dim], phys});
    return it->second;
  };
  std::vector<Block> blocks;
  auto runs = [&](std::span<const int> tags, int dim, CellType type, bool facet) {
    for (std::size_t i = 0; i < tags.size();) {
      std::size_t j = i + 1;
      while (j < tags.size() && tags[j] == tags[i]) ++j;
      blocks.push_back({entity(dim, tags[i]), type, i, j - i, facet});
      i = j;
    }
  };
  runs(mesh.cell_tags(), tdim, ct, false);
  if (tdim >= 1) runs(mesh.facet_tags(), tdim - 1, ft, true);
  const int node_entity = nc > 0 ? blocks[0].entity : entity(tdim, 0);
  const auto groups_of = [&](const Entity& e) { return mesh.groups(e.dim, e.phys); };

  const auto [lo, hi] = mesh.bounding_box();
  auto xyz = [&](std::size_t i, int k) { return k < gdim ? mesh.coords()[i * gdim + k] : 0.0; };
  auto element_rows = [&](const Block& b) { return b.facet ? mesh.facets() : mesh.cells(); };

  Out o(binary, binary && options.byte_order != std::endian::native);
  o.text(version == GmshVersion::msh41 ? "$MeshFormat\n4.1 " : "$MeshFormat\n2.2 ")
      .text(binary ? "1 8\n" : "0 8\n");
  if (binary) o.raw(std::int32_t{1}).text("\n");
  o.text("$EndMeshFormat\n");
  if (!mesh.names().empty()) {
    Out a(false);
    a.text("$PhysicalNames\n").num(mesh.names().size());
    a.eol();
    for (const auto& n : mesh.names()) {
      a.num(n.dim).num(n.tag).text("\"").text(n.name).text("\"\n");
    }
    a.text("$EndPhysicalNames\n");
    o.text(a.str());
  }

  if (version == GmshVersion::msh41) {
    o.text("$Entities\n");
    for (int d = 0; d < 4; ++d) o.s8(static_cast<unsigned long long>(per_dim[d]));
    o.line();
    for (int d = 0; d < 4; ++d)
      for (const auto& e : entities) {
        if (e.dim != d) continue;
        o.i4(e.tag);
        for (int k = 0; k < 3; ++k) o.f8(lo[k]);
        if (d > 0)
          for (int k = 0; k < 3; ++k) o.f8(hi[k]);
        // A set of groups (a negative tag) is an entity with several physical tags.
        const std::vector<int> groups = e.phys != 0 ? mesh.groups(d, e.phys) : std::vector<int>{};
        o.s8(groups.size());
        for (int g : groups) o.i4(g);
        if (d > 0) o.s8(0);
        o.line();
      }
    if (binary) o.text("\n");
    o.text("$EndEntities\n");

    o.text("$Nodes\n");
    o.s8(1).s8(nn).s8(nn ? 1 : 0).s8(nn);
    o.line();
    o.i4(entities[node_entity].dim).i4(entities[node_entity].tag).i4(0).s8(nn);
    o.line();
    if (binary) {
      for (std::size_t i = 0; i < nn; ++i) o.raw(static_cast<std::uint64_t>(i + 1));
      for (std::size_t i = 0; i < nn; ++i)
        for (int k = 0; k < 3; ++k) o.raw(xyz(i, k));
      o.text("\n");
    } else {
      for (std::size_t i = 0; i < nn; ++i) {
        o.num(i + 1);
        o.eol();
      }
      for (std::size_t i = 0; i < nn; ++i) {
        for (int k = 0; k < 3; ++k) o.num(xyz(i, k));
        o.eol();
      }
    }
    o.text("$EndNodes\n");

    o.text("$Elements\n");
    const std::size_t ne = nc + (tdim >= 1 ? nf : 0);
    o.s8(blocks.size()).s8(ne).s8(ne ? 1 : 0).s8(ne);
    o.line();
    std::uint64_t tag = 1;
    for (const auto& b : blocks) {
      const auto& info = cell_info(b.type);
      const auto rows = element_rows(b);
      const auto k = static_cast<std::size_t>(info.num_nodes);
      o.i4(entities[b.entity].dim).i4(entities[b.entity].tag).i4(info.gmsh_type).s8(b.count);
      o.line();
      for (std::size_t r = b.first; r < b.first + b.count; ++r) {
        o.s8(tag++);
        for (std::size_t j = 0; j < k; ++j) o.s8(static_cast<std::uint64_t>(rows[r * k + j]) + 1);
        o.line();
      }
    }
    if (binary) o.text("\n");
    o.text("$EndElements\n");
  } else {
    o.text("$Nodes\n").text(std::to_string(nn)).text("\n");
    for (std::size_t i = 0; i < nn; ++i) {
      if (binary) {
        o.raw(static_cast<std::int32_t>(i + 1));
        for (int k = 0; k < 3; ++k) o.raw(xyz(i, k));
      } else {
        o.num(i + 1);
        for (int k = 0; k < 3; ++k) o.num(xyz(i, k));
        o.eol();
      }
    }
    if (binary) o.text("\n");
    o.text("$EndNodes\n");
    // MSH 2.2 writes an element once per physical group it belongs to, as Gmsh does.
    const auto records = [&](bool facet) {
      std::size_t n = 0;
      for (const auto& b : blocks)
        if (b.facet == facet) n += b.count * groups_of(entities[b.entity]).size();
      return n;
    };
    const std::size_t ne = records(false) + (tdim >= 1 ? records(true) : 0);
    o.text("$Elements\n").text(std::to_string(ne)).text("\n");
    std::int32_t tag = 1;
    for (bool facet : {false, true}) {
      if (facet && tdim < 1) break;
      const CellType type = facet ? ft : ct;
      const auto& info = cell_info(type);
      const std::size_t n = records(facet);
      if (binary && n > 0)
        o.raw(static_cast<std::int32_t>(info.gmsh_type))
            .raw(static_cast<std::int32_t>(n))
            .raw(std::int32_t{2});
      for (const auto& b : blocks) {
        if (b.facet != facet) continue;
        const auto rows = element_rows(b);
        const auto k = static_cast<std::size_t>(info.num_nodes);
        const Entity& e = entities[b.entity];
        for (int phys : groups_of(e))
          for (std::size_t r = b.first; r < b.first + b.count; ++r) {
            if (binary) {
              o.raw(tag++).raw(static_cast<std::int32_t>(phys)).raw(static_cast<std::int32_t>(e.tag));
              for (std::size_t j = 0; j < k; ++j) o.raw(static_cast<std::int32_t>(rows[r * k + j] + 1));
            } else {
              o.num(tag++).num(info.gmsh_type).num(2).num(phys).num(e.tag);
              for (std::size_t j = 0; j < k; ++j) o.num(rows[r * k + j] + 1);
              o.eol();
            }
          }
      }
    }
    if (binary) o.text("\n");
    o.text("$EndElements\n");
  }
  return std::move(o.str());
}

void write_gmsh(const Mesh& mesh, const std::filesystem::path& file, bool binary, GmshVersion version) {
  const std::string bytes = to_gmsh(mesh, GmshWriteOptions{version, binary});
  write_file_atomically(file, bytes);  // all or nothing: a failure leaves a previous file intact
}

}  // namespace fem::mesh
