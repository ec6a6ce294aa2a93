// Point evaluation (point_evaluator.hpp): fields the space holds exactly are reproduced at
// random points of every cell type and order, the cell found is the one a brute-force search
// finds (the lowest-numbered containing one, on shared vertices and facets too), distorted
// quadrilaterals and hexahedra and curved second-order cells go through Newton, and a point
// outside the mesh is an error naming it.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <array>
#include <cmath>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "curved_meshes.hpp"
#include "fem/assembly/functionals.hpp"
#include "fem/assembly/point_evaluator.hpp"
#include "fem/lagrange.hpp"
#include "fem/mesh/generate.hpp"
#include "fem/reference_cell.hpp"

namespace {

using namespace fem;
using namespace fem::assembly;

std::shared_ptr<const Mesh> shared(Mesh m) { return std::make_shared<const Mesh>(std::move(m)); }

/// The mesh of [0, 1]^dim with its interior nodes moved at random by up to `amount` × h in each
/// coordinate (the boundary stays put, so the domain is still the unit square or cube).
std::shared_ptr<const Mesh> distorted(const Mesh& mesh, double h, double amount, unsigned seed) {
  Mesh::Data d = mesh.data();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> move(-amount * h, amount * h);
  const int dim = d.gdim;
  for (std::size_t i = 0; i < d.coords.size(); i += static_cast<std::size_t>(dim)) {
    bool interior = true;
    for (int k = 0; k < dim; ++k)
      interior = interior && d.coords[i + k] > 1e-12 && d.coords[i + k] < 1 - 1e-12;
    if (interior)
      for (int k = 0; k < dim; ++k) d.coords[i + k] += move(rng);
  }
  d.source = mesh.source() + " (distorted)";
  return shared(Mesh(std::move(d)));
}

/// n points uniformly at random in [lo, hi]^dim.
std::vector<double> random_points(int n, int dim, double lo, double hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> x(static_cast<std::size_t>(n) * dim);
  for (double& v : x) v = u(rng);
  return x;
}

/// The physical point of reference coordinates xi on cell c: the cell's geometry map, evaluated
/// here apart from the locator.
std::array<double, 3> physical(const Mesh& m, index_t c, const std::array<double, 3>& xi) {
  double psi[27], dpsi[81];
  EXPECT_TRUE(lagrange_eval(m.cell_type(), xi.data(), psi, dpsi));
  std::array<double, 3> x{};
  for (int g = 0; g < m.nodes_per_cell(); ++g)
    for (int d = 0; d < m.gdim(); ++d) x[d] += psi[g] * m.node(m.cell(c)[g])[d];
  return x;
}

/// Whether xi lies on the reference cell of `type` (unit simplex or [-1, 1]^d), to tol.
bool on_reference_cell(CellType type, int dim, const std::array<double, 3>& xi, double tol) {
  const CellType b = first_order(type);
  if (b == CellType::tri3 || b == CellType::tet4) {
    double sum = 0;
    for (int d = 0; d < dim; ++d) {
      if (xi[d] < -tol) return false;
      sum += xi[d];
    }
    return sum <= 1 + tol;
  }
  for (int d = 0; d < dim; ++d)
    if (std::abs(xi[d]) > 1 + tol) return false;
  return true;
}

/// Every point found, in a cell that contains it: the cell's map takes the reference
/// coordinates back to the point, and they lie on the reference cell.
void expect_located(const PointEvaluator& probe, const Mesh& m, std::span<const double> points) {
  const int dim = m.gdim();
  for (index_t p = 0; p < probe.size(); ++p) {
    ASSERT_TRUE(probe.found(p)) << "point " << p;
    const auto x = physical(m, probe.cell(p), probe.reference(p));
    for (int d = 0; d < dim; ++d) EXPECT_NEAR(x[d], points[p * dim + d], 1e-12) << "point " << p;
    EXPECT_TRUE(on_reference_cell(m.cell_type(), dim, probe.reference(p), 1e-10)) << "point " << p;
  }
}

/// f on the scalar space and (f + x_k)_k on the vector one, at every point, to 1e-12.
void expect_exact(const std::shared_ptr<const Mesh>& mesh, int degree, std::span<const double> points,
                  const std::function<double(const double*)>& f) {
  const int dim = mesh->gdim();
  for (int components : {1, dim}) {
    SCOPED_TRACE(::testing::Message()
                 << mesh->cell_info().name << " degree " << degree << ", " << components << " components");
    const FunctionSpace V(mesh, degree, components);
    const auto u = interpolate(V, [&](const double* x, double* v) {
      for (int k = 0; k < components; ++k) v[k] = f(x) + (components > 1 ? x[k] : 0.0);
    });
    const PointEvaluator probe(V, points);
    ASSERT_EQ(probe.size(), static_cast<index_t>(points.size() / dim));
    expect_located(probe, *mesh, points);
    const auto values = probe.evaluate(u);
    ASSERT_EQ(values.size(), static_cast<std::size_t>(probe.size() * components));
    for (index_t p = 0; p < probe.size(); ++p)
      for (int k = 0; k < components; ++k) {
        const double* x = &points[p * dim];
        EXPECT_NEAR(values[p * components + k], f(x) + (components > 1 ? x[k] : 0.0), 1e-12) << "point " << p;
      }
  }
}

double linear(const double* x, int dim) {
  double s = 0.3;
  for (int d = 0; d < dim; ++d) s += (d + 1.5) * x[d] * (d % 2 ? -1 : 1);
  return s;
}

TEST(PointEvaluator, ReproducesWhatTheSpaceHoldsAtRandomPoints) {
  const auto line = shared(mesh::interval(5, 0.0, 1.0));
  const auto tri = shared(mesh::rectangle(CellType::tri3, 4, 3));
  const auto quad = shared(mesh::rectangle(CellType::quad4, 4, 3));
  const auto tet = shared(mesh::box(CellType::tet4, 3, 2, 3));
  const auto hex = shared(mesh::box(CellType::hex8, 3, 2, 3));
  const auto p1 = random_points(40, 1, 0, 1, 1), p2 = random_points(60, 2, 0, 1, 2),
             p3 = random_points(60, 3, 0, 1, 3);
  expect_exact(line, 1, p1, [](const double* x) { return 2 - 3 * x[0]; });
  expect_exact(line, 2, p1, [](const double* x) { return 2 - 3 * x[0] + 5 * x[0] * x[0]; });
  expect_exact(tri, 1, p2, [](const double* x) { return linear(x, 2); });
  expect_exact(tri, 2, p2, [](const double* x) {
    return 1 + x[0] - 2 * x[1] + 3 * x[0] * x[1] - x[0] * x[0] + 2 * x[1] * x[1];
  });
  expect_exact(quad, 1, p2, [](const double* x) { return linear(x, 2) + 4 * x[0] * x[1]; });  // bilinear
  expect_exact(quad, 2, p2, [](const double* x) {
    return linear(x, 2) + 3 * x[0] * x[0] * x[1] * x[1] - x[1] * x[1];
  });  // biquadratic
  expect_exact(tet, 1, p3, [](const double* x) { return linear(x, 3); });
  expect_exact(tet, 2, p3,
               [](const double* x) { return linear(x, 3) + x[0] * x[2] - 2 * x[1] * x[1] + x[0] * x[1]; });
  expect_exact(hex, 1, p3, [](const double* x) {
    return linear(x, 3) + 2 * x[0] * x[1] * x[2] - x[1] * x[2];
  });  // trilinear
}

// Bilinear and trilinear cells that are not parallelograms: the reference coordinates come from
// Newton, and a field linear in x (which Q1 and Q2 hold on any such cell) is exact.
TEST(PointEvaluator, DistortedQuadrilateralsAndHexahedraByNewton) {
  const auto quad = distorted(mesh::rectangle(CellType::quad4, 5, 5), 0.2, 0.25, 7);
  const auto hex = distorted(mesh::box(CellType::hex8, 4, 4, 4), 0.25, 0.2, 8);
  // The cells are really distorted: far from parallelograms (x0 + x2 = x1 + x3 for those).
  double skew = 0;
  for (index_t c = 0; c < quad->num_cells(); ++c)
    for (int d = 0; d < 2; ++d) {
      const auto n = quad->cell(c);
      skew = std::max(skew, std::abs(quad->node(n[0])[d] + quad->node(n[2])[d] - quad->node(n[1])[d] -
                                     quad->node(n[3])[d]));
    }
  ASSERT_GT(skew, 0.05);
  const auto p2 = random_points(100, 2, 0, 1, 11), p3 = random_points(100, 3, 0, 1, 12);
  expect_exact(quad, 1, p2, [](const double* x) { return linear(x, 2); });
  expect_exact(quad, 2, p2, [](const double* x) { return linear(x, 2); });
  expect_exact(hex, 1, p3, [](const double* x) { return linear(x, 3); });
}

// Curved second-order geometry (tri6 on an annulus, tet10 on a cylindrical shell): Newton on the
// quadratic map; P2 holds any linear field on such cells.
TEST(PointEvaluator, CurvedSecondOrderCells) {
  const auto annulus = shared(fem::testing::annulus_tri6(3, 12));
  const auto shell = shared(fem::testing::cylinder_shell_tet10(2));
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> r(0.55, 0.95), t(0, 2 * std::numbers::pi),
      a(0.05, std::numbers::pi / 2 - 0.05), z(0.05, 0.95);
  std::vector<double> p2, p3;
  for (int i = 0; i < 80; ++i) {
    const double ri = r(rng), ti = t(rng), ai = a(rng);
    p2.insert(p2.end(), {ri * std::cos(ti), ri * std::sin(ti)});
    p3.insert(p3.end(), {ri * std::cos(ai), ri * std::sin(ai), z(rng)});
  }
  expect_exact(annulus, 2, p2, [](const double* x) { return linear(x, 2); });
  expect_exact(shell, 2, p3, [](const double* x) { return linear(x, 3); });

  // One tri6 whose edge 0-1 bulges beyond the box of its nodes (to x = 1.056 where no node has
  // x > 1): points under that bulge are found all the same.
  Mesh::Data d;
  d.gdim = 2;
  d.cell_type = CellType::tri6;
  d.coords = {0, 0, 1, 0, 0, 1, 0.9, -0.2, 0.5, 0.5, 0, 0.5};
  d.cells = {0, 1, 2, 3, 4, 5};
  const auto bulge = shared(Mesh(std::move(d)));
  std::vector<double> under;
  for (double s : {0.7, 0.8125, 0.9})
    for (double t : {1e-3, 0.02}) {
      const auto x = physical(*bulge, 0, {s, t, 0});
      under.insert(under.end(), {x[0], x[1]});
    }
  ASSERT_GT(under[4], 1.04);
  expect_exact(bulge, 2, under, [](const double* x) { return linear(x, 2); });
}

/// The oracle: the lowest-numbered cell that contains x (within tol) by testing every cell, and
/// x's reference coordinates in it, on simplices (barycentric coordinates by a dense solve) and
/// axis-aligned boxes (each coordinate scaled on its own).
std::pair<index_t, std::array<double, 3>> brute_force(const Mesh& m, const double* x, double tol) {
  const int dim = m.gdim();
  const bool simplex = m.cell_type() == CellType::tri3 || m.cell_type() == CellType::tet4;
  for (index_t c = 0; c < m.num_cells(); ++c) {
    const auto n = m.cell(c);
    std::array<double, 3> xi{};
    if (simplex) {
      Eigen::MatrixXd J(dim, dim);
      Eigen::VectorXd r(dim);
      for (int d = 0; d < dim; ++d) {
        r[d] = x[d] - m.node(n[0])[d];
        for (int k = 0; k < dim; ++k) J(d, k) = m.node(n[k + 1])[d] - m.node(n[0])[d];
      }
      const Eigen::VectorXd s = J.lu().solve(r);
      for (int d = 0; d < dim; ++d) xi[d] = s[d];
    } else {
      for (int d = 0; d < dim; ++d) {
        double lo = 1e300, hi = -1e300;
        for (index_t v : n) lo = std::min(lo, m.node(v)[d]), hi = std::max(hi, m.node(v)[d]);
        xi[d] = 2 * (x[d] - lo) / (hi - lo) - 1;
      }
    }
    if (on_reference_cell(m.cell_type(), dim, xi, tol)) return {c, xi};
  }
  return {-1, {}};
}

// A field that is no polynomial (random nodal values) at random points, at every vertex and at
// the midpoints of edges and centres of facets (points in several cells): the cell is the
// brute-force search's and the value is the field of that cell there.
TEST(PointEvaluator, FindsTheLowestNumberedContainingCellAsABruteForceSearch) {
  const std::vector<std::shared_ptr<const Mesh>> meshes{
      shared(mesh::rectangle(CellType::tri3, 4, 3)), shared(mesh::rectangle(CellType::quad4, 4, 3)),
      shared(mesh::box(CellType::tet4, 2, 3, 2)), shared(mesh::box(CellType::hex8, 3, 2, 2))};
  for (const auto& mesh : meshes)
    for (int degree : {1, 2}) {
      if (mesh->cell_type() == CellType::hex8 && degree == 2) continue;  // no Q2 on hexahedra
      SCOPED_TRACE(::testing::Message() << mesh->cell_info().name << " degree " << degree);
      const int dim = mesh->gdim();
      const FunctionSpace V(mesh, degree);
      std::mt19937 rng(17);
      std::uniform_real_distribution<double> value(-1, 1);
      std::vector<double> u(static_cast<std::size_t>(V.num_dofs()));
      for (double& v : u) v = value(rng);
      // Random points, the vertices, and the centres of every cell's edges and facets.
      std::vector<double> points = random_points(50, dim, 0, 1, 23);
      std::vector<bool> at_vertex(50, false);
      for (index_t i = 0; i < mesh->num_nodes(); ++i) {
        points.insert(points.end(), mesh->node(i).begin(), mesh->node(i).end());
        at_vertex.push_back(true);
      }
      for (index_t c = 0; c < mesh->num_cells(); ++c) {
        const auto n = mesh->cell(c);
        for (const auto& e : local_edges(mesh->cell_type()))
          for (int d = 0; d < dim; ++d)
            points.push_back(0.5 * (mesh->node(n[e[0]])[d] + mesh->node(n[e[1]])[d]));
        const LocalFacets f = local_facets(mesh->cell_type());
        for (int k = 0; k < f.count; ++k)
          for (int d = 0; d < dim; ++d) {
            double s = 0;
            for (int v : f[k]) s += mesh->node(n[v])[d];
            points.push_back(s / f.vertices_per_facet);
          }
        at_vertex.resize(points.size() / dim, false);
      }
      const PointEvaluator probe(V, points);
      const auto values = probe.evaluate(u);
      for (index_t p = 0; p < probe.size(); ++p) {
        const double* x = &points[p * dim];
        const auto [cell, xi] = brute_force(*mesh, x, 1e-10);
        ASSERT_GE(cell, 0);
        EXPECT_EQ(probe.cell(p), cell) << "point " << p;
        double phi[10], grad[30], expected = 0;
        lagrange_eval(V.element(), xi.data(), phi, grad);
        for (int i = 0; i < V.dofmap().nodes_per_cell; ++i)
          expected += phi[i] * u[V.dofmap().cell_nodes[cell * V.dofmap().nodes_per_cell + i]];
        EXPECT_NEAR(values[p], expected, 1e-12) << "point " << p;
        if (at_vertex[p]) {  // the nodal value itself
          const index_t node = V.dofmap().vertex_node[p - 50];
          EXPECT_NEAR(values[p], u[node], 1e-12) << "vertex " << p - 50;
        }
      }
    }
}

// The lowest-numbered cell around a shared vertex, and the value of a vector field's components
// there in the space's layout.
TEST(PointEvaluator, VectorFieldAtASharedVertex) {
  const auto mesh = shared(mesh::rectangle(CellType::tri3, 2, 2));
  const FunctionSpace V(mesh, 1, 2);
  index_t centre = -1;
  for (index_t i = 0; i < mesh->num_nodes(); ++i)
    if (mesh->node(i)[0] == 0.5 && mesh->node(i)[1] == 0.5) centre = i;
  ASSERT_GE(centre, 0);
  index_t lowest = -1;
  int around = 0;
  for (index_t c = mesh->num_cells() - 1; c >= 0; --c)
    for (index_t v : mesh->cell(c))
      if (v == centre) lowest = c, ++around;
  ASSERT_EQ(around, 6);
  std::vector<double> u(static_cast<std::size_t>(V.num_dofs()));
  for (std::size_t i = 0; i < u.size(); ++i) u[i] = static_cast<double>(i) * 0.5 - 1;
  const PointEvaluator probe(V, std::vector<double>{0.5, 0.5});
  EXPECT_EQ(probe.cell(0), lowest);
  const auto v = probe.evaluate(u);
  const auto node = static_cast<std::size_t>(V.dofmap().vertex_node[centre]);
  EXPECT_NEAR(v[0], u[2 * node], 1e-14);
  EXPECT_NEAR(v[1], u[2 * node + 1], 1e-14);
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "(nothing thrown)";
}

// Outside the mesh: beyond its box, in a hole of its box (an L-shaped mesh), and beyond distorted
// and 3D cells, an error naming the point; within the tolerance of a boundary, found.
TEST(PointEvaluator, APointOutsideTheMeshIsAnErrorNamingIt) {
  const auto square = shared(mesh::rectangle(CellType::tri3, 4, 4));
  const FunctionSpace V(square, 1);
  const auto msg = message_of([&] { PointEvaluator(V, std::vector<double>{0.5, 0.5, 1.5, 0.25}); });
  EXPECT_NE(msg.find("point (1.5, 0.25) lies in no cell"), std::string::npos) << msg;
  EXPECT_NE(msg.find("of mesh 'generated rectangle (tri3)'"), std::string::npos) << msg;
  // Just beyond a boundary: within the tolerance, found; beyond it, not.
  const std::vector<double> near{1 + 1e-12, 0.3, 1 + 1e-3, 0.3, 0.3, -1e-11};
  const PointEvaluator some(V, near, {.require_all = false});
  EXPECT_TRUE(some.found(0));
  EXPECT_FALSE(some.found(1));
  EXPECT_TRUE(some.found(2));
  const auto u = interpolate(V, [](const double* x) { return linear(x, 2); });
  double v = 0;
  some.value(u, 0, std::span<double>(&v, 1));
  EXPECT_NEAR(v, linear(near.data(), 2), 1e-9);
  EXPECT_THROW(some.value(u, 1, std::span<double>(&v, 1)), InvalidArgument);
  EXPECT_THROW(some.evaluate(u), InvalidArgument);
  EXPECT_THROW(PointEvaluator(V, near), InvalidArgument);

  // An L: the cells of the upper-right quarter removed. Its centre is in the bins, in no cell.
  Mesh::Data d = mesh::rectangle(CellType::quad4, 4, 4).data();
  Mesh::Data l = d;
  l.cells.clear();
  l.cell_tags.clear();
  l.facets.clear();
  l.facet_tags.clear();
  for (std::size_t c = 0; c < d.cells.size() / 4; ++c) {
    double cx = 0, cy = 0;
    for (int k = 0; k < 4; ++k)
      cx += d.coords[2 * d.cells[4 * c + k]] / 4, cy += d.coords[2 * d.cells[4 * c + k] + 1] / 4;
    if (cx > 0.5 && cy > 0.5) continue;
    l.cells.insert(l.cells.end(), d.cells.begin() + 4 * c, d.cells.begin() + 4 * c + 4);
  }
  const FunctionSpace L(shared(Mesh(std::move(l))), 1);
  EXPECT_NE(message_of([&] {
              PointEvaluator(L, std::vector<double>{0.75, 0.75});
            }).find("(0.75, 0.75)"),
            std::string::npos);
  EXPECT_TRUE(PointEvaluator(L, std::vector<double>{0.5, 0.75, 0.75, 0.5, 0.5, 0.5}).found(2));

  const FunctionSpace Q(distorted(mesh::rectangle(CellType::quad4, 5, 5), 0.2, 0.25, 7), 1);
  EXPECT_NE(message_of([&] {
              PointEvaluator(Q, std::vector<double>{1.2, 0.5});
            }).find("(1.2, 0.5)"),
            std::string::npos);
  const FunctionSpace H(distorted(mesh::box(CellType::hex8, 3, 3, 3), 1.0 / 3, 0.2, 9), 1, 3);
  EXPECT_NE(message_of([&] {
              PointEvaluator(H, std::vector<double>{0.5, 0.5, -0.01});
            }).find("(0.5, 0.5, -0.01)"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              PointEvaluator(H, std::vector<double>{0.5, 0.5});
            }).find("dimension 3"),
            std::string::npos);
}

// The locator is a cache entry of the mesh: built once for every space and evaluator on it, and
// again for a new version of the mesh.
TEST(PointEvaluator, TheLocatorIsBuiltOncePerMeshVersion) {
  Store store;
  store.put("mesh/m", mesh::rectangle(CellType::quad4, 3, 3));
  const FunctionSpace V("mesh/m", 1, 1, store), W("mesh/m", 2, 2, store);
  const std::vector<double> x{0.4, 0.6};
  const PointEvaluator a(V, x), b(W, x);
  EXPECT_EQ(a.cell(0), b.cell(0));
  EXPECT_EQ(store.counter("assembly.locator_builds"), 1);
  EXPECT_TRUE(store.contains("mesh/m#locator"));
  store.put("mesh/m", mesh::rectangle(CellType::quad4, 6, 6));
  const FunctionSpace V2("mesh/m", 1, 1, store);
  const PointEvaluator c(V2, x);
  EXPECT_EQ(store.counter("assembly.locator_builds"), 2);
  EXPECT_NE(c.cell(0), a.cell(0));
}

}  // namespace
