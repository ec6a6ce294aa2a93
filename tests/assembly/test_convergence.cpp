// Convergence against manufactured solutions on refined meshes: L2 rate ≈ p + 1 and H1 rate
// ≈ p for Poisson (P1, P2, Q1, Q2; 2D and 3D; non-zero Dirichlet data through the lifting; a
// mixed Dirichlet/Neumann case) and for linear elasticity (2D plane strain and 3D).
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "fem/assembly/assembly.hpp"
#include "fem/mesh/generate.hpp"
#include "helpers.hpp"

namespace {

using namespace fem::assembly;
using fem::CellType;
using std::numbers::pi;

struct Problem {
  VectorFunction exact;
  GradientFunction gradient;
  std::function<void(const double*, double*)> f;  // the source, one value per component
};

// u = sin(πx) cos(πy) + x², -Δu = 2π² sin(πx) cos(πy) - 2 (non-zero on the boundary).
Problem poisson2d() {
  return {
      [](const double* x, double* u) { u[0] = std::sin(pi * x[0]) * std::cos(pi * x[1]) + x[0] * x[0]; },
      [](const double* x, double* g) {
        g[0] = pi * std::cos(pi * x[0]) * std::cos(pi * x[1]) + 2 * x[0];
        g[1] = -pi * std::sin(pi * x[0]) * std::sin(pi * x[1]);
      },
      [](const double* x, double* f) { f[0] = 2 * pi * pi * std::sin(pi * x[0]) * std::cos(pi * x[1]) - 2; }};
}

// u = sin(πx) sin(πy) sin(πz) + xyz, -Δu = 3π² sin sin sin.
Problem poisson3d() {
  return {[](const double* x, double* u) {
            u[0] = std::sin(pi * x[0]) * std::sin(pi * x[1]) * std::sin(pi * x[2]) + x[0] * x[1] * x[2];
          },
          nullptr,  // gradient by central differences (also exercises that path)
          [](const double* x, double* f) {
            f[0] = 3 * pi * pi * std::sin(pi * x[0]) * std::sin(pi * x[1]) * std::sin(pi * x[2]);
          }};
}

// Errors of the Poisson solution on the unit square/cube split n times per side.
Errors solve_poisson(CellType cell, int degree, int n, const Problem& p, bool neumann_right = false) {
  const int dim = fem::cell_info(cell).dim;
  auto mesh = std::make_shared<const fem::Mesh>(dim == 2 ? fem::mesh::unit_square(cell, n)
                                                         : fem::mesh::unit_cube(cell, n));
  const FunctionSpace V(mesh, degree);
  const Assembler a(V);
  std::vector<double> A(a.pattern()->nnz());
  a.matrix_into(Diffusion{}, A);
  auto b = a.vector(Source{[&](const double* x) {
    double f;
    p.f(x, &f);
    return f;
  }});
  auto value = [&](const double* x) {
    double u;
    p.exact(x, &u);
    return u;
  };
  std::vector<Dirichlet> bcs;
  if (neumann_right) {
    // Flux ∂u/∂n = ∂u/∂x on x = 1; Dirichlet elsewhere.
    a.vector_into(Neumann::scalar({fem::mesh::right},
                                  [&](const double* x) {
                                    double g[3];
                                    p.gradient(x, g);
                                    return g[0];
                                  }),
                  b);
    bcs.push_back({FacetSet::tagged({fem::mesh::left, fem::mesh::bottom, fem::mesh::top}), value});
  } else {
    bcs.push_back({FacetSet::all(), value});
  }
  const auto bc = dirichlet_values(V, bcs);
  apply_dirichlet(bc, *a.pattern(), A, b);
  const auto u = fem::testing::solve_spd(*a.pattern(), A, b);
  return errors(a, u, p.exact, p.gradient);
}

void expect_rates(const char* what, const std::vector<Errors>& e, double l2_rate, double h1_rate) {
  const std::size_t k = e.size() - 1;
  const double rl2 = fem::testing::rate(e[k - 1].l2, e[k].l2), rh1 = fem::testing::rate(e[k - 1].h1, e[k].h1);
  EXPECT_NEAR(rl2, l2_rate, 0.2) << what << ": L2 errors " << e[k - 1].l2 << " -> " << e[k].l2;
  EXPECT_NEAR(rh1, h1_rate, 0.2) << what << ": H1 errors " << e[k - 1].h1 << " -> " << e[k].h1;
}

TEST(Convergence, Poisson2D) {
  struct Case {
    const char* name;
    CellType cell;
    int degree, n0;
  };
  for (auto c :
       {Case{"P1 triangles", CellType::tri3, 1, 8}, Case{"P2 triangles", CellType::tri3, 2, 4},
        Case{"Q1 quadrilaterals", CellType::quad4, 1, 8}, Case{"Q2 quadrilaterals", CellType::quad4, 2, 4}}) {
    std::vector<Errors> e;
    for (int n = c.n0; n <= 4 * c.n0; n *= 2) e.push_back(solve_poisson(c.cell, c.degree, n, poisson2d()));
    expect_rates(c.name, e, c.degree + 1, c.degree);
  }
}

TEST(Convergence, Poisson3D) {
  struct Case {
    const char* name;
    CellType cell;
    int degree, n0;
  };
  for (auto c : {Case{"P1 tetrahedra", CellType::tet4, 1, 4}, Case{"P2 tetrahedra", CellType::tet4, 2, 2},
                 Case{"Q1 hexahedra", CellType::hex8, 1, 4}}) {
    std::vector<Errors> e;
    for (int n = c.n0; n <= 4 * c.n0; n *= 2) e.push_back(solve_poisson(c.cell, c.degree, n, poisson3d()));
    expect_rates(c.name, e, c.degree + 1, c.degree);
  }
}

TEST(Convergence, PoissonWithNeumannBoundary) {
  for (int degree : {1, 2}) {
    std::vector<Errors> e;
    for (int n = 4 * (3 - degree); n <= 16 * (3 - degree); n *= 2)
      e.push_back(solve_poisson(CellType::tri3, degree, n, poisson2d(), /*neumann_right=*/true));
    expect_rates(degree == 1 ? "P1 with Neumann" : "P2 with Neumann", e, degree + 1, degree);
  }
}

// Elasticity with u = s(x)·(1, 1[, 1]), s = Π sin(π x_d): zero on the boundary of the unit box;
// f = -div σ(u) = -(λ + μ) ∇(div u) - μ Δu.
Errors solve_elasticity(CellType cell, int degree, int n) {
  const int dim = fem::cell_info(cell).dim;
  const double E = 10.0, nu = 0.3, lambda = E * nu / ((1 + nu) * (1 - 2 * nu)), mu = E / (2 * (1 + nu));
  auto s = [dim](const double* x) {
    double v = 1;
    for (int d = 0; d < dim; ++d) v *= std::sin(pi * x[d]);
    return v;
  };
  // ∂_i ∂_j s
  auto hess = [dim](const double* x, int i, int j) {
    double v = 1;
    for (int d = 0; d < dim; ++d) {
      const int order = (d == i) + (d == j);
      v *= order == 0   ? std::sin(pi * x[d])
           : order == 1 ? pi * std::cos(pi * x[d])
                        : -pi * pi * std::sin(pi * x[d]);
    }
    return v;
  };
  auto mesh = std::make_shared<const fem::Mesh>(dim == 2 ? fem::mesh::unit_square(cell, n)
                                                         : fem::mesh::unit_cube(cell, n));
  const FunctionSpace V(mesh, degree, dim);
  const Assembler a(V);
  std::vector<double> A(a.pattern()->nnz());
  a.matrix_into(Elasticity{E, nu}, A);
  auto b = a.vector(VectorSource{[&](const double* x, double* f) {
    for (int i = 0; i < dim; ++i) {
      double grad_div = 0;
      for (int j = 0; j < dim; ++j) grad_div += hess(x, i, j);
      f[i] = -(lambda + mu) * grad_div + mu * dim * pi * pi * s(x);
    }
  }});
  const Dirichlet clamp{FacetSet::all(), nullptr};
  apply_dirichlet(dirichlet_values(V, std::span(&clamp, 1)), *a.pattern(), A, b);
  const auto u = fem::testing::solve_spd(*a.pattern(), A, b);
  return errors(a, u, [&](const double* x, double* v) {
    for (int d = 0; d < dim; ++d) v[d] = s(x);
  });
}

TEST(Convergence, Elasticity) {
  struct Case {
    const char* name;
    CellType cell;
    int degree, n0;
  };
  for (auto c : {Case{"P1 plane strain", CellType::tri3, 1, 8}, Case{"P2 plane strain", CellType::tri3, 2, 4},
                 Case{"Q1 plane strain", CellType::quad4, 1, 8}, Case{"P1 3D", CellType::tet4, 1, 4},
                 Case{"P2 3D", CellType::tet4, 2, 2}}) {
    std::vector<Errors> e;
    for (int n = c.n0; n <= 4 * c.n0; n *= 2) e.push_back(solve_elasticity(c.cell, c.degree, n));
    expect_rates(c.name, e, c.degree + 1, c.degree);
  }
}

TEST(Convergence, NeumannIntegratesTheFacetMeasure) {
  // ∫_Γ 1·v summed over all test functions = the measure of Γ.
  for (auto cell : {CellType::tri3, CellType::quad4, CellType::tet4, CellType::hex8})
    for (int degree : {1, 2}) {
      if (cell == CellType::hex8 && degree == 2) continue;
      const int dim = fem::cell_info(cell).dim;
      auto mesh = std::make_shared<const fem::Mesh>(dim == 2 ? fem::mesh::unit_square(cell, 3)
                                                             : fem::mesh::unit_cube(cell, 3));
      const Assembler a(FunctionSpace(mesh, degree));
      auto b =
          a.vector(Neumann::scalar({fem::mesh::left, fem::mesh::top}, [](const double*) { return 1.0; }));
      double total = 0;
      for (double v : b) total += v;
      EXPECT_NEAR(total, 2.0, 1e-13) << fem::cell_info(cell).name << " degree " << degree;
    }
}

}  // namespace
