// Facet selection (vertices, and all the nodes of each facet for its geometry), facet nodes of a
// space (edge nodes found through the DOF map's edge table), Dirichlet lifting on CSR matrices
// and Neumann facet integrals over the facets' own (curved) geometry.
#include "fem/assembly/boundary.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>

#include "fem/assembly/quadrature.hpp"
#include "fem/error.hpp"
#include "fem/gpu/connectivity.hpp"
#include "fem/gpu/keys.hpp"
#include "fem/lagrange.hpp"
#include "fem/reference_cell.hpp"
#include "fem/threads.hpp"

namespace fem::assembly {

namespace {

void check_tags(const Mesh& mesh, int dim, std::span<const int> tags, const Layout& layout,
                const char* what) {
  if (!layout.distributed() && mesh.tag_of(boundary_facets_name, mesh.tdim() - 1))
    return;  // a part of a distributed mesh, without its layout: the caller checked the whole
  const std::vector<int> present = layout.processes().merge(mesh.tags(dim));
  for (int tag : tags) {
    if (std::binary_search(present.begin(), present.end(), tag)) continue;
    const auto name = mesh.name_of(dim, tag);
    throw InvalidArgument(fmt::format("mesh '{}' has no {} with tag {}{}; its {} tags are: {}", mesh.source(),
                                      what, tag, name.empty() ? "" : fmt::format(" '{}'", name),
                                      dim == mesh.tdim() ? "cell" : "facet",
                                      mesh.describe_tags(present, dim)));
  }
}

}  // namespace

void check_facet_tags(const Mesh& mesh, std::span<const int> tags, const Layout& layout) {
  check_tags(mesh, mesh.tdim() - 1, tags, layout, "boundary facet");
}

void check_cell_tags(const Mesh& mesh, std::span<const int> tags, const Layout& layout) {
  check_tags(mesh, mesh.tdim(), tags, layout, "cell");
}

namespace {

// For each local facet of a cell type, the cell-local indices of all the facet's nodes in the
// node order of the facet's Lagrange element: its vertices (as local_facets() orders them),
// then the node of each facet edge (the facet type's own edge order), then the face centre
// (quad9 faces of hex27, whose face nodes follow the edge nodes in local_facets() order).
std::vector<std::vector<int>> facet_local_nodes(CellType type) {
  const auto& info = cell_info(type);
  const LocalFacets lf = local_facets(type);
  const CellType facet = info.facet;
  const int nvf = lf.vertices_per_facet, npf = cell_info(facet).num_nodes, nv = info.num_vertices;
  const auto cell_edges = local_edges(type);
  std::vector<std::array<int, 2>> facet_edges;
  if (npf > nvf) {
    if (nvf == 2) {
      facet_edges = {{0, 1}};
    } else {
      const auto e = local_edges(nvf == 3 ? CellType::tri3 : CellType::quad4);
      facet_edges.assign(e.begin(), e.end());
    }
  }
  std::vector<std::vector<int>> out(lf.count);
  for (int l = 0; l < lf.count; ++l) {
    const auto v = lf[l];
    out[l].assign(v.begin(), v.end());
    for (const auto& fe : facet_edges) {
      const int a = v[fe[0]], b = v[fe[1]];
      int found = -1;
      for (std::size_t e = 0; e < cell_edges.size(); ++e)
        if ((cell_edges[e][0] == a && cell_edges[e][1] == b) ||
            (cell_edges[e][0] == b && cell_edges[e][1] == a))
          found = static_cast<int>(e);
      FEM_EXPECTS(found >= 0, "{}: facet {} has no edge {}-{}", info.name, l, a, b);
      out[l].push_back(nv + found);
    }
    if (static_cast<int>(out[l].size()) < npf) out[l].push_back(nv + static_cast<int>(cell_edges.size()) + l);
    FEM_EXPECTS(static_cast<int>(out[l].size()) == npf, "{}: facet {} has {} nodes, its {} element {}",
                info.name, l, out[l].size(), cell_info(facet).name, npf);
  }
  return out;
}

SelectedFacets select(const Mesh& mesh, const FacetSet& set, bool with_nodes) {
  SelectedFacets s;
  s.geometry = mesh.cell_info().facet;
  s.vertices_per_facet = mesh.facet_info().num_vertices;
  s.nodes_per_facet = mesh.nodes_per_facet();
  const int nvf = s.vertices_per_facet, npf = s.nodes_per_facet;
  // A part of a distributed mesh names its share of the whole boundary (fem::boundary_facets_name).
  if (set.whole_boundary)
    if (const auto tag = mesh.tag_of(boundary_facets_name, mesh.tdim() - 1))
      return select(mesh, FacetSet::tagged({*tag}), with_nodes);
  if (set.whole_boundary) {
    auto bf = gpu::find_boundary_facets(gpu::Executor::host(), mesh);
    s.vertices = std::move(bf.vertices);
    if (!with_nodes) return s;
    if (npf == nvf) {  // first-order facets: the vertices are all the nodes
      s.nodes = s.vertices;
      return s;
    }
    const auto local = facet_local_nodes(mesh.cell_type());
    s.nodes.resize(static_cast<std::size_t>(bf.size()) * npf);
    for (index_t f = 0; f < bf.size(); ++f) {
      const auto cell = mesh.cell(bf.cell[f]);
      const auto& l = local[bf.local_facet[f]];
      for (int k = 0; k < npf; ++k) s.nodes[static_cast<std::size_t>(f) * npf + k] = cell[l[k]];
    }
    return s;
  }
  check_facet_tags(mesh, set.tags);
  const int fdim = mesh.tdim() - 1;
  const auto in_set = [&](int facet_tag) {
    return std::any_of(set.tags.begin(), set.tags.end(),
                       [&](int t) { return mesh.in_group(fdim, facet_tag, t); });
  };
  for (index_t f = 0; f < mesh.num_facets(); ++f)
    if (in_set(mesh.facet_tags()[f])) {
      const auto nodes = mesh.facet(f);
      s.vertices.insert(s.vertices.end(), nodes.begin(), nodes.begin() + nvf);
      if (with_nodes) s.nodes.insert(s.nodes.end(), nodes.begin(), nodes.end());
    }
  return s;
}

}  // namespace

std::vector<index_t> select_facets(const Mesh& mesh, const FacetSet& set, int& vertices_per_facet) {
  auto s = select(mesh, set, false);
  vertices_per_facet = s.vertices_per_facet;
  return std::move(s.vertices);
}

SelectedFacets select_facet_geometry(const Mesh& mesh, const FacetSet& set) {
  return select(mesh, set, true);
}

std::vector<index_t> facet_nodes(const FunctionSpace& V, std::span<const index_t> facet_vertices, int nvf,
                                 int& nodes_per_facet) {
  const DofMap& d = V.dofmap();
  const std::size_t nf = facet_vertices.size() / nvf;
  const CellType facet_element = cell_info(V.element()).facet;
  nodes_per_facet = cell_info(facet_element).num_nodes;
  // Edges of the facet (a line facet is its own edge).
  const int nedges = nodes_per_facet - nvf;
  std::vector<std::array<int, 2>> edges;
  if (nedges == 1)
    edges = {{0, 1}};
  else if (nedges > 1) {
    const auto le = local_edges(nvf == 3 ? CellType::tri3 : CellType::quad4);
    edges.assign(le.begin(), le.end());
  }
  std::vector<index_t> out(nf * nodes_per_facet);
  std::vector<std::uint64_t> keys;
  for (std::size_t f = 0; f < nf; ++f) {
    const index_t* v = &facet_vertices[f * nvf];
    for (int k = 0; k < nvf; ++k) {
      const index_t node = d.vertex_node[v[k]];
      FEM_EXPECTS(node >= 0, "mesh '{}': boundary facet {} has node {}, which is no cell vertex",
                  V.mesh().source(), f, v[k]);
      out[f * nodes_per_facet + k] = node;
    }
    for (const auto& e : edges) keys.push_back(gpu::pack_sorted_pair(v[e[0]], v[e[1]]));
  }
  if (!keys.empty()) {
    std::vector<std::uint32_t> ids(keys.size());
    std::vector<std::uint8_t> found(keys.size());
    d.edges->find(keys, ids, found);
    for (std::size_t f = 0, k = 0; f < nf; ++f)
      for (int e = 0; e < nedges; ++e, ++k) {
        FEM_EXPECTS(found[k], "mesh '{}': an edge of boundary facet {} is no edge of any cell",
                    V.mesh().source(), f);
        out[f * nodes_per_facet + nvf + e] = d.node_of_edge(static_cast<index_t>(ids[k]));
      }
  }
  return out;
}

std::string FacetSet::describe(const Mesh& mesh) const {
  if (whole_boundary) return "all (the whole boundary)";
  const int dim = mesh.tdim() - 1;
  if (tags.size() == 1) {
    const auto name = mesh.name_of(dim, tags[0]);
    return name.empty() ? fmt::format("tag {}", tags[0]) : fmt::format("'{}' (tag {})", name, tags[0]);
  }
  return "tags " + mesh.describe_tags(tags, dim);
}

DirichletValues condition_values(const FunctionSpace& V, const Dirichlet& bc) {
  const int bs = V.components(), gdim = V.mesh().gdim();
  const DofMap& d = V.dofmap();
  FEM_EXPECTS(bc.component >= -1 && bc.component < bs, "Dirichlet component {} of a space with {} components",
              bc.component, bs);
  int nvf = 0, npf = 0;
  const auto vertices = select_facets(V.mesh(), bc.where, nvf);
  std::vector<index_t> unique = facet_nodes(V, vertices, nvf, npf);
  std::sort(unique.begin(), unique.end());
  unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
  DirichletValues out;
  for (index_t node : unique) {
    const double value = bc.value ? bc.value(&d.coordinates[static_cast<std::size_t>(node) * gdim]) : 0.0;
    for (int c = 0; c < bs; ++c)
      if (bc.component < 0 || bc.component == c) {
        out.dofs.push_back(node * bs + c);
        out.values.push_back(value);
      }
  }
  return out;
}

namespace {

// Conditions made on another space (a P2 space's DOFs on a P1 matrix) would write out of range:
// the DOFs are sorted, so the last one bounds them all.
void check_dofs(const DirichletValues& bc, std::size_t size, const char* what) {
  FEM_EXPECTS(bc.values.size() == bc.dofs.size(), "{}: {} values for {} constrained DOFs", what,
              bc.values.size(), bc.dofs.size());
  FEM_EXPECTS(bc.dofs.empty() || (bc.dofs.front() >= 0 && static_cast<std::size_t>(bc.dofs.back()) < size),
              "{}: constrained DOF {} of a vector of {} (conditions of another space?)", what,
              bc.dofs.empty() ? 0 : bc.dofs.back(), size);
}

}  // namespace

void apply_dirichlet(const DirichletValues& bc, const CsrPattern& p, std::span<double> values,
                     std::span<double> b) {
  FEM_EXPECTS(values.size() == p.nnz(), "apply_dirichlet: {} values for a pattern of {} nonzeros",
              values.size(), p.nnz());
  FEM_EXPECTS(b.size() == static_cast<std::size_t>(p.rows()),
              "apply_dirichlet: right-hand side of {} for {} rows", b.size(), p.rows());
  check_dofs(bc, static_cast<std::size_t>(p.rows()), "apply_dirichlet");
  std::vector<double> g(p.rows(), 0.0);
  std::vector<char> fixed(p.rows(), 0);
  for (std::size_t k = 0; k < bc.dofs.size(); ++k) {
    fixed[bc.dofs[k]] = 1;
    g[bc.dofs[k]] = bc.values[k];
  }
  const auto off = p.row_offsets();
  const auto col = p.col_indices();
  // A row is a few ns: threads from 2·32768 rows on (fem/threads.hpp), in dynamic chunks so a
  // thread on a core another process also wants takes fewer.
  const int threads = threads_for(static_cast<std::size_t>(p.rows()), 32768);
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(dynamic, 4096)
  for (index_t r = 0; r < p.rows(); ++r) {
    if (fixed[r]) {
      double diag = 1.0;
      for (index_t k = off[r]; k < off[r + 1]; ++k) {
        if (col[k] != r) {
          values[k] = 0.0;
        } else {
          if (values[k] == 0.0) values[k] = 1.0;  // keep the row's scale; a zero diagonal becomes 1
          diag = values[k];
        }
      }
      b[r] = diag * g[r];
    } else {
      for (index_t k = off[r]; k < off[r + 1]; ++k)
        if (fixed[col[k]]) {
          b[r] -= values[k] * g[col[k]];
          values[k] = 0.0;
        }
    }
  }
}

void set_dirichlet(const DirichletValues& bc, std::span<double> x) {
  check_dofs(bc, x.size(), "set_dirichlet");
  for (std::size_t k = 0; k < bc.dofs.size(); ++k) x[bc.dofs[k]] = bc.values[k];
}

void zero_dirichlet(const DirichletValues& bc, std::span<double> r) {
  check_dofs(bc, r.size(), "zero_dirichlet");
  for (index_t dof : bc.dofs) r[dof] = 0.0;
}

namespace {

/// A facet by its sorted vertices (up to four), to find it in another selection.
using FacetKey = std::array<index_t, 4>;
FacetKey facet_key(const index_t* v, int nvf) {
  FacetKey k{-1, -1, -1, -1};
  std::copy(v, v + nvf, k.begin());
  std::sort(k.begin(), k.begin() + nvf);
  return k;
}

std::string point_text(std::span<const double> x) {
  std::string s = "(";
  for (std::size_t d = 0; d < x.size(); ++d) s += fmt::format("{}{:g}", d ? ", " : "", x[d]);
  return s + ")";
}

/// Integrate n.g over the facets of `facets` whose `use` is set (all when `use` is empty).
void integrate_flux(const FunctionSpace& V, const Neumann& n, const SelectedFacets& facets,
                    const std::vector<char>& use, std::span<double> b);

}  // namespace

void assemble_neumann(const FunctionSpace& V, std::span<const Neumann> conditions, std::span<double> b) {
  FEM_EXPECTS(b.size() == static_cast<std::size_t>(V.num_dofs()), "Neumann: vector of {}, space of {} DOFs",
              b.size(), V.num_dofs());
  for (const Neumann& n : conditions)
    FEM_EXPECTS(n.g != nullptr, "a Neumann condition needs a flux function");
  const Mesh& mesh = V.mesh();
  const std::size_t count = conditions.size();
  std::vector<SelectedFacets> selected(count);
  for (std::size_t i = 0; i < count; ++i) selected[i] = select_facet_geometry(mesh, conditions[i].where);
  const int nvf = mesh.facet_info().num_vertices;

  // A flux is a boundary condition: a tagged facet inside the domain takes none.
  if (std::any_of(conditions.begin(), conditions.end(),
                  [](const Neumann& n) { return !n.where.whole_boundary; })) {
    int bnvf = 0;
    const auto boundary = select_facets(mesh, FacetSet::all(), bnvf);
    std::vector<FacetKey> keys;
    for (std::size_t f = 0; f < boundary.size() / static_cast<std::size_t>(bnvf); ++f)
      keys.push_back(facet_key(&boundary[f * bnvf], bnvf));
    std::sort(keys.begin(), keys.end());
    for (std::size_t i = 0; i < count; ++i) {
      if (conditions[i].where.whole_boundary) continue;
      for (std::size_t f = 0; f < selected[i].size(); ++f) {
        const index_t* v = &selected[i].vertices[f * nvf];
        if (std::binary_search(keys.begin(), keys.end(), facet_key(v, nvf))) continue;
        throw InvalidArgument(fmt::format(
            "mesh '{}': the Neumann condition on {} has an interior facet (the one at {}): a flux is a "
            "boundary condition, and an interface inside the domain takes none",
            mesh.source(), conditions[i].where.describe(mesh), point_text(mesh.node(v[0]))));
      }
    }
  }
  if (count == 1) return integrate_flux(V, conditions[0], selected[0], {}, b);

  // Each facet takes its flux from the conditions on its tags if any, else from those on `all`;
  // two of them must agree on it (at its vertices, to 1e-10 of the largest flux given).
  const int bs = V.components();
  const auto value_at = [&](std::size_t i, index_t node, double* g) {
    conditions[i].g(mesh.node(node).data(), g);
  };
  double scale = 0;
  std::vector<double> g(static_cast<std::size_t>(bs)), h(static_cast<std::size_t>(bs));
  for (std::size_t i = 0; i < count; ++i)
    for (index_t node : selected[i].vertices) {
      value_at(i, node, g.data());
      for (double x : g) scale = std::max(scale, std::abs(x));
    }
  std::map<FacetKey, std::pair<int, std::size_t>> owner;  // facet -> (level, condition)
  for (std::size_t i = 0; i < count; ++i) {
    const int level = conditions[i].where.whole_boundary ? 0 : 1;
    for (std::size_t f = 0; f < selected[i].size(); ++f) {
      const index_t* v = &selected[i].vertices[f * nvf];
      const auto [it, fresh] = owner.try_emplace(facet_key(v, nvf), level, i);
      if (fresh || level < it->second.first) continue;
      if (level > it->second.first) {
        it->second = {level, i};
        continue;
      }
      const std::size_t j = it->second.second;
      for (int k = 0; k < nvf; ++k) {
        value_at(i, v[k], g.data());
        value_at(j, v[k], h.data());
        for (int c = 0; c < bs; ++c)
          if (std::abs(g[c] - h[c]) > 1e-10 * scale)
            throw InvalidArgument(fmt::format(
                "mesh '{}': the Neumann conditions on {} and on {} give the facet at {} two fluxes ({:g} and "
                "{:g}{}); a facet in several groups takes one flux (a condition on a tag wins over one on "
                "'all', and two tags must agree where they meet)",
                mesh.source(), conditions[j].where.describe(mesh), conditions[i].where.describe(mesh),
                point_text(mesh.node(v[k])), h[c], g[c], bs > 1 ? fmt::format(", component {}", c + 1) : ""));
      }
    }
  }
  for (std::size_t i = 0; i < count; ++i) {
    std::vector<char> use(selected[i].size(), 0);
    for (std::size_t f = 0; f < selected[i].size(); ++f)
      use[f] = owner.at(facet_key(&selected[i].vertices[f * nvf], nvf)).second == i;
    integrate_flux(V, conditions[i], selected[i], use, b);
  }
}

double boundary_flux(const FunctionSpace& V, std::span<const double> u, const FacetSet& where) {
  const Mesh& mesh = V.mesh();
  const int dim = mesh.tdim(), gdim = mesh.gdim();
  FEM_EXPECTS(V.components() == gdim && dim == gdim && dim >= 2,
              "boundary_flux: a field with one component per coordinate on a 2D or 3D mesh, not {}",
              V.name());
  FEM_EXPECTS(u.size() == static_cast<std::size_t>(V.num_dofs()), "boundary_flux: u has {} entries, {} {}",
              u.size(), V.name(), V.num_dofs());
  // The boundary facets, each with its vertices in the owning cell's order and that cell (for the
  // outward side), kept when `where` has them.
  const auto bf = gpu::find_boundary_facets(gpu::Executor::host(), mesh);
  const int nvf = bf.vertices_per_facet;
  std::vector<FacetKey> keys;
  if (!where.whole_boundary) {
    int n = 0;
    const auto selected = select_facets(mesh, where, n);
    for (std::size_t f = 0; f < selected.size() / static_cast<std::size_t>(n); ++f)
      keys.push_back(facet_key(&selected[f * static_cast<std::size_t>(n)], n));
    std::sort(keys.begin(), keys.end());
    std::vector<FacetKey> boundary;
    for (index_t f = 0; f < bf.size(); ++f)
      boundary.push_back(facet_key(&bf.vertices[static_cast<std::size_t>(f) * nvf], nvf));
    std::sort(boundary.begin(), boundary.end());
    for (std::size_t f = 0; f < keys.size(); ++f)
      if (!std::binary_search(boundary.begin(), boundary.end(), keys[f]))
        throw InvalidArgument(fmt::format("mesh '{}': the flux through {} has an interior facet (at {})",
                                          mesh.source(), where.describe(mesh),
                                          point_text(mesh.node(keys[f][0]))));
  }
  int npf = 0;
  const auto nodes = facet_nodes(V, bf.vertices, nvf, npf);
  const CellType facet_element = cell_info(V.element()).facet, facet_geometry = mesh.facet_info().type;
  const CellType vertex_facet = first_order(facet_geometry);
  const Quadrature& q = quadrature(vertex_facet, 2 * V.degree() + 2);
  const int fdim = dim - 1, nq = q.size(), ngv = nvf;
  std::vector<double> phi(static_cast<std::size_t>(nq * npf)), psi(static_cast<std::size_t>(nq * ngv)),
      dpsi(static_cast<std::size_t>(nq * ngv * fdim)),
      scratch(static_cast<std::size_t>(std::max(npf, ngv) * 3));
  for (int k = 0; k < nq; ++k) {
    const double* xi = &q.points[static_cast<std::size_t>(k * fdim)];
    lagrange_eval(vertex_facet, xi, &psi[static_cast<std::size_t>(k * ngv)],
                  &dpsi[static_cast<std::size_t>(k * ngv * fdim)]);
    lagrange_eval(facet_element, xi, &phi[static_cast<std::size_t>(k * npf)], scratch.data());
  }
  double flux = 0;
  for (index_t f = 0; f < bf.size(); ++f) {
    const index_t* v = &bf.vertices[static_cast<std::size_t>(f) * nvf];
    if (!where.whole_boundary && !std::binary_search(keys.begin(), keys.end(), facet_key(v, nvf))) continue;
    // The outward normal: the facet's normal pointing away from its cell's vertex centroid.
    const auto cell = mesh.cell(bf.cell[static_cast<std::size_t>(f)]);
    const int ncv = mesh.cell_info().num_vertices;
    double centre[3] = {}, mid[3] = {};
    for (int a = 0; a < ncv; ++a)
      for (int d = 0; d < gdim; ++d) centre[d] += mesh.node(cell[static_cast<std::size_t>(a)])[d] / ncv;
    for (int a = 0; a < nvf; ++a)
      for (int d = 0; d < gdim; ++d) mid[d] += mesh.node(v[a])[d] / nvf;
    for (int k = 0; k < nq; ++k) {
      double t[2][3] = {};
      for (int a = 0; a < ngv; ++a)
        for (int d = 0; d < gdim; ++d)
          for (int b = 0; b < fdim; ++b)
            t[b][d] += dpsi[static_cast<std::size_t>((k * ngv + a) * fdim + b)] * mesh.node(v[a])[d];
      double n[3];
      if (fdim == 1) {
        n[0] = t[0][1], n[1] = -t[0][0], n[2] = 0;
      } else {
        n[0] = t[0][1] * t[1][2] - t[0][2] * t[1][1];
        n[1] = t[0][2] * t[1][0] - t[0][0] * t[1][2];
        n[2] = t[0][0] * t[1][1] - t[0][1] * t[1][0];
      }
      double side = 0;
      for (int d = 0; d < gdim; ++d) side += n[d] * (mid[d] - centre[d]);
      const double sign = side < 0 ? -1.0 : 1.0;  // |n| is the measure: n·u dξ = u·n̂ ds
      const double* ph = &phi[static_cast<std::size_t>(k * npf)];
      for (int i = 0; i < npf; ++i) {
        const auto node = static_cast<std::size_t>(nodes[static_cast<std::size_t>(f) * npf + i]);
        double un = 0;
        for (int d = 0; d < gdim; ++d) un += u[node * gdim + d] * n[d];
        flux += q.weights[static_cast<std::size_t>(k)] * sign * ph[i] * un;
      }
    }
  }
  return flux;
}

namespace {

void integrate_flux(const FunctionSpace& V, const Neumann& n, const SelectedFacets& facets,
                    const std::vector<char>& use, std::span<double> b) {
  const Mesh& mesh = V.mesh();
  const int gdim = mesh.gdim(), bs = V.components(), fdim = mesh.tdim() - 1;
  const int nvf = facets.vertices_per_facet;
  int npf = 0;
  const auto nodes = facet_nodes(V, facets.vertices, nvf, npf);
  const std::size_t nf = facets.size();
  std::vector<double> gx(bs), x(3);
  if (fdim == 0) {  // point facets: the value at the vertex
    for (std::size_t f = 0; f < nf; ++f) {
      if (!use.empty() && !use[f]) continue;
      n.g(mesh.node(facets.vertices[f]).data(), gx.data());
      for (int c = 0; c < bs; ++c) b[static_cast<std::size_t>(nodes[f]) * bs + c] += gx[c];
    }
    return;
  }
  // The facet's own geometry map (line3, tri6, quad9 on second-order meshes: the curved facet,
  // not its chord) over all its nodes; the space's facet element over its DOF nodes. Both are
  // Lagrange elements on the same reference facet with the vertices in the same order. A curved
  // map makes the integrand rational (the measure is a square root): two degrees more.
  const CellType geometry = facets.geometry, facet_element = cell_info(V.element()).facet;
  const int ng = facets.nodes_per_facet;
  const int degree = 2 * V.degree() + 2 + 2 * (cell_info(geometry).order - 1);
  const Quadrature& q = quadrature(geometry, degree);
  const int nq = q.size();
  std::vector<double> phi(static_cast<std::size_t>(nq) * npf), psi(static_cast<std::size_t>(nq) * ng),
      dpsi(static_cast<std::size_t>(nq) * ng * fdim),
      scratch(static_cast<std::size_t>(std::max(npf, ng)) * 3);
  for (int k = 0; k < nq; ++k) {
    const double* xi = &q.points[static_cast<std::size_t>(k) * fdim];
    lagrange_eval(geometry, xi, &psi[static_cast<std::size_t>(k) * ng],
                  &dpsi[static_cast<std::size_t>(k) * ng * fdim]);
    lagrange_eval(facet_element, xi, &phi[static_cast<std::size_t>(k) * npf], scratch.data());
  }
  for (std::size_t f = 0; f < nf; ++f) {
    if (!use.empty() && !use[f]) continue;
    const index_t* g_nodes = &facets.nodes[f * ng];
    for (int k = 0; k < nq; ++k) {
      const double* ps = &psi[static_cast<std::size_t>(k) * ng];
      const double* dps = &dpsi[static_cast<std::size_t>(k) * ng * fdim];
      double t[2][3] = {};  // tangents ∂x/∂ξ
      std::fill(x.begin(), x.end(), 0.0);
      for (int v = 0; v < ng; ++v) {
        const auto X = mesh.node(g_nodes[v]);
        for (int d = 0; d < gdim; ++d) {
          x[d] += ps[v] * X[d];
          for (int a = 0; a < fdim; ++a) t[a][d] += dps[v * fdim + a] * X[d];
        }
      }
      double measure;
      if (fdim == 1) {
        measure = std::sqrt(t[0][0] * t[0][0] + t[0][1] * t[0][1] + t[0][2] * t[0][2]);
      } else {
        const double c0 = t[0][1] * t[1][2] - t[0][2] * t[1][1], c1 = t[0][2] * t[1][0] - t[0][0] * t[1][2],
                     c2 = t[0][0] * t[1][1] - t[0][1] * t[1][0];
        measure = std::sqrt(c0 * c0 + c1 * c1 + c2 * c2);
      }
      n.g(x.data(), gx.data());
      const double w = q.weights[k] * measure;
      const double* ph = &phi[static_cast<std::size_t>(k) * npf];
      for (int i = 0; i < npf; ++i)
        for (int c = 0; c < bs; ++c)
          b[static_cast<std::size_t>(nodes[f * npf + i]) * bs + c] += w * gx[c] * ph[i];
    }
  }
}

}  // namespace

}  // namespace fem::assembly
