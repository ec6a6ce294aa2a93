// Convergence on an unstructured Gmsh mesh from meshes/ (the plate with a hole), refined
// uniformly: every triangle split into four through its edge midpoints (the P2 nodes). P1 and
// P2 Poisson reach their rates (L2 2 and 3, H1 1 and 2) on meshes no generator made.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "fem/assembly/assembly.hpp"
#include "fem/mesh/read.hpp"
#include "helpers.hpp"

namespace {

using namespace fem::assembly;
using std::numbers::pi;

// Split every triangle into four; nodes are the P2 nodes of the mesh (vertices, then edges).
std::shared_ptr<const fem::Mesh> refine(const std::shared_ptr<const fem::Mesh>& mesh) {
  const DofMap p2 = build_dofmap(mesh, 2);
  fem::Mesh::Data d;
  d.gdim = mesh->gdim();
  d.cell_type = fem::CellType::tri3;
  d.coords.assign(p2.coordinates.begin(), p2.coordinates.end());
  d.source = mesh->source() + " (refined)";
  for (fem::index_t c = 0; c < mesh->num_cells(); ++c) {
    const fem::index_t* n = &p2.cell_nodes[static_cast<std::size_t>(c) * 6];  // v0 v1 v2 e01 e12 e20
    for (auto t : {std::array{n[0], n[3], n[5]}, std::array{n[3], n[1], n[4]}, std::array{n[5], n[4], n[2]},
                   std::array{n[3], n[4], n[5]}}) {
      d.cells.insert(d.cells.end(), t.begin(), t.end());
      d.cell_tags.push_back(mesh->cell_tags()[c]);
    }
  }
  return std::make_shared<const fem::Mesh>(std::move(d));
}

// u = sin(2x) e^y, -Δu = 3 sin(2x) e^y.
Errors solve(const std::shared_ptr<const fem::Mesh>& mesh, int degree) {
  const FunctionSpace V(mesh, degree);
  const Assembler a(V);
  std::vector<double> A(a.pattern()->nnz());
  a.matrix_into(Diffusion{}, A);
  auto b = a.vector(Source{[](const double* x) { return 3 * std::sin(2 * x[0]) * std::exp(x[1]); }});
  auto exact = [](const double* x) { return std::sin(2 * x[0]) * std::exp(x[1]); };
  const auto bc = dirichlet_values(V, std::vector<Dirichlet>{{FacetSet::all(), exact}});
  apply_dirichlet(bc, *a.pattern(), A, b);
  const auto u = fem::testing::solve_spd(*a.pattern(), A, b);
  return errors(
      a, u, [&](const double* x, double* v) { v[0] = exact(x); },
      [](const double* x, double* g) {
        g[0] = 2 * std::cos(2 * x[0]) * std::exp(x[1]);
        g[1] = std::sin(2 * x[0]) * std::exp(x[1]);
      });
}

TEST(Convergence, UnstructuredGmshMeshRefinedUniformly) {
  std::vector<std::shared_ptr<const fem::Mesh>> meshes{
      std::make_shared<const fem::Mesh>(fem::mesh::read(FEM_MESHES_DIR "/plate_hole_v41.msh"))};
  ASSERT_EQ(meshes[0]->cell_type(), fem::CellType::tri3);
  for (int k = 0; k < 2; ++k) meshes.push_back(refine(meshes.back()));
  for (int degree : {1, 2}) {
    std::vector<Errors> e;
    for (const auto& m : meshes) e.push_back(solve(m, degree));
    for (std::size_t k = 1; k < e.size(); ++k) {
      EXPECT_NEAR(fem::testing::rate(e[k - 1].l2, e[k].l2), degree + 1, 0.25)
          << "P" << degree << " level " << k;
      EXPECT_NEAR(fem::testing::rate(e[k - 1].h1, e[k].h1), degree, 0.25) << "P" << degree << " level " << k;
    }
  }
}

}  // namespace
