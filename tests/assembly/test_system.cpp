// The problem layer (fem/assembly/system.hpp): the null-space rule of every front end, errors of
// a solution with its null space, the values a result file shows (mesh-node values, cell
// gradients), and the Dirichlet values and tag checks taken with a layout.
#include <gtest/gtest.h>

#include <cmath>

#include "fem/assembly/assembly.hpp"
#include "fem/mesh/generate.hpp"
#include "fem/mesh/read.hpp"
#include "fem/reference_cell.hpp"
#include "fem/solve/linear_solver.hpp"

namespace {

using namespace fem::assembly;
using fem::CellType;

FunctionSpace space(fem::Store& store, fem::Mesh mesh, int degree, int components = 1) {
  store.put("mesh/m", std::move(mesh));
  return FunctionSpace("mesh/m", degree, components, store);
}

TEST(System, TheNullSpaceIsWhatTheConditionsLeaveFree) {
  fem::Store store;
  const FunctionSpace V = space(store, fem::mesh::unit_square(CellType::tri3, 6), 1);
  const Assembler a(V);
  const fem::CsrMatrix K = a.matrix(Diffusion{});
  auto copy = [](std::span<const double> v) { return std::vector<double>(v.begin(), v.end()); };
  // No condition: the constants.
  const auto free = system_matrix(a, copy(K.values()), {});
  ASSERT_TRUE(free.null_space());
  EXPECT_EQ(free.null_space()->names(), std::vector<std::string>{"constant"});
  // A Dirichlet condition: none.
  const auto bc = dirichlet_values(V, std::vector<Dirichlet>{{FacetSet::all(), nullptr, -1}});
  std::vector<double> held = copy(K.values()), b(V.num_dofs(), 0.0);
  apply_dirichlet(bc, *a.pattern(), held, b);
  EXPECT_FALSE(system_matrix(a, std::move(held), bc).null_space());
  // Elasticity on rollers at the left: translation y is left free, nothing else.
  const FunctionSpace W = space(store, fem::mesh::unit_square(CellType::tri3, 6), 1, 2);
  const Assembler e(W);
  const auto left = dirichlet_values(
      W, std::vector<Dirichlet>{{FacetSet::tagged({W.mesh().resolve_tag("left", 1)}), nullptr, 0}});
  const fem::CsrMatrix E = e.matrix(Elasticity{});
  std::vector<double> k = copy(E.values()), f(W.num_dofs(), 0.0);
  apply_dirichlet(left, *e.pattern(), k, f);
  const auto rollers = system_matrix(e, std::move(k), left);
  ASSERT_TRUE(rollers.null_space());
  EXPECT_EQ(rollers.null_space()->names(), std::vector<std::string>{"translation y"});
}

// A layout that claims to be distributed, on one process: what the distributed solvers need.
struct OneProcessDistributed final : fem::Layout {
  bool distributed() const noexcept override { return true; }
};

// Without a Dirichlet condition a distributed system declares the constant when its operator
// annihilates it (as serially: the mass's row sums its functional), keeps a regular one (a
// reaction term) as it is, and refuses free rigid motions in words.
TEST(System, ADistributedSystemDeclaresTheConstantAndRefusesRigidMotions) {
  fem::Store store;
  const FunctionSpace V = space(store, fem::mesh::unit_square(CellType::tri3, 4), 1);
  const Assembler a(V);
  const auto K = a.matrix(Diffusion{});
  const auto v = K.values();
  const fem::CsrMatrix neumann =
      system_matrix(a, std::vector<double>(v.begin(), v.end()), {}, OneProcessDistributed{});
  ASSERT_TRUE(neumann.null_space());
  EXPECT_EQ(neumann.null_space()->names(), std::vector<std::string>{"constant"});
  const auto serial = system_matrix(a, std::vector<double>(v.begin(), v.end()), {});
  ASSERT_TRUE(serial.null_space());
  for (std::size_t i = 0; i < static_cast<std::size_t>(V.num_dofs()); ++i)
    EXPECT_NEAR(neumann.null_space()->functional(0)[i], serial.null_space()->functional(0)[i], 1e-14) << i;
  const auto M = a.matrix(Mass{});
  const auto m = M.values();
  std::vector<double> shifted(v.begin(), v.end());
  for (std::size_t e = 0; e < shifted.size(); ++e) shifted[e] += m[e];  // −Δu + u: regular
  EXPECT_FALSE(system_matrix(a, std::move(shifted), {}, OneProcessDistributed{}).null_space());
  fem::Store elastic_store;
  const FunctionSpace E = space(elastic_store, fem::mesh::unit_square(CellType::tri3, 4), 1, 2);
  const Assembler e(E);
  const auto Ke = e.matrix(Elasticity{});
  const auto k = Ke.values();
  try {
    system_matrix(e, std::vector<double>(k.begin(), k.end()), {}, OneProcessDistributed{});
    FAIL() << "free rigid motions accepted";
  } catch (const fem::InvalidArgument& error) {
    EXPECT_NE(std::string(error.what()).find("rigid motions"), std::string::npos) << error.what();
  }
  // A tag that no facet carries is refused on a distributed layout too (the parts' union).
  const std::vector<Dirichlet> nowhere{{FacetSet::tagged({99}), nullptr, -1}};
  try {
    dirichlet_values(V, nowhere, OneProcessDistributed{});
    FAIL() << "tag 99 accepted";
  } catch (const fem::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("tag 99"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'left'"), std::string::npos) << e.what();
  }
}

TEST(System, ErrorsOfASolutionNormalizedLikeTheExactOne) {
  // -Δu = 2π² cos(πx) cos(πy), ∂u/∂n = 0: u = cos(πx) cos(πy) + C for any C. The solve returns
  // the zero-mean solution; its errors against the exact solution with C = 1 are those against
  // C = 0 (the data cannot say C), and converge at second order.
  const double pi = std::acos(-1.0);
  double previous = 0;
  for (int n : {8, 16}) {
    fem::Store store;
    const FunctionSpace V = space(store, fem::mesh::unit_square(CellType::tri3, n), 1);
    const Assembler a(V);
    const auto K = a.matrix(Diffusion{});
    std::vector<double> b(V.num_dofs(), 0.0);
    a.vector_into(
        Source{[pi](const double* x) { return 2 * pi * pi * std::cos(pi * x[0]) * std::cos(pi * x[1]); }}, b);
    store.put("A", system_matrix(a, std::vector<double>(K.values().begin(), K.values().end()), {}));
    const auto solver = fem::solve::make_solver();
    solver->factorize(store, "A");
    std::vector<double> u(b.size());
    fem::solve::require(solver->solve(b, u));
    const auto ns = store.get<fem::CsrMatrix>("A")->null_space();
    auto exact = [pi](double c) {
      return [pi, c](const double* x, double* v) { v[0] = std::cos(pi * x[0]) * std::cos(pi * x[1]) + c; };
    };
    const Errors e0 = solution_errors(a, u, exact(0.0), ns.get()),
                 e1 = solution_errors(a, u, exact(1.0), ns.get());
    EXPECT_NEAR(e1.l2, e0.l2, 1e-3 * e0.l2);
    EXPECT_GT(errors(a, u, exact(1.0)).l2, 0.5);  // without the null space: off by the constant
    if (previous > 0) {
      EXPECT_NEAR(std::log2(previous / e0.l2), 2.0, 0.2);
    }
    previous = e0.l2;
  }
}

TEST(System, MeshNodeValuesAndCellGradientsOfALinearFunction) {
  // u = 1 + 2x + 3y. P2 on a curved second-order mesh (tri6, isoparametric) holds it: its values
  // at every mesh node and its cell gradients are exact. P1 on that mesh has the vertices' values
  // exact and, at a mid-edge node, the linear interpolant (the mean of the edge's vertices).
  const fem::Mesh m = fem::mesh::read(FEM_MESHES_DIR "/annulus_p2_v41.msh");
  ASSERT_EQ(m.cell_type(), CellType::tri6);
  auto exact = [](const double* x) { return 1 + 2 * x[0] + 3 * x[1]; };
  for (int degree : {1, 2}) {
    fem::Store store;
    const FunctionSpace V = space(store, m, degree);
    const Assembler a(V);
    const auto u = interpolate(V, exact);
    const auto nodal = mesh_node_values(V, u, 3);
    ASSERT_EQ(nodal.size(), static_cast<std::size_t>(m.num_nodes()) * 3);
    double worst = 0;
    for (fem::index_t c = 0; c < m.num_cells(); ++c) {
      const auto cell = m.cell(c);
      const auto edges = fem::local_edges(CellType::tri6);
      for (int i = 0; i < 6; ++i) {
        const auto node = static_cast<std::size_t>(cell[i]);
        double want = exact(&m.coords()[node * 2]);
        if (degree == 1 && i >= 3) {
          const auto [p, q] = edges[static_cast<std::size_t>(i - 3)];
          want = 0.5 * (exact(&m.coords()[static_cast<std::size_t>(cell[p]) * 2]) +
                        exact(&m.coords()[static_cast<std::size_t>(cell[q]) * 2]));
        }
        worst = std::max({worst, std::abs(nodal[node * 3] - want), std::abs(nodal[node * 3 + 1]),
                          std::abs(nodal[node * 3 + 2])});
      }
    }
    EXPECT_LE(worst, 1e-12) << "degree " << degree;
    if (degree == 2) {
      const auto g = cell_average_gradient(a, u);
      ASSERT_EQ(g.size(), static_cast<std::size_t>(m.num_cells()) * 2);
      worst = 0;
      for (std::size_t c = 0; c < g.size(); c += 2)
        worst = std::max({worst, std::abs(g[c] - 2), std::abs(g[c + 1] - 3)});
      EXPECT_LE(worst, 1e-10);
    }
  }
  // P1 on straight triangles and a vector space on quadrilaterals: the gradient, exactly.
  fem::Store store;
  const FunctionSpace W = space(store, fem::mesh::unit_square(CellType::quad4, 5), 1, 2);
  const auto w = interpolate(W, [](const double* x, double* v) { v[0] = 2 * x[0] - x[1], v[1] = 3 * x[1]; });
  const auto g = cell_average_gradient(Assembler(W), w);
  ASSERT_EQ(g.size(), 25u * 4);
  for (std::size_t c = 0; c < g.size(); c += 4) {
    EXPECT_NEAR(g[c], 2, 1e-12);
    EXPECT_NEAR(g[c + 1], -1, 1e-12);
    EXPECT_NEAR(g[c + 2], 0, 1e-12);
    EXPECT_NEAR(g[c + 3], 3, 1e-12);
  }
}

}  // namespace
