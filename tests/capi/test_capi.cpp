// The kernel libraries' C ABIs from C++ (linked normally): every result checked against the C++
// kernels or against mathematics (exact solutions, integrals, symmetry), every error path as a
// status code with a message that names what went wrong, and failed calls leave the store as it
// was.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <filesystem>
#include <limits>
#include <numbers>
#include <numeric>
#include <string>
#include <vector>

#include "../solve/matrices.hpp"
#include "fem/array.hpp"
#include "fem/assembly/assembly.hpp"
#include "fem/assembly/c_api.h"
#include "fem/c_api.h"
#include "fem/mesh/c_api.h"
#include "fem/mesh/generate.hpp"
#include "fem/newton/assembled.hpp"
#include "fem/newton/c_api.h"
#include "fem/newton/newton.hpp"
#include "fem/solve/c_api.h"
#include "fem/solve/solve.hpp"
#include "fem/store.hpp"

namespace {

using std::numbers::pi;

std::string last() { return fem_last_error(); }

std::vector<double> vector_of(const std::string& key) {
  return fem::store().get<fem::Array<double>>(key)->vector();
}

double max_abs_difference(std::span<const double> a, std::span<const double> b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

/// A host function: a C function pointer with a context, as a C caller would give it.
template <class F>
fem_function host_function(F& f, bool concurrent = false) {
  fem_function h{};
  h.fn = [](int64_t count, const double* x, double* values, void* ctx) {
    F& g = *static_cast<F*>(ctx);
    for (int64_t i = 0; i < count; ++i) values[i] = g(x + 2 * i);  // 2D meshes in these tests
  };
  h.ctx = &f;
  h.concurrent = concurrent ? 1 : 0;
  return h;
}

fem_function constant(double value) {
  fem_function h{};
  h.value = value;
  return h;
}

/// gen:square-tri3:n under key, and its P1 space.
fem_space square(const char* key, int n) {
  EXPECT_EQ(fem_mesh_generate(fmt::format("gen:square-tri3:{}", n).c_str(), key, nullptr), FEM_OK) << last();
  return fem_space{key, 1, 1};
}

// --- one error channel ------------------------------------------------------------------------

// Every test starts from an empty process-wide store with zero counters (fem_clear): what one
// test published or counted never shows in another's.
class FreshStore : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(fem_clear(), FEM_OK); }
};
class CapiAssembly : public FreshStore {};
class CapiErrors : public FreshStore {};
class CapiMesh : public FreshStore {};
class CapiNewton : public FreshStore {};
class CapiSolve : public FreshStore {};

TEST_F(CapiErrors, AMissingKeyNamesTheNearestKeyAcrossLibraries) {
  const fem_space V = square("capi/errors/mesh", 4);
  fem_mesh_summary info;
  EXPECT_EQ(fem_mesh_info("capi/errors/mesh2", &info), FEM_ERR_NOT_FOUND);
  EXPECT_NE(last().find("capi/errors/mesh"), std::string::npos) << last();
  // The message of libfem_solve's failure is read through libfem_shared's fem_last_error().
  EXPECT_EQ(fem_factorize("capi/errors/mesh", nullptr, nullptr), FEM_ERR_WRONG_TYPE);
  EXPECT_NE(last().find("fem::CsrMatrix"), std::string::npos) << last();
  // A space on a missing mesh, in libfem_assembly.
  const fem_space missing{"capi/errors/mesj", 1, 1};
  EXPECT_EQ(fem_assemble_mass(&missing, nullptr, "capi/errors/M", nullptr), FEM_ERR_NOT_FOUND);
  EXPECT_NE(last().find("capi/errors/mesh"), std::string::npos) << last();
  // Success clears the message.
  EXPECT_EQ(fem_mesh_info(V.mesh_key, &info), FEM_OK);
  EXPECT_EQ(last(), "");
  // Null pointers are arguments errors, not crashes.
  EXPECT_EQ(fem_mesh_info(nullptr, &info), FEM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(fem_assemble_diffusion(nullptr, nullptr, "capi/errors/A", nullptr), FEM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(fem_solve(nullptr, nullptr, nullptr, 0, nullptr), FEM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(fem_assemble_diffusion(&V, nullptr, "bad key", nullptr), FEM_ERR_INVALID_KEY);
  EXPECT_FALSE(fem::store().contains("capi/errors/A"));
}

TEST_F(CapiErrors, BadMeshSpecsAndFiles) {
  EXPECT_EQ(fem_mesh_generate("gen:square-tri3:abc", "capi/errors/g", nullptr), FEM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last().find("abc"), std::string::npos) << last();
  EXPECT_EQ(fem_mesh_generate("gen:blob:3", "capi/errors/g", nullptr), FEM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last().find("blob"), std::string::npos) << last();
  EXPECT_FALSE(fem::store().contains("capi/errors/g"));
  EXPECT_NE(fem_mesh_read("/nonexistent/capi.msh", "capi/errors/r", nullptr), FEM_OK);
  EXPECT_NE(last().find("/nonexistent/capi.msh"), std::string::npos) << last();
  EXPECT_FALSE(fem::store().contains("capi/errors/r"));
  // A folder opens (read-only) and is no mesh: the message says so, not a stale errno's text
  // (the failed read above left ENOENT there; set it again in case something cleared it).
  const std::filesystem::path folder =
      std::filesystem::temp_directory_path() / ("fem_capi_folder_" + std::to_string(::getpid()) + ".msh");
  std::filesystem::create_directories(folder);
  errno = ENOENT;
  EXPECT_EQ(fem_mesh_read(folder.c_str(), "capi/errors/r", nullptr), FEM_ERR_PARSE);
  EXPECT_NE(last().find(folder.string()), std::string::npos) << last();
  EXPECT_NE(last().find("is a directory"), std::string::npos) << last();
  EXPECT_EQ(last().find("No such file"), std::string::npos) << last();
  EXPECT_FALSE(fem::store().contains("capi/errors/r"));
  std::filesystem::remove(folder);
}

TEST_F(CapiErrors, WrongSizesNameTheKeyAndTheSizes) {
  fem::store().put("capi/sizes/A", fem::solve::test::laplacian_2d(5));  // 25 × 25
  std::vector<double> b(24, 1.0), x(24, 7.0);
  EXPECT_EQ(fem_solve("capi/sizes/A", b.data(), x.data(), 24, nullptr), FEM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last().find("capi/sizes/A"), std::string::npos) << last();
  EXPECT_NE(last().find("25"), std::string::npos) << last();
  EXPECT_NE(last().find("24"), std::string::npos) << last();
  EXPECT_EQ(x, std::vector<double>(24, 7.0));  // untouched
  const int64_t shape[2] = {24, 2};
  std::vector<double> B(48, 1.0);
  ASSERT_EQ(fem_put_f64("capi/sizes/b", B.data(), 2, shape, nullptr), FEM_OK);
  EXPECT_EQ(fem_solve_keys("capi/sizes/A", "capi/sizes/b", "capi/sizes/x", nullptr, nullptr),
            FEM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last().find("capi/sizes/b"), std::string::npos) << last();
  EXPECT_NE(last().find("[24, 2]"), std::string::npos) << last();
  EXPECT_FALSE(fem::store().contains("capi/sizes/x"));

  // A per-cell coefficient of the wrong length.
  const fem_space V = square("capi/sizes/mesh", 4);  // 32 cells
  std::vector<double> k(31, 1.0);
  const int64_t n31 = 31;
  ASSERT_EQ(fem_put_f64("capi/sizes/k", k.data(), 1, &n31, nullptr), FEM_OK);
  fem_coefficient c{};
  c.kind = FEM_COEF_PER_CELL;
  c.key = "capi/sizes/k";
  EXPECT_EQ(fem_assemble_diffusion(&V, &c, "capi/sizes/K", nullptr), FEM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last().find("capi/sizes/k"), std::string::npos) << last();
  EXPECT_NE(last().find("32 cells"), std::string::npos) << last();
  EXPECT_FALSE(fem::store().contains("capi/sizes/K"));
}

TEST_F(CapiErrors, ASingularMatrixIsANumericalError) {
  // Two equal rows: singular, and not symmetric (no null space is detected for it).
  fem::store().put("capi/singular/A", fem::solve::test::from_entries(
                                          3, {{{0, 1.0}, {1, 2.0}}, {{0, 1.0}, {1, 2.0}}, {{2, 1.0}}}));
  EXPECT_EQ(fem_factorize("capi/singular/A", nullptr, nullptr), FEM_ERR_NUMERICAL);
  EXPECT_NE(last().find("capi/singular/A"), std::string::npos) << last();
  std::vector<double> b{1, 2, 3}, x(3, 0.0);
  EXPECT_EQ(fem_solve("capi/singular/A", b.data(), x.data(), 3, nullptr), FEM_ERR_NUMERICAL);
  EXPECT_NE(last().find("singular"), std::string::npos) << last();
}

TEST_F(CapiErrors, NonFiniteCoefficientsAreRefusedAndNothingIsPublished) {
  const fem_space V = square("capi/nan/mesh", 4);
  uint64_t v0 = 0, v = 0;
  ASSERT_EQ(fem_assemble_diffusion(&V, nullptr, "capi/nan/A", &v0), FEM_OK) << last();
  const auto before = fem::store().get<fem::CsrMatrix>("capi/nan/A");

  // A host function that returns NaN: found in the assembled values.
  auto nan_at_centre = [](const double* x) {
    return x[0] > 0.4 && x[0] < 0.6 ? std::numeric_limits<double>::quiet_NaN() : 1.0;
  };
  fem_coefficient k{};
  k.kind = FEM_COEF_FUNCTION;
  k.function = host_function(nan_at_centre);
  EXPECT_EQ(fem_assemble_diffusion(&V, &k, "capi/nan/A", nullptr), FEM_ERR_NUMERICAL);
  EXPECT_NE(last().find("capi/nan/A"), std::string::npos) << last();
  EXPECT_NE(last().find("nan"), std::string::npos) << last();
  // A NaN given as a constant or a tag value: the argument is refused before any work.
  k = fem_coefficient{};
  k.kind = FEM_COEF_CONSTANT;
  k.value = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(fem_assemble_diffusion(&V, &k, "capi/nan/A", nullptr), FEM_ERR_INVALID_ARGUMENT);
  const int32_t tags[1] = {fem::mesh::domain_tag};
  const double values[1] = {std::numeric_limits<double>::infinity()};
  k.kind = FEM_COEF_PER_TAG;
  k.value = 1.0;
  k.tags = tags;
  k.tag_values = values;
  k.ntags = 1;
  EXPECT_EQ(fem_assemble_diffusion(&V, &k, "capi/nan/A", nullptr), FEM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last().find("inf"), std::string::npos) << last();
  // A NaN source.
  auto nan_source = [](const double*) { return std::numeric_limits<double>::quiet_NaN(); };
  fem_function f = host_function(nan_source);
  EXPECT_EQ(fem_assemble_source(&V, &f, "capi/nan/b", 0, nullptr), FEM_ERR_NUMERICAL);
  EXPECT_FALSE(fem::store().contains("capi/nan/b"));

  // The matrix is the one published before the failures: same version, same object.
  ASSERT_EQ(fem_version("capi/nan/A", &v), FEM_OK);
  EXPECT_EQ(v, v0);
  EXPECT_EQ(fem::store().get<fem::CsrMatrix>("capi/nan/A"), before);
}

TEST_F(CapiErrors, AFailedDirichletCallChangesNeitherEntry) {
  const fem_space V = square("capi/bc/mesh", 4);
  uint64_t vA = 0, vb = 0, v = 0;
  ASSERT_EQ(fem_assemble_diffusion(&V, nullptr, "capi/bc/A", &vA), FEM_OK) << last();
  fem_function one = constant(1.0);
  ASSERT_EQ(fem_assemble_source(&V, &one, "capi/bc/b", 0, &vb), FEM_OK) << last();
  const int32_t no_such_tag[1] = {77};
  EXPECT_EQ(fem_apply_dirichlet(&V, no_such_tag, 1, nullptr, -1, "capi/bc/A", "capi/bc/b"),
            FEM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last().find("77"), std::string::npos) << last();
  auto nan_value = [](const double*) { return std::numeric_limits<double>::quiet_NaN(); };
  fem_function g = host_function(nan_value);
  EXPECT_EQ(fem_apply_dirichlet(&V, nullptr, 0, &g, -1, "capi/bc/A", "capi/bc/b"), FEM_ERR_NUMERICAL);
  EXPECT_EQ(fem_apply_dirichlet(&V, nullptr, 0, nullptr, 3, "capi/bc/A", "capi/bc/b"),
            FEM_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(fem_version("capi/bc/A", &v), FEM_OK);
  EXPECT_EQ(v, vA);
  ASSERT_EQ(fem_version("capi/bc/b", &v), FEM_OK);
  EXPECT_EQ(v, vb);
}

// Conditions belong to their space: a matrix of P1 on 4 x 4 squares has as many rows as P2 on
// 2 x 2 squares (25), but conditions made on the P2 space are refused on it, naming both spaces,
// and neither entry changes; so is the matrix of an older version of the mesh.
TEST_F(CapiErrors, ConditionsOnAnotherSpaceOfTheSameSizeAreRefused) {
  const fem_space P1 = square("capi/id/fine", 4), coarse = square("capi/id/coarse", 2);
  const fem_space P2{coarse.mesh_key, 2, 1};
  int64_t n1 = 0, n2 = 0;
  ASSERT_EQ(fem_space_dofs(&P1, &n1), FEM_OK) << last();
  ASSERT_EQ(fem_space_dofs(&P2, &n2), FEM_OK) << last();
  ASSERT_EQ(n1, n2);
  uint64_t vA = 0, vb = 0, v = 0;
  ASSERT_EQ(fem_assemble_diffusion(&P1, nullptr, "capi/id/A", &vA), FEM_OK) << last();
  fem_function one = constant(1.0);
  ASSERT_EQ(fem_assemble_source(&P1, &one, "capi/id/b", 0, &vb), FEM_OK) << last();
  EXPECT_EQ(fem_apply_dirichlet(&P2, nullptr, 0, nullptr, -1, "capi/id/A", "capi/id/b"),
            FEM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last().find("P2 of mesh 'capi/id/coarse'"), std::string::npos) << last();
  EXPECT_NE(last().find("P1 of mesh 'capi/id/fine'"), std::string::npos) << last();
  ASSERT_EQ(fem_version("capi/id/A", &v), FEM_OK);
  EXPECT_EQ(v, vA);
  ASSERT_EQ(fem_version("capi/id/b", &v), FEM_OK);
  EXPECT_EQ(v, vb);
  // The mesh published again (a new version, the same structure): the matrix of the old one is
  // no matrix of the space on the new one.
  square("capi/id/fine", 4);
  EXPECT_EQ(fem_apply_dirichlet(&P1, nullptr, 0, nullptr, -1, "capi/id/A", "capi/id/b"),
            FEM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last().find("version"), std::string::npos) << last();
  ASSERT_EQ(fem_assemble_diffusion(&P1, nullptr, "capi/id/A", nullptr), FEM_OK) << last();
  EXPECT_EQ(fem_apply_dirichlet(&P1, nullptr, 0, nullptr, -1, "capi/id/A", "capi/id/b"), FEM_OK) << last();
}

// --- mesh ---------------------------------------------------------------------------------------

TEST_F(CapiMesh, InfoTagsAndChecks) {
  const fem_space V = square("capi/mesh/square", 4);
  fem_mesh_summary info;
  ASSERT_EQ(fem_mesh_info(V.mesh_key, &info), FEM_OK) << last();
  EXPECT_EQ(info.gdim, 2);
  EXPECT_EQ(info.tdim, 2);
  EXPECT_EQ(info.num_nodes, 25);
  EXPECT_EQ(info.num_cells, 32);
  EXPECT_EQ(info.num_facets, 16);
  EXPECT_EQ(info.nodes_per_cell, 3);
  EXPECT_STREQ(info.cell_type, "tri3");
  int32_t tag = 0;
  ASSERT_EQ(fem_mesh_tag(V.mesh_key, "left", 1, &tag), FEM_OK) << last();
  EXPECT_EQ(tag, fem::mesh::left);
  ASSERT_EQ(fem_mesh_tag(V.mesh_key, "top", -1, &tag), FEM_OK) << last();
  EXPECT_EQ(tag, fem::mesh::top);
  EXPECT_EQ(fem_mesh_tag(V.mesh_key, "lft", 1, &tag), FEM_ERR_NOT_FOUND);
  EXPECT_NE(last().find("'left'"), std::string::npos) << last();
  EXPECT_EQ(fem_mesh_tag(V.mesh_key, "left", 2, &tag), FEM_ERR_NOT_FOUND);  // a facet name, not a cell name

  fem_mesh_check_report r;
  ASSERT_EQ(fem_mesh_check(V.mesh_key, &r), FEM_OK) << last();
  EXPECT_EQ(r.ok, 1);
  EXPECT_EQ(r.inverted, 0);
  EXPECT_EQ(r.boundary_facets, 16);
  EXPECT_EQ(r.untagged_boundary_facets, 0);

  // Cell 5 mirrored: inverted, which the report says while the call succeeds.
  fem::Mesh::Data d = fem::mesh::unit_square(fem::CellType::tri3, 4).data();
  std::swap(d.cells[5 * 3 + 1], d.cells[5 * 3 + 2]);
  fem::store().put("capi/mesh/inverted", fem::Mesh(std::move(d)));
  ASSERT_EQ(fem_mesh_check("capi/mesh/inverted", &r), FEM_OK) << last();
  EXPECT_EQ(r.ok, 0);
  EXPECT_EQ(r.inverted, 1);
  EXPECT_EQ(r.degenerate + r.tangled + r.duplicate_nodes + r.unreferenced_nodes, 0);
}

// --- assembly -----------------------------------------------------------------------------------

TEST_F(CapiAssembly, ConnectivityIsBuiltOncePerSpace) {
  const fem_space V = square("capi/once/mesh", 8);
  auto& s = fem::store();
  ASSERT_EQ(fem_assemble_diffusion(&V, nullptr, "capi/once/K", nullptr), FEM_OK) << last();
  ASSERT_EQ(fem_assemble_mass(&V, nullptr, "capi/once/M", nullptr), FEM_OK) << last();
  fem_function one = constant(1.0);
  ASSERT_EQ(fem_assemble_source(&V, &one, "capi/once/b", 0, nullptr), FEM_OK) << last();
  ASSERT_EQ(fem_apply_dirichlet(&V, nullptr, 0, nullptr, -1, "capi/once/K", "capi/once/b"), FEM_OK) << last();
  EXPECT_EQ(s.counter("assembly.pattern_builds"), 1);
  // One pattern object: the cached symbolic analysis of one serves the other.
  EXPECT_EQ(s.get<fem::CsrMatrix>("capi/once/K")->pattern_ptr(),
            s.get<fem::CsrMatrix>("capi/once/M")->pattern_ptr());
}

TEST_F(CapiAssembly, PerCellPerTagAndFunctionCoefficientsMatchTheCppKernels) {
  const fem_space V = square("capi/coef/mesh", 6);
  const auto mesh = fem::store().get<fem::Mesh>(V.mesh_key);
  const fem::assembly::Assembler A(fem::assembly::FunctionSpace(V.mesh_key, 1, 1));
  std::vector<double> k(static_cast<std::size_t>(mesh->num_cells()));
  for (std::size_t c = 0; c < k.size(); ++c) k[c] = 1.0 + static_cast<double>(c % 5);
  const int64_t n = static_cast<int64_t>(k.size());
  ASSERT_EQ(fem_put_f64("capi/coef/k", k.data(), 1, &n, nullptr), FEM_OK);

  fem_coefficient c{};
  c.kind = FEM_COEF_PER_CELL;
  c.key = "capi/coef/k";
  ASSERT_EQ(fem_assemble_diffusion(&V, &c, "capi/coef/K", nullptr), FEM_OK) << last();
  const auto K = fem::store().get<fem::CsrMatrix>("capi/coef/K");
  const fem::CsrMatrix expected = A.matrix(fem::assembly::Diffusion{fem::assembly::Coefficient::per_cell(k)});
  EXPECT_EQ(max_abs_difference(K->values(), expected.values()), 0.0);

  // Per tag: 3 on the domain's tag is 3 × the matrix of k = 1.
  const int32_t tags[1] = {fem::mesh::domain_tag};
  const double values[1] = {3.0};
  c = fem_coefficient{};
  c.kind = FEM_COEF_PER_TAG;
  c.value = std::numeric_limits<double>::quiet_NaN();  // no fallback: every cell's tag must be listed
  c.tags = tags;
  c.tag_values = values;
  c.ntags = 1;
  ASSERT_EQ(fem_assemble_diffusion(&V, &c, "capi/coef/K3", nullptr), FEM_OK) << last();
  ASSERT_EQ(fem_assemble_diffusion(&V, nullptr, "capi/coef/K1", nullptr), FEM_OK) << last();
  const auto K3 = fem::store().get<fem::CsrMatrix>("capi/coef/K3");
  const auto K1 = fem::store().get<fem::CsrMatrix>("capi/coef/K1");
  for (std::size_t i = 0; i < K1->nnz(); ++i) EXPECT_NEAR(K3->values()[i], 3 * K1->values()[i], 1e-13);
  const int32_t other[1] = {99};
  c.tags = other;
  EXPECT_EQ(fem_assemble_diffusion(&V, &c, "capi/coef/K99", nullptr), FEM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last().find("99"), std::string::npos) << last();

  // A host function (called concurrently: declared so) against the C++ function coefficient.
  auto rho = [](const double* x) { return 1.0 + x[0] * x[1]; };
  c = fem_coefficient{};
  c.kind = FEM_COEF_FUNCTION;
  c.function = host_function(rho, /*concurrent=*/true);
  ASSERT_EQ(fem_assemble_mass(&V, &c, "capi/coef/M", nullptr), FEM_OK) << last();
  const fem::CsrMatrix M = A.matrix(fem::assembly::Mass{fem::assembly::Coefficient::function(rho)});
  EXPECT_LT(max_abs_difference(fem::store().get<fem::CsrMatrix>("capi/coef/M")->values(), M.values()), 1e-15);
  // ∫ rho = 1 + 1/4 on the unit square: the sum of all entries of the mass matrix.
  double total = 0;
  for (double v : M.values()) total += v;
  EXPECT_NEAR(total, 1.25, 1e-12);
}

TEST_F(CapiAssembly, ElasticityMatchesTheCppKernel) {
  ASSERT_EQ(fem_mesh_generate("gen:square-quad4:5", "capi/elastic/mesh", nullptr), FEM_OK) << last();
  const fem_space V{"capi/elastic/mesh", 1, 2};
  fem_coefficient E{}, nu{};
  E.value = 200.0;
  nu.value = 0.25;
  ASSERT_EQ(fem_assemble_elasticity(&V, &E, &nu, 1, "capi/elastic/K", nullptr), FEM_OK) << last();
  const fem::assembly::Assembler A(fem::assembly::FunctionSpace("capi/elastic/mesh", 1, 2));
  fem::assembly::Elasticity form{200.0, 0.25, fem::assembly::Elasticity::Plane::stress};
  const auto K = fem::store().get<fem::CsrMatrix>("capi/elastic/K");
  EXPECT_EQ(max_abs_difference(K->values(), A.matrix(form).values()), 0.0);
  // Unconstrained, the matrix carries the three rigid motions of the plane.
  ASSERT_NE(K->null_space(), nullptr);
  EXPECT_EQ(K->null_space()->dimension(), 3);
  // A scalar space is refused.
  const fem_space scalar{"capi/elastic/mesh", 1, 1};
  EXPECT_EQ(fem_assemble_elasticity(&scalar, nullptr, nullptr, 0, "capi/elastic/bad", nullptr),
            FEM_ERR_INVALID_ARGUMENT);
}

TEST_F(CapiAssembly, GroupsAreSetsAndAFluxIsABoundaryCondition) {
  // meshes/groups.geo in MSH 2.2 (docs/semantics.md): each cell once, in two groups.
  ASSERT_EQ(fem_mesh_read(FEM_MESHES_DIR "/groups_v22.msh", "capi/groups", nullptr), FEM_OK) << last();
  const fem_space V{"capi/groups", 1, 1};
  fem_function one = constant(1.0);
  ASSERT_EQ(fem_assemble_neumann(&V, nullptr, 0, &one, "capi/groups/b", 0, nullptr), FEM_OK) << last();
  const auto b = vector_of("capi/groups/b");
  EXPECT_NEAR(std::accumulate(b.begin(), b.end(), 0.0), 4.0, 1e-12);  // the perimeter, once
  const int32_t interface = 5;
  EXPECT_EQ(fem_assemble_neumann(&V, &interface, 1, &one, "capi/groups/b", 0, nullptr),
            FEM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last().find("interior"), std::string::npos) << last();
  // Values for 'soft' (10) and 'plate' (12, every cell) disagree; a tag of no cell is refused.
  const int32_t tags[2] = {10, 12}, unknown = 7;
  const double values[2] = {1.0, 2.0};
  fem_coefficient k{};
  k.kind = FEM_COEF_PER_TAG;
  k.value = 1.0;
  k.tags = tags, k.tag_values = values, k.ntags = 2;
  EXPECT_EQ(fem_assemble_diffusion(&V, &k, "capi/groups/K", nullptr), FEM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last().find("'plate'"), std::string::npos) << last();
  k.tags = &unknown, k.ntags = 1;
  EXPECT_EQ(fem_assemble_diffusion(&V, &k, "capi/groups/K", nullptr), FEM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last().find("'hard'"), std::string::npos) << last();
}

TEST_F(CapiAssembly, SourceAndNeumannIntegrateTheirData) {
  const fem_space V = square("capi/rhs/mesh", 8);
  // Σ_i ∫ f φ_i = ∫ f (the basis sums to 1): ∫ x y = 1/4.
  auto f = [](const double* x) { return x[0] * x[1]; };
  fem_function hf = host_function(f);
  ASSERT_EQ(fem_assemble_source(&V, &hf, "capi/rhs/b", 0, nullptr), FEM_OK) << last();
  auto sum = [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return s;
  };
  EXPECT_NEAR(sum(vector_of("capi/rhs/b")), 0.25, 1e-13);
  // ∫_left g with g = 1 + y: 3/2, added to it with accumulate; replacing it without.
  auto g = [](const double* x) { return 1.0 + x[1]; };
  fem_function hg = host_function(g);
  int32_t left = 0;
  ASSERT_EQ(fem_mesh_tag(V.mesh_key, "left", 1, &left), FEM_OK);
  ASSERT_EQ(fem_assemble_neumann(&V, &left, 1, &hg, "capi/rhs/b", 1, nullptr), FEM_OK) << last();
  EXPECT_NEAR(sum(vector_of("capi/rhs/b")), 1.75, 1e-13);
  ASSERT_EQ(fem_assemble_neumann(&V, &left, 1, &hg, "capi/rhs/b", 0, nullptr), FEM_OK) << last();
  EXPECT_NEAR(sum(vector_of("capi/rhs/b")), 1.5, 1e-13);
  // ntags = 0: the whole boundary, each facet once: 1 + 1.5 + 2 + 1.5 around the unit square.
  ASSERT_EQ(fem_assemble_neumann(&V, nullptr, 0, &hg, "capi/rhs/b", 0, nullptr), FEM_OK) << last();
  EXPECT_NEAR(sum(vector_of("capi/rhs/b")), 6.0, 1e-13);
  // Accumulating into a vector of another size is refused.
  const double three[3] = {1, 2, 3};
  const int64_t n3 = 3;
  ASSERT_EQ(fem_put_f64("capi/rhs/short", three, 1, &n3, nullptr), FEM_OK);
  EXPECT_EQ(fem_assemble_source(&V, &hf, "capi/rhs/short", 1, nullptr), FEM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last().find("capi/rhs/short"), std::string::npos) << last();
}

TEST_F(CapiAssembly, PureNeumannPoissonIsSolvedWithZeroMean) {
  // -Δu = 2π² cos(πx) cos(πy) with ∂u/∂n = 0: u = cos(πx) cos(πy) + C; the data balance (∫f = 0)
  // and the matrix carries the constants, so the solution has ∫u = 0, like the exact one.
  const fem_space V = square("capi/neumann/mesh", 32);
  auto f = [](const double* x) { return 2 * pi * pi * std::cos(pi * x[0]) * std::cos(pi * x[1]); };
  fem_function hf = host_function(f);
  ASSERT_EQ(fem_assemble_diffusion(&V, nullptr, "capi/neumann/A", nullptr), FEM_OK) << last();
  ASSERT_EQ(fem_assemble_source(&V, &hf, "capi/neumann/b", 0, nullptr), FEM_OK) << last();
  fem_factorization_info info;
  ASSERT_EQ(fem_factorize("capi/neumann/A", nullptr, &info), FEM_OK) << last();
  EXPECT_EQ(info.null_space_dimension, 1);
  ASSERT_EQ(fem_solve_keys("capi/neumann/A", "capi/neumann/b", "capi/neumann/u", nullptr, nullptr), FEM_OK)
      << last();
  ASSERT_EQ(fem_assemble_mass(&V, nullptr, "capi/neumann/M", nullptr), FEM_OK) << last();
  const auto u = vector_of("capi/neumann/u");
  std::vector<double> Mu(u.size());
  fem::store().get<fem::CsrMatrix>("capi/neumann/M")->multiply(u, Mu);
  double mean = 0;
  for (double v : Mu) mean += v;
  EXPECT_NEAR(mean, 0.0, 1e-12);
  auto exact = [](const double* x) { return std::cos(pi * x[0]) * std::cos(pi * x[1]); };
  fem_function he = host_function(exact);
  ASSERT_EQ(fem_interpolate(&V, &he, "capi/neumann/exact", nullptr), FEM_OK) << last();
  EXPECT_LT(max_abs_difference(u, vector_of("capi/neumann/exact")), 5e-3);
  // A Dirichlet condition on one side fixes the constants: the matrix no longer carries them.
  int32_t left = 0;
  ASSERT_EQ(fem_mesh_tag(V.mesh_key, "left", 1, &left), FEM_OK);
  ASSERT_EQ(fem_apply_dirichlet(&V, &left, 1, nullptr, -1, "capi/neumann/A", "capi/neumann/b"), FEM_OK)
      << last();
  EXPECT_EQ(fem::store().get<fem::CsrMatrix>("capi/neumann/A")->null_space(), nullptr);
}

// --- solve --------------------------------------------------------------------------------------

TEST_F(CapiSolve, TransposeAndBlockSolvesMatchTheCppKernel) {
  // Convection–diffusion: unsymmetric, so Aᵀx = b and Ax = b differ.
  const fem::CsrMatrix A = fem::solve::test::laplacian_2d(12, 0.0, 0.4);
  ASSERT_FALSE(fem::solve::is_symmetric(A));
  fem::store().put("capi/unsym/A", A);
  const auto n = static_cast<std::size_t>(A.rows());
  const int nrhs = 3;
  std::vector<double> B(n * nrhs);
  for (std::size_t i = 0; i < B.size(); ++i) B[i] = std::sin(0.37 * static_cast<double>(i)) + 0.1;
  const std::span<const double> b(B.data(), n);

  fem_factorization_info info;
  ASSERT_EQ(fem_factorize("capi/unsym/A", nullptr, &info), FEM_OK) << last();
  EXPECT_EQ(info.n, static_cast<int64_t>(n));
  EXPECT_GT(info.factor_nonzeros, 0);
  EXPECT_GT(info.bytes, 0);
  EXPECT_STREQ(
      info.backend,
      std::string(fem::solve::to_string(fem::solve::factorization("capi/unsym/A")->backend())).c_str());

  std::vector<double> x(n), xt(n), X(n * nrhs), XT(n * nrhs);
  ASSERT_EQ(fem_solve("capi/unsym/A", b.data(), x.data(), static_cast<int64_t>(n), nullptr), FEM_OK)
      << last();
  ASSERT_EQ(fem_solve_transpose("capi/unsym/A", b.data(), xt.data(), static_cast<int64_t>(n), nullptr),
            FEM_OK)
      << last();
  ASSERT_EQ(fem_solve_block("capi/unsym/A", B.data(), X.data(), static_cast<int64_t>(n), nrhs, nullptr),
            FEM_OK)
      << last();
  ASSERT_EQ(
      fem_solve_transpose_block("capi/unsym/A", B.data(), XT.data(), static_cast<int64_t>(n), nrhs, nullptr),
      FEM_OK)
      << last();
  EXPECT_EQ(max_abs_difference(x, fem::solve::solve("capi/unsym/A", b)), 0.0);
  EXPECT_EQ(max_abs_difference(xt, fem::solve::solve_transpose("capi/unsym/A", b)), 0.0);
  EXPECT_EQ(max_abs_difference(X, fem::solve::solve_block("capi/unsym/A", B, nrhs)), 0.0);
  EXPECT_EQ(max_abs_difference(XT, fem::solve::solve_transpose_block(fem::store(), "capi/unsym/A", B, nrhs)),
            0.0);
  // And they solve what they claim: A x = b, Aᵀ xt = b, column by column for the blocks.
  std::vector<double> r(n);
  A.multiply(x, r);
  EXPECT_LT(max_abs_difference(r, b), 1e-12);
  A.multiply_transpose(xt, r);
  EXPECT_LT(max_abs_difference(r, b), 1e-12);
  EXPECT_GT(max_abs_difference(x, xt), 1e-3);  // the transpose matters
  for (int k = 0; k < nrhs; ++k) {
    A.multiply_transpose(std::span<const double>(XT).subspan(k * n, n), r);
    EXPECT_LT(max_abs_difference(r, std::span<const double>(B).subspan(k * n, n)), 1e-12) << "column " << k;
  }

  // By keys, an [n, nrhs] row-major array: column k of the result solves column k.
  std::vector<double> rowmajor(n * nrhs);
  for (std::size_t i = 0; i < n; ++i)
    for (int k = 0; k < nrhs; ++k) rowmajor[i * nrhs + k] = B[k * n + i];
  const int64_t shape[2] = {static_cast<int64_t>(n), nrhs};
  ASSERT_EQ(fem_put_f64("capi/unsym/B", rowmajor.data(), 2, shape, nullptr), FEM_OK);
  ASSERT_EQ(fem_solve_transpose_keys("capi/unsym/A", "capi/unsym/B", "capi/unsym/XT", nullptr, nullptr),
            FEM_OK)
      << last();
  const auto XTkeys = fem::store().get<fem::Array<double>>("capi/unsym/XT");
  ASSERT_EQ(XTkeys->shape(), (std::vector<int64_t>{static_cast<int64_t>(n), nrhs}));
  for (std::size_t i = 0; i < n; ++i)
    for (int k = 0; k < nrhs; ++k) EXPECT_EQ((*XTkeys)[i * nrhs + k], XT[k * n + i]);
  // One factorization served all of it.
  EXPECT_EQ(fem::solve::factorization("capi/unsym/A")->counts().factorizations, 1);
}

TEST_F(CapiSolve, Options) {
  fem::store().put("capi/options/A", fem::solve::test::laplacian_2d(6));
  fem_solve_options o;
  ASSERT_EQ(fem_solve_options_default(&o), FEM_OK);
  EXPECT_EQ(o.backend, FEM_BACKEND_AUTOMATIC);
  EXPECT_EQ(o.max_relative_residual, fem::solve::Options{}.max_relative_residual);
  o.backend = FEM_BACKEND_LU;
  fem_factorization_info info;
  ASSERT_EQ(fem_factorize("capi/options/A", &o, &info), FEM_OK) << last();
  EXPECT_STREQ(info.backend, "lu");
  o.backend = 42;
  EXPECT_EQ(fem_factorize("capi/options/A", &o, &info), FEM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last().find("42"), std::string::npos) << last();
  o = fem_solve_options{};  // zero-initialized: the defaults
  o.max_relative_residual = -1;
  EXPECT_EQ(fem_factorize("capi/options/A", &o, &info), FEM_ERR_INVALID_ARGUMENT);
  o.max_relative_residual = 0;
  EXPECT_EQ(fem_factorize("capi/options/A", &o, &info), FEM_OK) << last();
  if (!fem::solve::available(fem::solve::Backend::cholmod)) {
    o.backend = FEM_BACKEND_CHOLMOD;
    EXPECT_EQ(fem_factorize("capi/options/A", &o, &info), FEM_ERR_NOT_COMPILED);
  }
}

// --- newton -------------------------------------------------------------------------------------

TEST_F(CapiNewton, BratuConvergesLikeTheCppSolver) {
  const fem_space V = square("capi/bratu/mesh", 16);
  fem_newton_problem p{};
  p.kind = FEM_NEWTON_BRATU;
  p.parameter = 1.0;
  fem_newton_result r;
  ASSERT_EQ(fem_newton_solve(&V, &p, nullptr, 0, nullptr, "capi/bratu/u", nullptr, &r), FEM_OK) << last();
  EXPECT_EQ(r.converged, 1) << r.reason << ": " << r.message;
  EXPECT_LE(r.iterations, 5);  // quadratic convergence from u = 0
  EXPECT_EQ(r.jacobian_refreshes, r.iterations);
  EXPECT_EQ(r.symbolic_analyses, 1);
  EXPECT_LE(r.residual_norm, 1e-10 * std::max(1.0, r.initial_residual_norm));

  // The same problem in C++.
  const auto assembler =
      std::make_shared<const fem::assembly::Assembler>(fem::assembly::FunctionSpace(V.mesh_key, 1));
  const fem::assembly::FunctionSpace& W = assembler->space();
  const auto bc = fem::assembly::dirichlet_values(
      W, std::vector<fem::assembly::Dirichlet>{{fem::assembly::FacetSet::all(), nullptr}});
  std::vector<double> u(W.num_dofs(), 0.0);
  const auto cpp = fem::newton::solve(
      fem::newton::assembled_problem(assembler, fem::assembly::bratu(1.0), bc, "capi/bratu/cpp"), u);
  ASSERT_TRUE(cpp.converged);
  EXPECT_EQ(cpp.iterations, r.iterations);
  const auto c = vector_of("capi/bratu/u");
  EXPECT_LT(max_abs_difference(c, u), 1e-14);
  // u > 0 inside (the source λe^u is positive), 0 on the boundary.
  EXPECT_GT(*std::max_element(c.begin(), c.end()), 0.05);
  EXPECT_GE(*std::min_element(c.begin(), c.end()), 0.0);

  // Warm-started from its own solution, Newton has nothing left to do.
  ASSERT_EQ(fem_newton_solve(&V, &p, nullptr, 0, nullptr, "capi/bratu/u", nullptr, &r), FEM_OK) << last();
  EXPECT_EQ(r.converged, 1);
  EXPECT_LE(r.iterations, 1);

  // A source given to Bratu's problem is refused.
  p.source = constant(1.0);
  EXPECT_EQ(fem_newton_solve(&V, &p, nullptr, 0, nullptr, "capi/bratu/v", nullptr, &r),
            FEM_ERR_INVALID_ARGUMENT);
}

TEST_F(CapiNewton, QuasilinearReproducesALinearSolution) {
  // -div((1 + u²)∇u) = -2x with u = x on the boundary: u = x exactly (P1 holds it, and the
  // quadrature integrates the polynomial integrands exactly).
  const fem_space V = square("capi/quasi/mesh", 8);
  auto f = [](const double* x) { return -2 * x[0]; };
  auto g = [](const double* x) { return x[0]; };
  fem_newton_problem p{};
  p.kind = FEM_NEWTON_QUASILINEAR;
  p.source = host_function(f);
  fem_function boundary = host_function(g);
  fem_newton_options o;
  ASSERT_EQ(fem_newton_options_default(&o), FEM_OK);
  o.atol = 1e-13;
  o.rtol = 1e-13;
  fem_newton_result r;
  ASSERT_EQ(fem_newton_solve(&V, &p, nullptr, 0, &boundary, "capi/quasi/u", &o, &r), FEM_OK) << last();
  ASSERT_EQ(r.converged, 1) << r.reason;
  ASSERT_EQ(fem_interpolate(&V, &boundary, "capi/quasi/exact", nullptr), FEM_OK) << last();
  EXPECT_LT(max_abs_difference(vector_of("capi/quasi/u"), vector_of("capi/quasi/exact")), 1e-11);
}

TEST_F(CapiNewton, PLaplacianWithPTwoIsPoisson) {
  // p = 2: (ε² + |∇u|²)⁰ ∇u = ∇u, so Newton gives the linear solve's answer.
  const fem_space V = square("capi/plap/mesh", 8);
  auto f = [](const double* x) { return 1.0 + x[0]; };
  fem_function hf = host_function(f);
  fem_newton_problem p{};
  p.kind = FEM_NEWTON_P_LAPLACIAN;
  p.parameter = 2.0;
  p.source = hf;
  fem_newton_result r;
  ASSERT_EQ(fem_newton_solve(&V, &p, nullptr, 0, nullptr, "capi/plap/u", nullptr, &r), FEM_OK) << last();
  ASSERT_EQ(r.converged, 1) << r.reason;
  EXPECT_LE(r.iterations, 2);
  ASSERT_EQ(fem_assemble_diffusion(&V, nullptr, "capi/plap/A", nullptr), FEM_OK);
  ASSERT_EQ(fem_assemble_source(&V, &hf, "capi/plap/b", 0, nullptr), FEM_OK);
  ASSERT_EQ(fem_apply_dirichlet(&V, nullptr, 0, nullptr, -1, "capi/plap/A", "capi/plap/b"), FEM_OK);
  ASSERT_EQ(fem_solve_keys("capi/plap/A", "capi/plap/b", "capi/plap/x", nullptr, nullptr), FEM_OK);
  EXPECT_LT(max_abs_difference(vector_of("capi/plap/u"), vector_of("capi/plap/x")), 1e-12);
  p.parameter = 1.0;
  EXPECT_EQ(fem_newton_solve(&V, &p, nullptr, 0, nullptr, "capi/plap/u", nullptr, &r),
            FEM_ERR_INVALID_ARGUMENT);
}

TEST_F(CapiNewton, NotConvergingIsReportedNotAnError) {
  // Bratu beyond its fold (λ* ≈ 6.81 on the unit square): no solution; with 3 iterations
  // allowed Newton stops on max iterations, which the result says. u_key is not written.
  const fem_space V = square("capi/fold/mesh", 8);
  fem_newton_problem p{};
  p.kind = FEM_NEWTON_BRATU;
  p.parameter = 10.0;
  fem_newton_options o;
  ASSERT_EQ(fem_newton_options_default(&o), FEM_OK);
  o.max_iterations = 3;
  fem_newton_result r;
  ASSERT_EQ(fem_newton_solve(&V, &p, nullptr, 0, nullptr, "capi/fold/u", &o, &r), FEM_OK) << last();
  EXPECT_EQ(r.converged, 0);
  EXPECT_STRNE(r.reason, "");
  EXPECT_EQ(std::string(r.reason).rfind("diverged", 0), 0u) << r.reason;
  EXPECT_FALSE(fem::store().contains("capi/fold/u"));
  EXPECT_TRUE(fem::store().contains("capi/fold/u/u"));  // Newton's last iterate
}

}  // namespace
