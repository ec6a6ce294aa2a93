// Facet selection, facet nodes (edge nodes found through the DOF map's edge table), Dirichlet
// lifting on CSR matrices and Neumann facet integrals.
#include "fem/assembly/boundary.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "fem/assembly/quadrature.hpp"
#include "fem/error.hpp"
#include "fem/gpu/connectivity.hpp"
#include "fem/gpu/keys.hpp"
#include "fem/lagrange.hpp"
#include "fem/reference_cell.hpp"

namespace fem::assembly {

std::vector<index_t> select_facets(const Mesh& mesh, const FacetSet& set, int& vertices_per_facet) {
  vertices_per_facet = mesh.facet_info().num_vertices;
  std::vector<index_t> out;
  if (set.whole_boundary) {
    const auto bf = gpu::find_boundary_facets(gpu::Executor::host(), mesh);
    return bf.vertices;
  }
  const int nvf = vertices_per_facet;
  std::set<int> present(mesh.facet_tags().begin(), mesh.facet_tags().end());
  for (int tag : set.tags) {
    if (present.count(tag)) continue;
    std::string tags;
    for (int t : present) {
      const auto name = mesh.name_of(mesh.tdim() - 1, t);
      tags += fmt::format("{}{}{}", tags.empty() ? "" : ", ", t, name.empty() ? "" : fmt::format(" ({})", name));
    }
    const auto name = mesh.name_of(mesh.tdim() - 1, tag);
    throw InvalidArgument(fmt::format("mesh '{}' has no boundary facet with tag {}{}; its facet tags are: {}",
                                      mesh.source(), tag, name.empty() ? "" : fmt::format(" ({})", name),
                                      tags.empty() ? "none" : tags));
  }
  for (index_t f = 0; f < mesh.num_facets(); ++f)
    if (std::find(set.tags.begin(), set.tags.end(), mesh.facet_tags()[f]) != set.tags.end())
      for (int k = 0; k < nvf; ++k) out.push_back(mesh.facet(f)[k]);
  return out;
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
  if (nedges == 1) edges = {{0, 1}};
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
      FEM_EXPECTS(node >= 0, "mesh '{}': boundary facet {} has node {}, which is no cell vertex", V.mesh().source(),
                  f, v[k]);
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
        FEM_EXPECTS(found[k], "mesh '{}': an edge of boundary facet {} is no edge of any cell", V.mesh().source(), f);
        out[f * nodes_per_facet + nvf + e] = d.node_of_edge(static_cast<index_t>(ids[k]));
      }
  }
  return out;
}

DirichletValues dirichlet_values(const FunctionSpace& V, std::span<const Dirichlet> conditions) {
  const int bs = V.components(), gdim = V.mesh().gdim();
  const DofMap& d = V.dofmap();
  std::vector<std::pair<index_t, double>> constrained;
  for (const Dirichlet& bc : conditions) {
    FEM_EXPECTS(bc.component >= -1 && bc.component < bs, "Dirichlet component {} of a space with {} components",
                bc.component, bs);
    int nvf = 0, npf = 0;
    const auto vertices = select_facets(V.mesh(), bc.where, nvf);
    const auto nodes = facet_nodes(V, vertices, nvf, npf);
    std::vector<index_t> unique(nodes);
    std::sort(unique.begin(), unique.end());
    unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
    for (index_t node : unique) {
      const double value = bc.value ? bc.value(&d.coordinates[static_cast<std::size_t>(node) * gdim]) : 0.0;
      for (int c = 0; c < bs; ++c)
        if (bc.component < 0 || bc.component == c) constrained.emplace_back(node * bs + c, value);
    }
  }
  // Later conditions win: keep the last entry of each DOF.
  std::stable_sort(constrained.begin(), constrained.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  DirichletValues out;
  for (std::size_t i = 0; i < constrained.size(); ++i)
    if (i + 1 == constrained.size() || constrained[i + 1].first != constrained[i].first) {
      out.dofs.push_back(constrained[i].first);
      out.values.push_back(constrained[i].second);
    }
  return out;
}

void apply_dirichlet(const DirichletValues& bc, const CsrPattern& p, std::span<double> values, std::span<double> b) {
  FEM_EXPECTS(values.size() == p.nnz(), "apply_dirichlet: {} values for a pattern of {} nonzeros", values.size(),
              p.nnz());
  FEM_EXPECTS(b.size() == static_cast<std::size_t>(p.rows()), "apply_dirichlet: right-hand side of {} for {} rows",
              b.size(), p.rows());
  std::vector<double> g(p.rows(), 0.0);
  std::vector<char> fixed(p.rows(), 0);
  for (std::size_t k = 0; k < bc.dofs.size(); ++k) {
    fixed[bc.dofs[k]] = 1;
    g[bc.dofs[k]] = bc.values[k];
  }
  const auto off = p.row_offsets();
  const auto col = p.col_indices();
#pragma omp parallel for schedule(static)
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
  for (std::size_t k = 0; k < bc.dofs.size(); ++k) x[bc.dofs[k]] = bc.values[k];
}

void zero_dirichlet(const DirichletValues& bc, std::span<double> r) {
  for (index_t dof : bc.dofs) r[dof] = 0.0;
}

void assemble_neumann(const FunctionSpace& V, const Neumann& n, std::span<double> b) {
  FEM_EXPECTS(n.g != nullptr, "a Neumann condition needs a flux function");
  FEM_EXPECTS(b.size() == static_cast<std::size_t>(V.num_dofs()), "Neumann: vector of {}, space of {} DOFs", b.size(),
              V.num_dofs());
  const Mesh& mesh = V.mesh();
  const int gdim = mesh.gdim(), bs = V.components(), fdim = mesh.tdim() - 1;
  int nvf = 0, npf = 0;
  const auto vertices = select_facets(mesh, FacetSet::tagged(n.tags), nvf);
  const auto nodes = facet_nodes(V, vertices, nvf, npf);
  const std::size_t nf = vertices.size() / nvf;
  const CellType facet_geometry = cell_info(mesh.cell_info().facet).num_vertices == 1 ? CellType::point
                                  : nvf == 2                                          ? CellType::line2
                                  : nvf == 3                                          ? CellType::tri3
                                                                                      : CellType::quad4;
  const CellType facet_element = cell_info(V.element()).facet;
  const int degree = 2 * V.degree() + 2;
  std::vector<double> gx(bs), x(3), phi(npf), dphi(npf * 3), psi(nvf), dpsi(nvf * 3);
  if (fdim == 0) {  // point facets: the value at the vertex
    for (std::size_t f = 0; f < nf; ++f) {
      n.g(mesh.node(vertices[f]).data(), gx.data());
      for (int c = 0; c < bs; ++c) b[static_cast<std::size_t>(nodes[f]) * bs + c] += gx[c];
    }
    return;
  }
  const Quadrature& q = quadrature(facet_geometry, degree);
  for (std::size_t f = 0; f < nf; ++f) {
    for (int k = 0; k < q.size(); ++k) {
      const double* xi = &q.points[k * fdim];
      lagrange_eval(facet_geometry, xi, psi.data(), dpsi.data());
      lagrange_eval(facet_element, xi, phi.data(), dphi.data());
      double t[2][3] = {};  // tangents ∂x/∂ξ
      std::fill(x.begin(), x.end(), 0.0);
      for (int v = 0; v < nvf; ++v) {
        const auto X = mesh.node(vertices[f * nvf + v]);
        for (int d = 0; d < gdim; ++d) {
          x[d] += psi[v] * X[d];
          for (int a = 0; a < fdim; ++a) t[a][d] += dpsi[v * fdim + a] * X[d];
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
      for (int i = 0; i < npf; ++i)
        for (int c = 0; c < bs; ++c) b[static_cast<std::size_t>(nodes[f * npf + i]) * bs + c] += w * gx[c] * phi[i];
    }
  }
}

}  // namespace fem::assembly
