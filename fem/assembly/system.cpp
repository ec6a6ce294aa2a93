// The problem layer (system.hpp).
#include "fem/assembly/system.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "fem/norm.hpp"
#include "fem/reference_cell.hpp"

namespace fem::assembly {

DirichletValues dirichlet_values(const FunctionSpace& V, std::span<const Dirichlet> conditions) {
  return dirichlet_values(V, conditions, Layout::serial());
}

DirichletValues dirichlet_values(const FunctionSpace& V, std::span<const Dirichlet> conditions,
                                 const Layout& layout) {
  const auto n = static_cast<std::size_t>(V.num_dofs());
  const Mesh& mesh = V.mesh();
  const auto level_of = [&](std::size_t i) { return conditions[i].where.whole_boundary ? 1.0 : 2.0; };
  // Each condition's DOFs where this process has them; the most specific level that reaches
  // each DOF (0: none, 1: `all`, 2: a tag) on any process.
  std::vector<DirichletValues> each(conditions.size());
  std::vector<double> level(n, 0.0);
  double scale = 0;
  layout.processes().collective([&] {
    for (const auto& c : conditions)
      if (!c.where.whole_boundary) check_facet_tags(mesh, c.where.tags, layout);
    for (std::size_t i = 0; i < conditions.size(); ++i) {
      each[i] = condition_values(V, conditions[i]);
      for (std::size_t k = 0; k < each[i].dofs.size(); ++k) {
        double& l = level[static_cast<std::size_t>(each[i].dofs[k])];
        l = std::max(l, level_of(i));
        scale = std::max(scale, std::abs(each[i].values[k]));
      }
    }
  });
  layout.maximize(level);
  scale = layout.processes().max(scale);
  // The largest and the smallest value the conditions of that level give each DOF, and which
  // condition gives each: they must agree (to 1e-10 of the largest value given).
  const double none = -std::numeric_limits<double>::infinity();
  std::vector<double> high(n, none), low(n, none);  // low holds -min
  const auto for_each_winning = [&](auto&& f) {
    for (std::size_t i = 0; i < conditions.size(); ++i)
      for (std::size_t k = 0; k < each[i].dofs.size(); ++k) {
        const auto dof = static_cast<std::size_t>(each[i].dofs[k]);
        if (level[dof] == level_of(i)) f(i, dof, each[i].values[k]);
      }
  };
  for_each_winning([&](std::size_t, std::size_t dof, double v) {
    high[dof] = std::max(high[dof], v);
    low[dof] = std::max(low[dof], -v);
  });
  layout.maximize(high);
  layout.maximize(low);
  const double tolerance = 1e-10 * scale;
  std::vector<double> conflict(n, 0.0);
  bool conflicts = false;
  for (std::size_t d = 0; d < n; ++d)
    if (level[d] > 0 && high[d] + low[d] > tolerance) conflict[d] = 1, conflicts = true;
  if (layout.processes().max(conflicts ? 1.0 : 0.0) > 0) {
    // Name the conditions that give the largest and the smallest value (1 + index, on any process).
    std::vector<double> by_high(n, 0.0), by_low(n, 0.0);
    for_each_winning([&](std::size_t i, std::size_t dof, double v) {
      if (!conflict[dof]) return;
      if (v == high[dof]) by_high[dof] = std::max(by_high[dof], static_cast<double>(i + 1));
      if (-v == low[dof]) by_low[dof] = std::max(by_low[dof], static_cast<double>(i + 1));
    });
    layout.maximize(by_high);
    layout.maximize(by_low);
    layout.processes().collective([&] {
      const int bs = V.components();
      for (std::size_t d = 0; d < n; ++d) {
        if (!conflict[d] || by_high[d] == 0 || by_low[d] == 0) continue;
        const auto& a = conditions[static_cast<std::size_t>(by_low[d]) - 1];
        const auto& b = conditions[static_cast<std::size_t>(by_high[d]) - 1];
        const auto node = d / static_cast<std::size_t>(bs);
        std::string at = "(";
        for (int k = 0; k < mesh.gdim(); ++k)
          at += fmt::format("{}{:g}", k ? ", " : "",
                            V.dofmap().coordinates[node * static_cast<std::size_t>(mesh.gdim()) + k]);
        at += ")";
        throw InvalidArgument(fmt::format(
            "mesh '{}': the Dirichlet conditions on {} and on {} give the node at {} two values ({:g} and "
            "{:g}{}); where conditions meet they must agree (a condition on a tag wins over one on 'all', "
            "whatever their order; give the shared nodes one value)",
            mesh.source(), a.where.describe(mesh), b.where.describe(mesh), at, -low[d], high[d],
            bs > 1 ? fmt::format(", component {}", d % static_cast<std::size_t>(bs) + 1) : ""));
      }
    });
  }
  DirichletValues out;
  out.space = SpaceId(V);  // checked wherever they are applied (require_space)
  for (std::size_t i = 0; i < n; ++i)
    if (level[i] > 0) {
      out.dofs.push_back(static_cast<index_t>(i));
      out.values.push_back(high[i]);
    }
  return out;
}

namespace {

// A distributed matrix with no Dirichlet condition anywhere. A scalar problem whose operator
// annihilates the constants (a pure Neumann problem: ‖A·1‖ against ‖diag A‖, with global sums)
// gets the serial path's null space: the constant, with the mass's row sums (consistent) as its
// functional, so the distributed solver pins one unknown and returns the zero-mean solution. A
// reaction term makes it regular: returned as it is. Free rigid motions (several vectors) are
// refused in words, as the distributed solvers pin one unknown only.
CsrMatrix distributed_free_constant(const Assembler& assembler, CsrMatrix A, const Layout& layout) {
  const FunctionSpace& V = assembler.space();
  if (V.components() != 1)
    throw InvalidArgument(
        "no Dirichlet condition: the rigid motions are free, and the distributed solvers fix one free "
        "constant only (solve it on one process, or give a Dirichlet condition)");
  const auto n = static_cast<std::size_t>(A.rows());
  std::vector<double> one(n, 1.0), Az(n), diagonal(n, 0.0);
  A.multiply(one, Az);
  const auto off = A.pattern().row_offsets();
  const auto col = A.pattern().col_indices();
  for (std::size_t r = 0; r < n; ++r)
    for (index_t e = off[r]; e < off[r + 1]; ++e)
      if (static_cast<std::size_t>(col[e]) == r) diagonal[r] += A.values()[static_cast<std::size_t>(e)];
  layout.accumulate(Az);
  layout.accumulate(diagonal);
  if (!(std::sqrt(layout.dot(Az, Az)) <= 1e-10 * std::sqrt(layout.dot(diagonal, diagonal)))) return A;
  std::vector<double> functional(n);
  assembler.matrix(Mass{}).multiply(one, functional);
  layout.accumulate(functional);
  auto ns = std::make_shared<const NullSpace>(A.rows(), std::vector<std::vector<double>>{std::move(one)},
                                              std::vector<std::string>{"constant"},
                                              std::vector<std::vector<double>>{std::move(functional)});
  return CsrMatrix(A.pattern_ptr(), std::move(A).release_values(), std::move(ns));
}

}  // namespace

CsrMatrix system_matrix(const Assembler& assembler, std::vector<double> values, const DirichletValues& bc,
                        const Layout& layout) {
  require_space(bc, assembler.space(), "system_matrix");
  CsrMatrix A(assembler.pattern(), std::move(values));
  if (layout.distributed()) {
    if (layout.count_owned(bc.dofs) > 0) return A;  // a global count: every process decides alike
    return distributed_free_constant(assembler, std::move(A), layout);
  }
  auto ns = null_space(assembler, A, bc);
  return CsrMatrix(A.pattern_ptr(), std::move(A).release_values(), std::move(ns));
}

CsrMatrix constrained_matrix(const CsrMatrix& A, const FunctionSpace& V, std::vector<double> values,
                             const DirichletValues& bc) {
  require_space(bc, V, "constrained_matrix");
  require_pattern_of(A.pattern(), V, "constrained_matrix: the matrix");
  if (!A.null_space()) return CsrMatrix(A.pattern_ptr(), std::move(values));
  const Assembler assembler(V);
  FEM_EXPECTS(assembler.pattern() == A.pattern_ptr() || assembler.pattern()->same_structure(A.pattern()),
              "a matrix that is not on the pattern of the space {} of '{}'", V.name(), V.mesh_key());
  return system_matrix(assembler, std::move(values), bc);
}

Errors solution_errors(const Assembler& assembler, std::span<const double> u, const VectorFunction& exact,
                       const NullSpace* null_space, const Layout& layout) {
  Errors e = layout.processes().collective([&] {
    if (!null_space) return errors(assembler, u, exact);
    // The exact solution carries its own constant (rigid motion); u has ∫u·z = 0. Compare u
    // normalized like the exact solution: u + (I u_e - normalized I u_e), I the interpolant.
    std::vector<double> shift = interpolate(assembler.space(), exact), normalized = shift;
    null_space->normalize(normalized);
    for (std::size_t i = 0; i < shift.size(); ++i) shift[i] = u[i] + (shift[i] - normalized[i]);
    return errors(assembler, shift, exact);
  });
  if (layout.distributed()) {  // the norm of the processes' norms, scaled (fem/norm.hpp)
    const auto& p = layout.processes();
    for (double* n : {&e.l2, &e.h1}) {
      const double scale = square_scale(p.max(*n)), y = *n / scale;
      *n = scale * std::sqrt(p.sum(y * y));
    }
  }
  return e;
}

namespace {
/// The vertex pair of a second-order mesh node (an edge node, Gmsh's order), or {-1, -1}.
std::pair<int, int> edge_of(CellType type, int node) {
  const auto edges = local_edges(type);
  const int e = node - cell_info(type).num_vertices;
  if (e < 0 || e >= static_cast<int>(edges.size())) return {-1, -1};
  return {edges[static_cast<std::size_t>(e)][0], edges[static_cast<std::size_t>(e)][1]};
}
}  // namespace

std::vector<double> mesh_node_values(const FunctionSpace& V, std::span<const double> u, int width) {
  const Mesh& mesh = V.mesh();
  const auto& dm = V.dofmap();
  const int bs = V.components();
  if (width <= 0) width = bs;
  FEM_EXPECTS(width >= bs, "mesh_node_values: {} values per node for a space of {} components", width, bs);
  FEM_EXPECTS(u.size() == static_cast<std::size_t>(V.num_dofs()),
              "mesh_node_values: {} values, the space {} DOFs", u.size(), V.num_dofs());
  std::vector<double> out(static_cast<std::size_t>(mesh.num_nodes()) * width, 0.0);
  const int mesh_npc = mesh.cell_info().num_nodes, nv = mesh.cell_info().num_vertices;
  const bool same_nodes = dm.nodes_per_cell == mesh_npc;
  for (index_t c = 0; c < mesh.num_cells(); ++c) {
    const auto cell = mesh.cell(c);
    const index_t* nodes = dm.cell_nodes.data() + static_cast<std::size_t>(c) * dm.nodes_per_cell;
    auto value = [&](int i, int k) { return u[static_cast<std::size_t>(nodes[i]) * bs + k]; };
    for (int i = 0; i < mesh_npc; ++i) {
      double* o = out.data() + static_cast<std::size_t>(cell[i]) * width;
      const auto [a, b] = i < nv || same_nodes ? std::pair{-1, -1} : edge_of(mesh.cell_type(), i);
      for (int k = 0; k < bs; ++k) {
        if (i < nv || same_nodes) {
          o[k] = value(i, k);
        } else if (a >= 0) {
          o[k] = 0.5 * (value(a, k) + value(b, k));  // the linear interpolant at the edge midpoint
        } else {
          double mean = 0;  // face and cell centres
          for (int j = 0; j < nv; ++j) mean += value(j, k);
          o[k] = mean / nv;
        }
      }
    }
  }
  return out;
}

std::vector<double> cell_average_gradient(const Assembler& A, std::span<const double> u) {
  const FunctionSpace& V = A.space();
  const int bs = V.components(), gdim = V.mesh().gdim();
  const std::size_t width = static_cast<std::size_t>(bs) * gdim;
  std::vector<double> out(static_cast<std::size_t>(V.mesh().num_cells()) * width, 0.0);
  // Each cell writes only its own entries, so the threads of the cell loop never share one.
  integrate_cells(
      V, A.plan(),
      [&](const auto& cv) {
        constexpr int dim = std::remove_cvref_t<decltype(cv)>::dim;
        double sum[3 * 3] = {}, volume = 0, g[3];
        for (int q = 0; q < cv.num_points; ++q) {
          for (int k = 0; k < cv.bs; ++k) {
            cv.u_grad(q, g, k);
            for (int d = 0; d < dim; ++d) sum[k * dim + d] += cv.weight[q] * g[d];
          }
          volume += cv.weight[q];
        }
        double* o = out.data() + static_cast<std::size_t>(cv.cell) * width;
        for (std::size_t k = 0; k < width; ++k) o[k] = sum[k] / volume;
        return 0.0;
      },
      A.quadrature_degree(std::max(0, V.degree() - 1)), u);
  return out;
}

void require_space(const DirichletValues& bc, const FunctionSpace& V, std::string_view what) {
  if (bc.space.known()) {
    if (!(bc.space == SpaceId(V)))
      throw InvalidArgument(
          fmt::format("{}: Dirichlet conditions made on the space {} used on the space {}: conditions belong "
                      "to their space (make them on this one)",
                      what, bc.space.describe(), V.describe()));
    return;
  }
  const index_t n = V.num_dofs();
  for (index_t dof : bc.dofs)
    if (dof < 0 || dof >= n)
      throw InvalidArgument(fmt::format("{}: a Dirichlet condition on DOF {}, but the space {} has {} DOFs",
                                        what, dof, V.describe(), n));
}

void require_pattern_of(const CsrPattern& pattern, const FunctionSpace& V, std::string_view what) {
  const auto own = plan(V);
  if (&own->pattern() == &pattern) return;
  // The pattern of another space's plan (another mesh or version of it, degree, components) is
  // refused even with the same structure; a pattern made by hand must have V's structure.
  const SpaceId other = space_of_pattern(pattern);
  if (other.known() ? other == SpaceId(V) : own->pattern().same_structure(pattern)) return;
  throw InvalidArgument(fmt::format(
      "{} ({} x {}, {} nonzeros) is on the pattern of {}, not on that of the space {} ({} nonzeros), which "
      "the conditions are made on: conditions belong to their space (a count of DOFs is no identity)",
      what, pattern.rows(), pattern.cols(), pattern.nnz(),
      other.known() ? "the space " + other.describe() : std::string("another space"), V.describe(),
      own->pattern().nnz()));
}

}  // namespace fem::assembly
