// Assembled matrices have the structure the mathematics says: symmetry, zero row sums for pure
// diffusion, total mass = domain measure, rigid motions in the kernel of elasticity. Also the
// connectivity cache, bitwise determinism across thread counts, the extension point, errors.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>

#include "../support/parallel_paths.hpp"
#include "fem/assembly/assembly.hpp"
#include "fem/mesh/generate.hpp"
#include "helpers.hpp"

namespace {

using namespace fem::assembly;
using fem::CellType;
using fem::index_t;

struct Case {
  const char* name;
  CellType cell;
  int degree;
};
const Case kCases[] = {{"P1 tri", CellType::tri3, 1},   {"P2 tri", CellType::tri6, 2},
                       {"Q1 quad", CellType::quad4, 1}, {"Q2 quad", CellType::quad9, 2},
                       {"P1 tet", CellType::tet4, 1},   {"P2 tet", CellType::tet10, 2},
                       {"Q1 hex", CellType::hex8, 1}};

// A slightly distorted box (so cells are not all alike): x -> x + 0.03 sin(2πy)...
std::shared_ptr<const fem::Mesh> mesh_for(CellType element, int n) {
  const int dim = fem::cell_info(element).dim;
  const CellType cell = fem::cell_info(element).num_vertices == 3               ? CellType::tri3
                        : fem::cell_info(element).num_vertices == 4 && dim == 2 ? CellType::quad4
                        : fem::cell_info(element).num_vertices == 4             ? CellType::tet4
                                                                                : CellType::hex8;
  fem::Mesh m = dim == 2 ? fem::mesh::rectangle(cell, n, n, {0, 0}, {2, 1})
                         : fem::mesh::box(cell, n, n, n, {0, 0, 0}, {2, 1, 1});
  auto d = m.data();
  for (index_t i = 0; i < m.num_nodes(); ++i) {
    double* x = &d.coords[i * dim];
    const double s = x[0] * (2 - x[0]) * x[1] * (1 - x[1]);  // zero on the boundary
    x[0] += 0.1 * s;
    x[1] += 0.05 * s;
  }
  return std::make_shared<const fem::Mesh>(std::move(d));
}

double measure(int dim) { return dim == 2 ? 2.0 : 2.0; }

std::vector<double> values_of(const Assembler& a, const auto& form) {
  std::vector<double> v(a.pattern()->nnz());
  a.matrix_into(form, v);
  return v;
}

void expect_symmetric(const fem::CsrPattern& p, std::span<const double> v, double tol) {
  for (index_t r = 0; r < p.rows(); ++r)
    for (index_t k = p.row_offsets()[r]; k < p.row_offsets()[r + 1]; ++k) {
      const auto t = p.find(p.col_indices()[k], r);
      ASSERT_GE(t, 0);
      EXPECT_NEAR(v[k], v[t], tol * (1 + std::abs(v[k])));
    }
}

TEST(Properties, DiffusionIsSymmetricWithZeroRowSums) {
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name);
    const FunctionSpace V(mesh_for(c.cell, 3), c.degree);
    const Assembler a(V);
    const auto v =
        values_of(a, Diffusion{Coefficient::function([](const double* x) { return 1 + x[0] * x[1]; })});
    const auto& p = *a.pattern();
    expect_symmetric(p, v, 1e-12);
    for (index_t r = 0; r < p.rows(); ++r) {
      double s = 0, scale = 0;
      for (index_t k = p.row_offsets()[r]; k < p.row_offsets()[r + 1]; ++k)
        s += v[k], scale += std::abs(v[k]);
      EXPECT_NEAR(s, 0.0, 1e-12 * scale) << "row " << r;
    }
  }
}

TEST(Properties, TotalMassIsTheMeasure) {
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name);
    const auto mesh = mesh_for(c.cell, 3);
    for (int components : {1, mesh->tdim()}) {
      const FunctionSpace V(mesh, c.degree, components);
      const Assembler a(V);
      const auto v = values_of(a, Mass{2.0});
      double total = 0;
      for (double x : v) total += x;
      EXPECT_NEAR(total, 2.0 * components * measure(mesh->tdim()), 1e-12);
      expect_symmetric(*a.pattern(), v, 1e-13);
    }
  }
}

TEST(Properties, RigidMotionsAreInTheKernelOfElasticity) {
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name);
    const auto mesh = mesh_for(c.cell, 2);
    const int dim = mesh->tdim();
    const FunctionSpace V(mesh, c.degree, dim);
    const Assembler a(V);
    const auto v = values_of(a, Elasticity{200.0, 0.3});
    const auto& p = *a.pattern();
    expect_symmetric(p, v, 0.0);  // bitwise: the solver's symmetry test then picks Cholesky
    fem::CsrMatrix K(a.pattern(), v);
    std::vector<std::function<void(const double*, double*)>> motions = {
        [](const double*, double* u) { u[0] = 1, u[1] = 0, u[2] = 0; },
        [](const double*, double* u) { u[0] = 0, u[1] = 1, u[2] = 0; },
        [](const double* x, double* u) { u[0] = -x[1], u[1] = x[0], u[2] = 0; }};
    if (dim == 3) {
      motions.push_back([](const double*, double* u) { u[0] = 0, u[1] = 0, u[2] = 1; });
      motions.push_back([](const double* x, double* u) { u[0] = 0, u[1] = -x[2], u[2] = x[1]; });
      motions.push_back([](const double* x, double* u) { u[0] = x[2], u[1] = 0, u[2] = -x[0]; });
    }
    for (const auto& m : motions) {
      const auto u = interpolate(V, [&](const double* x, double* out) {
        double w[3];
        m(x, w);
        for (int d = 0; d < dim; ++d) out[d] = w[d];
      });
      std::vector<double> Ku(u.size());
      K.multiply(u, Ku);
      double norm = 0, scale = 0;
      for (double x : Ku) norm = std::max(norm, std::abs(x));
      for (double x : v) scale = std::max(scale, std::abs(x));
      EXPECT_LT(norm, 1e-11 * scale);
    }
  }
}

TEST(Properties, BitwiseIdenticalForAnyThreadCount) {
  const fem::testing::ParallelPaths parallel;  // threads even for colours of a few blocks
  const auto mesh = std::make_shared<const fem::Mesh>(fem::mesh::unit_cube(CellType::tet4, 12));
  const FunctionSpace V(mesh, 2);
  const Assembler a(V);
  ASSERT_GT(a.plan().num_colors(), 1);
  const int before = omp_get_max_threads();
  std::vector<std::vector<double>> runs;
  for (int t : {1, 2, 3, 8}) {
    omp_set_num_threads(t);
    runs.push_back(
        values_of(a, Diffusion{Coefficient::function([](const double* x) { return std::exp(x[0]); })}));
    auto b = a.vector(Source{[](const double* x) { return std::sin(7 * x[1]); }});
    runs.back().insert(runs.back().end(), b.begin(), b.end());
  }
  omp_set_num_threads(before);
  for (std::size_t k = 1; k < runs.size(); ++k)
    EXPECT_EQ(0, std::memcmp(runs[0].data(), runs[k].data(), runs[0].size() * sizeof(double))) << "run " << k;
}

TEST(Properties, BigBlocksAreAFunctionOfTheMeshAndBitwiseIdenticalForAnyThreadCount) {
  const fem::testing::ParallelPaths parallel;
  // 80k cells: blocks of more than 256 cells (sized from the cell count), several colours.
  const auto mesh = std::make_shared<const fem::Mesh>(fem::mesh::unit_square(CellType::tri3, 200));
  const FunctionSpace V(mesh, 1);
  const int before = omp_get_max_threads();
  std::vector<AssemblyPlan> plans;
  std::vector<std::vector<double>> runs;
  for (int t : {1, 2, 3, 8}) {
    omp_set_num_threads(t);
    plans.push_back(build_plan(V));
    const Assembler a(V);
    runs.push_back(
        values_of(a, Diffusion{Coefficient::function([](const double* x) { return 1 + x[0] * x[1]; })}));
  }
  omp_set_num_threads(before);
  ASSERT_GT(plans[0].block_size, 256);
  ASSERT_GT(plans[0].num_colors(), 1);
  EXPECT_GE(plans[0].color_blocks.size(), 64u);  // enough blocks for the threads
  for (std::size_t k = 1; k < runs.size(); ++k) {
    EXPECT_EQ(plans[k].block_size, plans[0].block_size);
    EXPECT_EQ(plans[k].color_offsets, plans[0].color_offsets);
    EXPECT_EQ(plans[k].color_blocks, plans[0].color_blocks);
    EXPECT_EQ(0, std::memcmp(runs[0].data(), runs[k].data(), runs[0].size() * sizeof(double))) << "run " << k;
  }
}

TEST(Properties, UserKernelThroughTheExtensionPoint) {
  const FunctionSpace V(mesh_for(CellType::tri6, 3), 2);
  const Assembler a(V);
  // A reaction term written by a user equals the library's mass matrix.
  auto reaction = [](const auto& cv, double* A) {
    for (int q = 0; q < cv.num_points; ++q)
      for (int i = 0; i < cv.n; ++i)
        for (int j = 0; j < cv.n; ++j)
          A[i * cv.n + j] += 3.0 * cv.basis(q, i) * cv.basis(q, j) * cv.weight[q];
  };
  std::vector<double> mine(a.pattern()->nnz());
  a.matrix_into(reaction, 4, mine);
  const auto library = values_of(a, Mass{3.0});
  for (std::size_t k = 0; k < mine.size(); ++k) EXPECT_NEAR(mine[k], library[k], 1e-14);
}

// A source evaluated in batches of quadrature points (what the driver's expressions use) gives
// the pointwise path's vector bit for bit, on every element (fixed-size rules of affine simplices
// and run-time ones alike), with the batches covering every point once; and a user's source
// kernel through the extension point, to rounding.
TEST(Properties, BatchedSourceIsThePointwiseSourceBitForBit) {
  auto f = [](const double* x) { return std::sin(7 * x[1]) + x[0] * x[0]; };
  for (const Case& c : kCases) {
    const FunctionSpace V(mesh_for(c.cell, 5), c.degree);
    const Assembler a(V);
    const int gdim = V.mesh().gdim();
    std::size_t points = 0, calls = 0;
    BatchFunction batch = [&](std::size_t count, const double* x, double* values) {
      points += count;
      ++calls;
      for (std::size_t i = 0; i < count; ++i) values[i] = f(x + i * gdim);
    };
    const auto pointwise = a.vector(Source{f});
    const auto batched = a.vector(Source{nullptr, batch});
    ASSERT_EQ(pointwise.size(), batched.size()) << c.name;
    EXPECT_EQ(0, std::memcmp(pointwise.data(), batched.data(), pointwise.size() * sizeof(double))) << c.name;
    const auto nq =
        static_cast<std::size_t>(quadrature(V.element(), a.quadrature_degree(V.degree() + 2)).size());
    EXPECT_EQ(points, static_cast<std::size_t>(V.mesh().num_cells()) * nq) << c.name;
    EXPECT_LT(calls, static_cast<std::size_t>(V.mesh().num_cells())) << c.name;  // many points per call
    auto source = [&](const auto& cv, double* be) {
      for (int q = 0; q < cv.num_points; ++q) {
        const double fq = f(cv.point(q));
        for (int i = 0; i < cv.n; ++i) be[i] += cv.weight[q] * fq * cv.basis(q, i);
      }
    };
    std::vector<double> kernel(V.num_dofs(), 0.0);
    a.vector_into(source, a.quadrature_degree(V.degree() + 2), kernel);
    for (std::size_t i = 0; i < kernel.size(); ++i)
      EXPECT_NEAR(batched[i], kernel[i], 1e-15 * (1 + std::abs(kernel[i]))) << c.name << ", entry " << i;
  }
}

TEST(Cache, ConnectivityIsBuiltOnceAndRebuiltForANewMeshVersion) {
  fem::Store s;
  s.put("mesh/sq", fem::mesh::unit_square(CellType::tri3, 8));
  {
    FunctionSpace V("mesh/sq", 1, 1, s);
    Assembler a1(V);
    Assembler a2(V);
    EXPECT_EQ(s.counter("assembly.pattern_builds"), 1);
    EXPECT_EQ(s.counter("assembly.pattern_hits"), 1);
    EXPECT_EQ(a1.pattern().get(), a2.pattern().get());  // the same object, not a copy
    // A second space of another degree has its own plan.
    Assembler p2(FunctionSpace("mesh/sq", 2, 1, s));
    EXPECT_EQ(s.counter("assembly.pattern_builds"), 2);
    EXPECT_EQ(s.counter("assembly.dofmap_builds"), 2);
  }
  s.put("mesh/sq", fem::mesh::unit_square(CellType::tri3, 9));  // new version: caches dropped
  EXPECT_FALSE(s.contains("mesh/sq#plan/P1"));
  Assembler a3(FunctionSpace("mesh/sq", 1, 1, s));
  EXPECT_EQ(s.counter("assembly.pattern_builds"), 3);
  EXPECT_EQ(a3.pattern()->rows(), 100);
}

TEST(Cache, FirstOrderDofMapsViewTheMeshArrays) {
  // P1 on a first-order mesh: the DOF map is the mesh's own cells and coordinates (no copy),
  // and it keeps them alive after the store replaces the mesh.
  fem::Store s;
  s.put("mesh/view", fem::mesh::unit_square(CellType::tri3, 4));
  const auto mesh = s.get<fem::Mesh>("mesh/view");
  FunctionSpace V("mesh/view", 1, 1, s);
  EXPECT_EQ(V.dofmap().cell_nodes.data(), mesh->cells().data());
  EXPECT_EQ(V.dofmap().coordinates.data(), mesh->coords().data());
  EXPECT_LT(V.dofmap().bytes(), mesh->cells().size_bytes()) << "the views are not counted as owned";
  const std::vector<fem::index_t> cells(mesh->cells().begin(), mesh->cells().end());
  const auto dofmap = V.dofmap_ptr();
  s.put("mesh/view", fem::mesh::unit_square(CellType::tri3, 5));
  EXPECT_TRUE(std::equal(cells.begin(), cells.end(), dofmap->cell_nodes.begin(), dofmap->cell_nodes.end()));
  // P2 numbers edge nodes: its own arrays, vertices first with the mesh's numbering.
  FunctionSpace W("mesh/view", 2, 1, s);
  EXPECT_NE(W.dofmap().cell_nodes.data(), s.get<fem::Mesh>("mesh/view")->cells().data());
  EXPECT_EQ(W.dofmap().cell_nodes.size(), s.get<fem::Mesh>("mesh/view")->cells().size() * 2);
}

TEST(Errors, InvertedCellIsNamed) {
  auto d = fem::mesh::unit_square(CellType::tri3, 4).data();
  std::swap(d.cells[3 * 5 + 1], d.cells[3 * 5 + 2]);  // cell 5 now clockwise
  const FunctionSpace V(std::make_shared<const fem::Mesh>(std::move(d)), 1);
  const Assembler a(V);
  std::vector<double> v(a.pattern()->nnz());
  try {
    a.matrix_into(Diffusion{}, v);
    FAIL() << "expected an error";
  } catch (const fem::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("cell 5"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("inverted"), std::string::npos) << e.what();
  }
}

TEST(Errors, BadSpacesTagsAndCoefficients) {
  auto hex = std::make_shared<const fem::Mesh>(fem::mesh::unit_cube(CellType::hex8, 2));
  EXPECT_THROW(FunctionSpace(hex, 2), fem::InvalidArgument);  // Q2 on hexahedra
  auto sq = std::make_shared<const fem::Mesh>(fem::mesh::unit_square(CellType::tri3, 2));
  EXPECT_THROW(FunctionSpace(sq, 3), fem::InvalidArgument);
  const FunctionSpace V(sq, 1);
  try {
    Dirichlet bc{FacetSet::tagged({42}), nullptr};
    dirichlet_values(V, std::span(&bc, 1));
    FAIL();
  } catch (const fem::InvalidArgument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("tag 42"), std::string::npos) << msg;
    EXPECT_NE(msg.find("left"), std::string::npos) << msg;  // the tags present are listed
  }
  const Assembler a(V);
  std::vector<double> v(a.pattern()->nnz());
  EXPECT_THROW(a.matrix_into(Diffusion{Coefficient::per_tag({{7, 1.0}})}, v), fem::InvalidArgument);
  EXPECT_THROW(a.matrix_into(Elasticity{}, v), fem::InvalidArgument);  // scalar space
  std::vector<double> wrong(3);
  EXPECT_THROW(a.matrix_into(Diffusion{}, wrong), fem::InvalidArgument);
}

}  // namespace
