// Problems whose constraints leave rigid motions free: the null space is found from the rigid-body
// modes after the Dirichlet conditions (not from which conditions were given), the pure Neumann
// problem converges to the zero-mean solution at the optimal rate, and a pure-traction elastic
// body with equilibrated loads gets the solution orthogonal to its rigid motions.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <set>

#include "fem/assembly/assembly.hpp"
#include "fem/mesh/generate.hpp"
#include "fem/solve/solve.hpp"
#include "helpers.hpp"

namespace fem::assembly {
namespace {

using fem::mesh::Side;
constexpr double pi = std::numbers::pi;

struct Constraint {
  int side;
  int component;  // -1: all
};

// The names of the free modes of the assembled, constrained `form` (empty: none free).
template <class Form>
std::set<std::string> free_modes(CellType cell, int degree, int components, const Form& form,
                                 const std::vector<Constraint>& constraints) {
  const int dim = cell_info(cell).dim;
  auto mesh = std::make_shared<const Mesh>(dim == 2 ? fem::mesh::unit_square(cell, 4)
                                                    : fem::mesh::unit_cube(cell, 3));
  const FunctionSpace V(mesh, degree, components);
  const Assembler a(V);
  std::vector<double> values(a.pattern()->nnz()), b(V.num_dofs(), 0.0);
  a.matrix_into(form, values);
  std::vector<Dirichlet> bcs;
  for (const auto& c : constraints) bcs.push_back({FacetSet::tagged({c.side}), nullptr, c.component});
  const auto constrained = dirichlet_values(V, bcs);
  apply_dirichlet(constrained, *a.pattern(), values, b);
  const auto ns = null_space(a, CsrMatrix(a.pattern(), std::move(values)), constrained);
  if (!ns) return {};
  return {ns->names().begin(), ns->names().end()};
}

using Names = std::set<std::string>;

TEST(RigidBodyModes, ScalarProblemIsSingularExactlyWithoutADirichletCondition) {
  for (auto cell : {CellType::tri3, CellType::quad4, CellType::tet4, CellType::hex8})
    for (int degree : {1, 2}) {
      if (degree == 2 && cell == CellType::hex8) continue;
      SCOPED_TRACE(std::string(cell_info(cell).name) + " degree " + std::to_string(degree));
      EXPECT_EQ(free_modes(cell, degree, 1, Diffusion{}, {}), Names{"constant"});
      EXPECT_EQ(free_modes(cell, degree, 1, Diffusion{}, {{Side::right, -1}}), Names{});
    }
}

TEST(RigidBodyModes, FreeModesAreExactlyThoseTheConstraintsLeaveIn2D) {
  for (auto cell : {CellType::tri3, CellType::quad4})
    for (int degree : {1, 2}) {
      SCOPED_TRACE(std::string(cell_info(cell).name) + " degree " + std::to_string(degree));
      const Elasticity e{};
      EXPECT_EQ(free_modes(cell, degree, 2, e, {}), (Names{"translation x", "translation y", "rotation z"}));
      EXPECT_EQ(free_modes(cell, degree, 2, e, {{Side::left, -1}}), Names{});
      // Rollers: ux = 0 on the left stops x and the rotation, not y.
      EXPECT_EQ(free_modes(cell, degree, 2, e, {{Side::left, 0}}), Names{"translation y"});
      EXPECT_EQ(free_modes(cell, degree, 2, e, {{Side::left, 0}, {Side::right, 0}}), Names{"translation y"});
      EXPECT_EQ(free_modes(cell, degree, 2, e, {{Side::bottom, 1}, {Side::top, 1}}), Names{"translation x"});
      EXPECT_EQ(free_modes(cell, degree, 2, e, {{Side::left, 0}, {Side::bottom, 1}}), Names{});
    }
}

TEST(RigidBodyModes, FreeModesAreExactlyThoseTheConstraintsLeaveIn3D) {
  for (auto cell : {CellType::tet4, CellType::hex8}) {
    SCOPED_TRACE(cell_info(cell).name);
    const Elasticity e{};
    EXPECT_EQ(free_modes(cell, 1, 3, e, {}).size(), 6u);
    EXPECT_EQ(free_modes(cell, 1, 3, e, {{Side::left, -1}}), Names{});
    // ux = 0 on x = 0 leaves y, z and the rotation about x, whose velocity has no x component.
    EXPECT_EQ(free_modes(cell, 1, 3, e, {{Side::left, 0}}),
              (Names{"translation y", "translation z", "rotation x"}));
    EXPECT_EQ(free_modes(cell, 1, 3, e, {{Side::left, 0}, {Side::front, 1}, {Side::bottom, 2}}), Names{});
  }
}

// Which modes are free is decided by the constraints, not by a numerical threshold that a
// coefficient contrast can fool; and a term that resists every motion (mass) leaves none free.
TEST(RigidBodyModes, ContrastsAndReactionTermsAreNotMistakenForFreeModes) {
  Store store;
  store.put("mesh", fem::mesh::unit_square(CellType::tri3, 16));
  const FunctionSpace V("mesh", 1, 1, store);
  const Assembler a(V);
  for (double contrast : {1e-8, 1e-12, 1e-15}) {
    std::vector<double> values(a.pattern()->nnz()), b(V.num_dofs(), 0.0);
    a.matrix_into(
        Diffusion{Coefficient::function([&](const double* x) { return x[0] < 0.5 ? contrast : 1.0; })},
        values);
    const Dirichlet left{FacetSet::tagged({Side::left}), nullptr, -1};
    const auto constrained = dirichlet_values(V, std::span(&left, 1));
    apply_dirichlet(constrained, *a.pattern(), values, b);
    EXPECT_EQ(null_space(a, CsrMatrix(a.pattern(), std::move(values)), constrained), nullptr) << contrast;
  }
  std::vector<double> k(a.pattern()->nnz()), m(a.pattern()->nnz());
  a.matrix_into(Diffusion{}, k);
  a.matrix_into(Mass{}, m);
  for (std::size_t i = 0; i < k.size(); ++i) k[i] += 1e-3 * m[i];
  EXPECT_EQ(null_space(a, CsrMatrix(a.pattern(), std::move(k)), {}), nullptr);
}

// -Δu = f with ∂u/∂n = 0 everywhere: u = cos(πx)cos(πy) has zero mean, f = 2π²u.
double pure_neumann_l2_error(CellType cell, int degree, int n) {
  Store store;
  store.put("mesh", fem::mesh::unit_square(cell, n));
  const FunctionSpace V("mesh", degree, 1, store);
  const Assembler a(V);
  auto exact = [](const double* x) { return std::cos(pi * x[0]) * std::cos(pi * x[1]); };
  std::vector<double> values(a.pattern()->nnz());
  a.matrix_into(Diffusion{}, values);
  const auto b = a.vector(Source{[&](const double* x) { return 2 * pi * pi * exact(x); }});
  const CsrMatrix A(a.pattern(), values);
  const auto ns = null_space(a, A, {});
  EXPECT_NE(ns, nullptr);
  if (!ns) return 1.0;
  EXPECT_LT(ns->defect(b), 1e-6);  // quadrature error of compatible data
  store.put("A", CsrMatrix(a.pattern(), std::move(values), ns));
  const auto u = fem::solve::solve(store, "A", b);
  EXPECT_NEAR(integrate(a, u), 0.0, 1e-12);  // the normalization is ∫u = 0
  return errors(a, u, [&](const double* x, double* v) { v[0] = exact(x); }).l2;
}

TEST(PureNeumann, ZeroMeanSolutionConvergesAtTheOptimalRate) {
  for (int degree : {1, 2})
    for (auto cell : {CellType::tri3, CellType::quad4}) {
      SCOPED_TRACE(std::string(cell_info(cell).name) + " degree " + std::to_string(degree));
      const int n0 = degree == 1 ? 8 : 4;
      const double e0 = pure_neumann_l2_error(cell, degree, n0),
                   e1 = pure_neumann_l2_error(cell, degree, 2 * n0),
                   e2 = pure_neumann_l2_error(cell, degree, 4 * n0);
      EXPECT_NEAR(fem::testing::rate(e0, e1), degree + 1, 0.2) << e0 << " " << e1;
      EXPECT_NEAR(fem::testing::rate(e1, e2), degree + 1, 0.2) << e1 << " " << e2;
    }
}

// Uniaxial tension by tractions ±(1, 0) on x = 0 and x = 1, nothing fixed: σ = e_x ⊗ e_x, and the
// displacement orthogonal to the rigid motions is the centred linear field, which P1 reproduces.
TEST(PureTraction, EquilibratedLoadsGiveTheSolutionOrthogonalToTheRigidMotions) {
  for (auto cell : {CellType::tri3, CellType::quad4}) {
    SCOPED_TRACE(cell_info(cell).name);
    Store store;
    store.put("mesh", fem::mesh::unit_square(cell, 6));
    const FunctionSpace V("mesh", 1, 2, store);
    const Assembler a(V);
    const double E = 3.0, nu = 0.25;
    std::vector<double> values(a.pattern()->nnz());
    a.matrix_into(Elasticity{E, nu}, values);
    std::vector<double> b(V.num_dofs(), 0.0);
    a.vector_into(Neumann{{Side::left}, [](const double*, double* g) { g[0] = -1, g[1] = 0; }}, b);
    a.vector_into(Neumann{{Side::right}, [](const double*, double* g) { g[0] = 1, g[1] = 0; }}, b);
    const CsrMatrix A(a.pattern(), values);
    const auto ns = null_space(a, A, {});
    ASSERT_NE(ns, nullptr);
    EXPECT_EQ(ns->dimension(), 3);
    EXPECT_LT(ns->defect(b), 1e-12);
    store.put("A", CsrMatrix(a.pattern(), std::move(values), ns));
    const auto u = fem::solve::solve(store, "A", b);
    // Plane strain with σxx = 1, σyy = 0: εxx = (1 - ν²)/E, εyy = -ν(1 + ν)/E.
    const double exx = (1 - nu * nu) / E, eyy = -nu * (1 + nu) / E;
    const auto err = errors(a, u, [&](const double* x, double* v) {
      v[0] = exx * (x[0] - 0.5);
      v[1] = eyy * (x[1] - 0.5);
    });
    EXPECT_LT(err.l2, 1e-12);
    // Unbalanced loads are not in the range: the defect says so.
    a.vector_into(Neumann{{Side::top}, [](const double*, double* g) { g[0] = 0, g[1] = 1; }}, b);
    EXPECT_GT(ns->defect(b), 0.1);
  }
}

}  // namespace
}  // namespace fem::assembly
