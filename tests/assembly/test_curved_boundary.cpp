// Neumann fluxes and tractions on curved boundaries of second-order meshes: integrated over the
// curved facet with the facet's own geometry map (line3 edges, tri6 faces), P2 keeps its L2
// rate 3 on a curved annulus with the flux or the traction on the outer circle (the chord
// between the facet's vertices loses an order: rate 2); the total flux over a curved tet10
// face converges to the exact surface integral at high order; and the whole-boundary facet
// selection finds the mid nodes of second-order facets from their cells.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <numbers>

#include "curved_meshes.hpp"
#include "fem/assembly/assembly.hpp"
#include "fem/mesh/read.hpp"
#include "helpers.hpp"

namespace {

using namespace fem::assembly;
using fem::CellType;
using fem::testing::annulus_tri6;
using fem::testing::kInner;
using fem::testing::kOuter;
using std::numbers::pi;

// The mesh sequence: (nr, nt) = (2, 12) · 2^k, k = 0..levels-1.
constexpr int kLevels = 4;

void expect_l2_rate(const char* what, const std::vector<double>& e, double at_least) {
  std::string all;
  for (std::size_t k = 0; k < e.size(); ++k)
    all += fmt::format("{}{:.3e}", k ? " -> " : "", e[k]) +
           (k ? fmt::format(" (rate {:.2f})", fem::testing::rate(e[k - 1], e[k])) : "");
  const double last = fem::testing::rate(e[e.size() - 2], e.back());
  EXPECT_GE(last, at_least) << what << ": L2 errors " << all;
  std::printf("%s: L2 errors %s\n", what, all.c_str());
}

// u = sin(2x) cos(y) + x², -Δu = 5 sin(2x) cos(y) - 2.
double poisson_exact(const double* x) { return std::sin(2 * x[0]) * std::cos(x[1]) + x[0] * x[0]; }
void poisson_gradient(const double* x, double* g) {
  g[0] = 2 * std::cos(2 * x[0]) * std::cos(x[1]) + 2 * x[0];
  g[1] = -std::sin(2 * x[0]) * std::sin(x[1]);
}

// P2 on the curved annulus: -Δu = f, u given on the inner circle and, with `flux`, ∂u/∂n = ∇u·n
// on the outer circle (else u given there too). The L2 error.
double poisson_on_annulus(int level, bool flux) {
  const int nr = 2 << level, nt = 12 << level;
  const FunctionSpace V(std::make_shared<const fem::Mesh>(annulus_tri6(nr, nt)), 2);
  const Assembler a(V);
  std::vector<double> A(a.pattern()->nnz());
  a.matrix_into(Diffusion{}, A);
  auto b = a.vector(Source{[](const double* x) { return 5 * std::sin(2 * x[0]) * std::cos(x[1]) - 2; }});
  std::vector<Dirichlet> bcs{{FacetSet::tagged({kInner}), poisson_exact}};
  if (flux) {
    a.vector_into(Neumann::scalar({kOuter},
                                  [](const double* x) {
                                    double g[2];
                                    poisson_gradient(x, g);
                                    const double r = std::hypot(x[0], x[1]);
                                    return (g[0] * x[0] + g[1] * x[1]) / r;
                                  }),
                  b);
  } else {
    bcs.push_back({FacetSet::tagged({kOuter}), poisson_exact});
  }
  apply_dirichlet(dirichlet_values(V, bcs), *a.pattern(), A, b);
  const auto u = fem::testing::solve_spd(*a.pattern(), A, b);
  return errors(
             a, u, [](const double* x, double* v) { v[0] = poisson_exact(x); },
             [](const double* x, double* g) { poisson_gradient(x, g); })
      .l2;
}

TEST(CurvedBoundaryNeumann, PoissonP2FluxOnCurvedCircleKeepsL2Rate3) {
  std::vector<double> with_flux, all_dirichlet;
  for (int level = 0; level < kLevels; ++level) {
    with_flux.push_back(poisson_on_annulus(level, true));
    all_dirichlet.push_back(poisson_on_annulus(level, false));
  }
  expect_l2_rate("P2 Poisson, flux on the outer circle", with_flux, 2.8);
  expect_l2_rate("P2 Poisson, Dirichlet on both circles", all_dirichlet, 2.8);
  // The flux costs no order: its error stays within a small factor of the all-Dirichlet one.
  EXPECT_LT(with_flux.back(), 10 * all_dirichlet.back());
}

// Plane-strain elasticity with u = (sin x cos y, sin(x + 2y)), E = 10, ν = 0.3.
struct Material {
  double E = 10, nu = 0.3;
  double lambda() const { return E * nu / ((1 + nu) * (1 - 2 * nu)); }
  double mu() const { return E / (2 * (1 + nu)); }
};

void displacement(const double* x, double* u) {
  u[0] = std::sin(x[0]) * std::cos(x[1]);
  u[1] = std::sin(x[0] + 2 * x[1]);
}
// grad[k * 2 + d] = ∂u_k/∂x_d
void displacement_gradient(const double* x, double* g) {
  g[0] = std::cos(x[0]) * std::cos(x[1]);
  g[1] = -std::sin(x[0]) * std::sin(x[1]);
  g[2] = std::cos(x[0] + 2 * x[1]);
  g[3] = 2 * std::cos(x[0] + 2 * x[1]);
}

double elasticity_on_annulus(int level, bool traction) {
  const Material m;
  const double lambda = m.lambda(), mu = m.mu();
  const int nr = 2 << level, nt = 12 << level;
  const FunctionSpace V(std::make_shared<const fem::Mesh>(annulus_tri6(nr, nt)), 2, 2);
  const Assembler a(V);
  std::vector<double> A(a.pattern()->nnz());
  a.matrix_into(Elasticity{m.E, m.nu}, A);
  // f = -div σ(u) = -(λ + μ) ∇(div u) - μ Δu.
  auto b = a.vector(VectorSource{[&](const double* x, double* f) {
    const double s = std::sin(x[0]), c = std::cos(x[0]), sy = std::sin(x[1]), cy = std::cos(x[1]);
    const double w = std::sin(x[0] + 2 * x[1]);
    const double u1xx = -s * cy, u1yy = -s * cy, u1xy = -c * sy;
    const double u2xx = -w, u2yy = -4 * w, u2xy = -2 * w;
    f[0] = -(lambda + mu) * (u1xx + u2xy) - mu * (u1xx + u1yy);
    f[1] = -(lambda + mu) * (u1xy + u2yy) - mu * (u2xx + u2yy);
  }});
  std::vector<Dirichlet> bcs;
  for (int k = 0; k < 2; ++k) {
    auto component = [k](const double* x) {
      double u[2];
      displacement(x, u);
      return u[k];
    };
    bcs.push_back({FacetSet::tagged({kInner}), component, k});
    if (!traction) bcs.push_back({FacetSet::tagged({kOuter}), component, k});
  }
  if (traction)
    a.vector_into(Neumann{{kOuter},
                          [&](const double* x, double* t) {
                            double g[4];
                            displacement_gradient(x, g);
                            const double r = std::hypot(x[0], x[1]), n[2] = {x[0] / r, x[1] / r};
                            const double div = g[0] + g[3];
                            const double s[2][2] = {{lambda * div + 2 * mu * g[0], mu * (g[1] + g[2])},
                                                    {mu * (g[1] + g[2]), lambda * div + 2 * mu * g[3]}};
                            for (int i = 0; i < 2; ++i) t[i] = s[i][0] * n[0] + s[i][1] * n[1];
                          }},
                  b);
  apply_dirichlet(dirichlet_values(V, bcs), *a.pattern(), A, b);
  const auto u = fem::testing::solve_spd(*a.pattern(), A, b);
  return errors(a, u, displacement, displacement_gradient).l2;
}

TEST(CurvedBoundaryNeumann, ElasticityP2TractionOnCurvedCircleKeepsL2Rate3) {
  std::vector<double> with_traction, all_dirichlet;
  for (int level = 0; level < kLevels; ++level) {
    with_traction.push_back(elasticity_on_annulus(level, true));
    all_dirichlet.push_back(elasticity_on_annulus(level, false));
  }
  expect_l2_rate("P2 plane strain, traction on the outer circle", with_traction, 2.8);
  expect_l2_rate("P2 plane strain, clamped on both circles", all_dirichlet, 2.8);
  EXPECT_LT(with_traction.back(), 10 * all_dirichlet.back());
}

// Σ_i b_i = ∫_Γh g (the basis sums to one) over the tagged facets.
double total_flux(const FunctionSpace& V, int tag, const Function& g) {
  const Assembler a(V);
  const auto b = a.vector(Neumann::scalar({tag}, g));
  double s = 0;
  for (double v : b) s += v;
  return s;
}

TEST(CurvedBoundaryNeumann, FluxOverCurvedTet10CylinderFaceConvergesAtHighOrder) {
  // Outer face r = 1 of the sector 0 ≤ θ ≤ π/2, 0 ≤ z ≤ 1: ∫ 1 = π/2, ∫ x² + yz = π/4 + 1/2.
  const auto g = [](const double* x) { return x[0] * x[0] + x[1] * x[2]; };
  std::vector<double> area_error, flux_error;
  for (int n = 2; n <= 8; n *= 2) {
    const auto mesh = std::make_shared<const fem::Mesh>(fem::testing::cylinder_shell_tet10(n));
    double area[2], flux[2];
    for (int degree : {1, 2}) {
      const FunctionSpace V(mesh, degree);
      area[degree - 1] = total_flux(V, kOuter, [](const double*) { return 1.0; });
      flux[degree - 1] = total_flux(V, kOuter, g);
    }
    area_error.push_back(std::abs(area[1] - pi / 2));
    flux_error.push_back(std::abs(flux[1] - (pi / 4 + 0.5)));
    // P1 test functions (tet4 element on the tet10 cells) see the same curved geometry.
    EXPECT_NEAR(area[0], area[1], 1e-3 * area_error.back());
    EXPECT_NEAR(flux[0], flux[1], 1e-3 * flux_error.back());
  }
  std::string all;
  for (std::size_t k = 0; k < area_error.size(); ++k)
    all += fmt::format(" {:.3e}/{:.3e}", area_error[k], flux_error[k]);
  std::printf("tet10 cylinder face, errors of ∫1 / ∫g:%s\n", all.c_str());
  // Quadratic surfaces: the area and the flux converge at order 4 (the chord's flat triangles: 2).
  for (std::size_t k = 1; k < area_error.size(); ++k) {
    EXPECT_GE(fem::testing::rate(area_error[k - 1], area_error[k]), 3.5) << all;
    EXPECT_GE(fem::testing::rate(flux_error[k - 1], flux_error[k]), 3.5) << all;
  }
  EXPECT_LT(flux_error.back(), 1e-5) << all;
}

TEST(CurvedBoundaryNeumann, OuterCircleLengthOfTheSampleSecondOrderAnnulus) {
  // meshes/annulus_p2 (Gmsh, h = 0.1): the length of the outer circle from its curved line3
  // facets, with P1 and P2 test functions; the chords would miss 2π by ~1e-3.
  const auto mesh = std::make_shared<const fem::Mesh>(fem::mesh::read(FEM_MESHES_DIR "/annulus_p2_v41.msh"));
  const int outer = *mesh->tag_of("outer", 1);
  for (int degree : {1, 2}) {
    const double length = total_flux(FunctionSpace(mesh, degree), outer, [](const double*) { return 1.0; });
    EXPECT_NEAR(length, 2 * pi, 2e-6) << "degree " << degree;
    std::printf("annulus_p2 outer length error %.3e (degree %d)\n", length - 2 * pi, degree);
  }
}

TEST(CurvedBoundaryFacets, WholeBoundaryFindsTheMidNodesOfSecondOrderFacets) {
  // Every boundary facet of these meshes is tagged: the whole boundary (found from the cells)
  // and the tagged facets (read from the mesh) must be the same facets with the same nodes.
  for (const auto& mesh : {annulus_tri6(2, 8), fem::testing::cylinder_shell_tet10(2)}) {
    SCOPED_TRACE(mesh.source());
    const auto whole = select_facet_geometry(mesh, FacetSet::all());
    auto tagged = select_facet_geometry(mesh, FacetSet::tagged({kInner, kOuter}));
    EXPECT_EQ(whole.geometry, mesh.cell_info().facet);
    EXPECT_EQ(whole.nodes_per_facet, mesh.nodes_per_facet());
    const int npf = whole.nodes_per_facet, nvf = whole.vertices_per_facet;
    if (mesh.tdim() == 3) {
      // The flat sides are untagged here: compare the facets on the circles only.
      ASSERT_GT(whole.size(), tagged.size());
    } else {
      ASSERT_EQ(whole.size(), tagged.size());
    }
    // Match facets by their sorted vertices; then the nodes must agree as the facet's element
    // orders them: the node of the edge between vertices a and b is the same mesh node.
    auto edge_node = [&](const fem::assembly::SelectedFacets& s, std::size_t f, fem::index_t a,
                         fem::index_t b) {
      const auto* v = &s.vertices[f * nvf];
      const auto* n = &s.nodes[f * npf];
      for (int e = 0; e < npf - nvf; ++e) {
        const int i = e, j = (nvf == 2) ? 1 : (e + 1) % nvf;
        if ((v[i] == a && v[j] == b) || (v[i] == b && v[j] == a)) return n[nvf + e];
      }
      return fem::index_t{-1};
    };
    std::map<std::vector<fem::index_t>, std::size_t> where;
    for (std::size_t f = 0; f < whole.size(); ++f) {
      std::vector<fem::index_t> key(&whole.vertices[f * nvf], &whole.vertices[f * nvf] + nvf);
      for (int k = 0; k < nvf; ++k) EXPECT_EQ(whole.nodes[f * npf + k], key[k]);
      std::sort(key.begin(), key.end());
      where[key] = f;
    }
    for (std::size_t f = 0; f < tagged.size(); ++f) {
      std::vector<fem::index_t> key(&tagged.vertices[f * nvf], &tagged.vertices[f * nvf] + nvf);
      std::sort(key.begin(), key.end());
      ASSERT_TRUE(where.count(key)) << "tagged facet " << f << " is not on the whole boundary";
      const std::size_t w = where[key];
      for (int i = 0; i < nvf; ++i)
        for (int j = i + 1; j < nvf; ++j) {
          const auto a = key[i], b = key[j];
          EXPECT_EQ(edge_node(whole, w, a, b), edge_node(tagged, f, a, b)) << "facet " << f;
        }
    }
  }
}

}  // namespace
