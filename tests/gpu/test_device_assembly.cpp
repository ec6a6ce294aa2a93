// Device assembly (fem/assembly/device.hpp) on every executor: the host twin, the debug device
// (the device code path on the CPU, separate buffers and explicit copies) and CUDA when a GPU is
// present (skipped with the reason otherwise). Results equal the host Assembler's to 1e-12
// relative; re-assembly does no connectivity work and no upload; an inverted cell is named.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "../support/parallel_paths.hpp"
#include "executors.hpp"
#include "fem/assembly/device.hpp"
#include "fem/mesh/generate.hpp"
#include "fem/store.hpp"

namespace {

using namespace fem;
using namespace fem::assembly;
using fem::gpu::testing::Target;

// A generated mesh with its cells tagged 1, 2, 3 by index (for per-tag coefficients), slightly
// distorted so that Q1 cells are not parallelograms.
Mesh tagged(CellType type, index_t n) {
  const Mesh m = type == CellType::tri3 || type == CellType::quad4 ? mesh::unit_square(type, n)
                                                                   : mesh::unit_cube(type, n);
  Mesh::Data d;
  d.gdim = m.gdim();
  d.cell_type = m.cell_type();
  d.coords.assign(m.coords().begin(), m.coords().end());
  for (std::size_t i = 0; i < d.coords.size(); ++i) {
    const double x = d.coords[i];
    if (x > 0 && x < 1) d.coords[i] = x + 0.1 / n * std::sin(7.0 * static_cast<double>(i));
  }
  d.cells.assign(m.cells().begin(), m.cells().end());
  for (index_t c = 0; c < m.num_cells(); ++c) d.cell_tags.push_back(1 + c % 3);
  d.source = "tagged";
  return Mesh(std::move(d));
}

double relative_difference(const std::vector<double>& a, const std::vector<double>& b) {
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(a[i] - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  return diff / scale;
}

// Entries (i, j) whose partner (j, i) has other bits.
std::size_t asymmetric_entries(const CsrPattern& p, const std::vector<double>& values) {
  std::size_t bad = 0;
  for (index_t i = 0; i < p.rows(); ++i)
    for (index_t q = p.row_offsets()[i]; q < p.row_offsets()[i + 1]; ++q) {
      const index_t j = p.col_indices()[q];
      if (j <= i) continue;
      const std::int64_t r = p.find(j, i);
      if (r < 0 || std::bit_cast<std::uint64_t>(values[static_cast<std::size_t>(q)]) !=
                       std::bit_cast<std::uint64_t>(values[static_cast<std::size_t>(r)]))
        ++bad;
    }
  return bad;
}

enum class Form { diffusion, diffusion_tags, mass, mass_vector, elasticity, elasticity_tags };

std::string form_name(Form f) {
  switch (f) {
    case Form::diffusion:
      return "diffusion";
    case Form::diffusion_tags:
      return "diffusion_tags";
    case Form::mass:
      return "mass";
    case Form::mass_vector:
      return "mass_vector";
    case Form::elasticity:
      return "elasticity";
    case Form::elasticity_tags:
      return "elasticity_tags";
  }
  return "?";
}

using Case = std::tuple<Target, CellType, Form>;

// The debug device's and the host twin's loops on several threads even for these small meshes.
class DeviceAssembly : public ::testing::TestWithParam<Case> {
  fem::testing::ParallelPaths parallel_;
};

TEST_P(DeviceAssembly, EqualsHost) {
  const auto [target, type, form] = GetParam();
  FEM_TEST_EXECUTOR(target, exec);
  Store store;
  const int dim = type == CellType::tri3 || type == CellType::quad4 ? 2 : 3;
  store.put("mesh/m", tagged(type, dim == 2 ? 12 : 5));
  const bool vector = form == Form::mass_vector || form == Form::elasticity || form == Form::elasticity_tags;
  const FunctionSpace V("mesh/m", 1, vector ? dim : 1, store);
  const Assembler host(V);
  const Assembler device(V, exec);
  const Coefficient k = Coefficient::per_tag({{1, 1.0}, {2, 3.5}, {3, 0.25}});
  const Coefficient nu = Coefficient::per_tag({{1, 0.3}, {2, 0.1}}, 0.45);
  const std::size_t nnz = host.pattern()->nnz();
  std::vector<double> expected(nnz), got(nnz, 99.0);
  auto both = [&](const auto& f) {
    host.matrix_into(f, expected);
    device.matrix_into(f, got);
  };
  switch (form) {
    case Form::diffusion:
      both(Diffusion{2.5});
      break;
    case Form::diffusion_tags:
      both(Diffusion{k});
      break;
    case Form::mass:
      both(Mass{1.5});
      break;
    case Form::mass_vector:
      both(Mass{k});
      break;
    case Form::elasticity:
      both(Elasticity{200.0, 0.3});
      break;
    case Form::elasticity_tags:
      both(Elasticity{k, nu});
      break;
  }
  EXPECT_LE(relative_difference(got, expected), 1e-12);
  // Deterministic and bitwise symmetric (every form here is symmetric): the coloured scatter
  // adds each slot's contributions in colour order, on any thread count, in every run.
  std::vector<double> again(nnz, -1.0);
  switch (form) {
    case Form::diffusion:
      device.matrix_into(Diffusion{2.5}, again);
      break;
    case Form::diffusion_tags:
      device.matrix_into(Diffusion{k}, again);
      break;
    case Form::mass:
      device.matrix_into(Mass{1.5}, again);
      break;
    case Form::mass_vector:
      device.matrix_into(Mass{k}, again);
      break;
    case Form::elasticity:
      device.matrix_into(Elasticity{200.0, 0.3}, again);
      break;
    case Form::elasticity_tags:
      device.matrix_into(Elasticity{k, nu}, again);
      break;
  }
  EXPECT_EQ(0, std::memcmp(again.data(), got.data(), nnz * sizeof(double))) << "two runs differ";
  EXPECT_EQ(asymmetric_entries(*host.pattern(), got), 0u);
  // Left on the device, then copied back by hand: the same values.
  auto values = device.values_buffer();
  if (form == Form::diffusion) {
    device.matrix_into_device(Diffusion{2.5}, values);
    std::vector<double> back(nnz);
    values.download(back);
    exec.context().synchronize();
    EXPECT_EQ(back, got);
  }
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (Target t : {Target::debug_device, Target::cuda})
    for (CellType c : {CellType::tri3, CellType::quad4, CellType::tet4, CellType::hex8})
      for (Form f : {Form::diffusion, Form::diffusion_tags, Form::mass, Form::mass_vector, Form::elasticity,
                     Form::elasticity_tags})
        out.emplace_back(t, c, f);
  return out;
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const auto [t, c, f] = info.param;
  return fem::gpu::testing::target_name({t, 0}) + "_" + std::string(cell_info(c).name) + "_" + form_name(f);
}

INSTANTIATE_TEST_SUITE_P(Executors, DeviceAssembly, ::testing::ValuesIn(cases()), case_name);

class DeviceAssemblyExec : public ::testing::TestWithParam<Target> {};

TEST_P(DeviceAssemblyExec, ReassemblyDoesNoConnectivityWorkAndNoUpload) {
  FEM_TEST_EXECUTOR(GetParam(), exec);
  Store store;
  store.put("mesh/cube", mesh::unit_cube(CellType::tet4, 6));
  const FunctionSpace V("mesh/cube", 1, 1, store);
  const Assembler first(V, exec);
  EXPECT_EQ(store.counter("assembly.pattern_builds"), 1);       // built on the executor
  EXPECT_EQ(store.counter("assembly.device_mesh_uploads"), 0);  // uploaded at the first device assembly
  auto values = first.values_buffer();
  first.matrix_into_device(Diffusion{1.0}, values);
  EXPECT_EQ(store.counter("assembly.device_mesh_uploads"), 1);
  EXPECT_EQ(store.counter("assembly.device_plan_uploads"), 1);
  const std::string key = "mesh/cube#device/" + executor_key(exec);
  ASSERT_TRUE(store.contains(key));
  EXPECT_EQ(store.info(key).residency, exec.separate_memory() ? Residency::device : Residency::host);
  EXPECT_GE(store.info(key).bytes, first.device_mesh().coords.bytes() + first.device_mesh().cells.bytes());

  const Assembler second(V, exec);  // a second assembler on the same mesh: all cached
  for (int i = 0; i < 3; ++i) second.matrix_into_device(Diffusion{1.0 + i}, values);
  std::vector<double> host_values(values.size());
  second.matrix_into(Mass{}, host_values);
  EXPECT_EQ(store.counter("assembly.pattern_builds"), 1);
  EXPECT_EQ(store.counter("assembly.device_mesh_uploads"), 1);
  EXPECT_EQ(store.counter("assembly.device_plan_uploads"), 1);
  EXPECT_EQ(&first.device_mesh(), &second.device_mesh());

  // A new mesh version drops the device entries (their buffers are freed with them).
  store.put("mesh/cube", mesh::unit_cube(CellType::tet4, 4));
  EXPECT_FALSE(store.contains(key));
}

TEST_P(DeviceAssemblyExec, InvertedCellIsNamed) {
  FEM_TEST_EXECUTOR(GetParam(), exec);
  Store store;
  const Mesh m = mesh::unit_cube(CellType::tet4, 3);
  Mesh::Data d;
  d.gdim = 3;
  d.cell_type = CellType::tet4;
  d.coords.assign(m.coords().begin(), m.coords().end());
  d.cells.assign(m.cells().begin(), m.cells().end());
  std::swap(d.cells[17 * 4 + 1], d.cells[17 * 4 + 2]);  // cell 17 turned inside out
  d.source = "inverted";
  store.put("mesh/bad", Mesh(std::move(d)));
  const Assembler device(FunctionSpace("mesh/bad", 1, 1, store), exec);
  auto values = device.values_buffer();
  try {
    device.matrix_into_device(Diffusion{}, values);
    FAIL() << "no error for an inverted cell";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("cell 17 of mesh 'inverted' is inverted"), std::string::npos)
        << e.what();
  }
}

// Plane stress on the device: the host's matrix, which is plane strain with the converted material
// E* = E(1+2ν)/(1+ν)², ν* = ν/(1+ν), and not the device's own plane-strain matrix.
TEST_P(DeviceAssemblyExec, ElasticityPlaneStressEqualsHost) {
  FEM_TEST_EXECUTOR(GetParam(), exec);
  for (CellType type : {CellType::tri3, CellType::quad4}) {
    Store store;
    store.put("mesh/m", tagged(type, 12));
    const FunctionSpace V("mesh/m", 1, 2, store);
    const Assembler host(V);
    const Assembler device(V, exec);
    const std::map<int, double> E = {{1, 1.0}, {2, 3.5}, {3, 0.25}}, nu = {{1, 0.3}, {2, 0.1}, {3, 0.45}};
    std::map<int, double> E_converted, nu_converted;
    for (const auto& [tag, e] : E) {
      const double v = nu.at(tag);
      E_converted[tag] = e * (1 + 2 * v) / ((1 + v) * (1 + v));
      nu_converted[tag] = v / (1 + v);
    }
    const std::size_t nnz = host.pattern()->nnz();
    std::vector<double> expected(nnz), converted(nnz), got(nnz, 99.0), strain(nnz);
    const Elasticity stress_form{Coefficient::per_tag(E), Coefficient::per_tag(nu),
                                 Elasticity::Plane::stress};
    host.matrix_into(stress_form, expected);
    device.matrix_into(stress_form, got);
    const std::string what(cell_info(type).name);
    EXPECT_LE(relative_difference(got, expected), 1e-12) << what;
    host.matrix_into(Elasticity{Coefficient::per_tag(E_converted), Coefficient::per_tag(nu_converted)},
                     converted);
    EXPECT_LE(relative_difference(got, converted), 1e-12) << what;
    device.matrix_into(Elasticity{Coefficient::per_tag(E), Coefficient::per_tag(nu)}, strain);
    EXPECT_GT(relative_difference(got, strain), 1e-3) << what;
  }
}

// The colours really are independent sets (no node shared by two cells of a colour), cover every
// cell once, and the atomic scatter (kept for comparison) still equals the host to rounding.
TEST_P(DeviceAssemblyExec, ColoursShareNoNodeAndTheAtomicScatterAgrees) {
  FEM_TEST_EXECUTOR(GetParam(), exec);
  Store store;
  const Mesh m = tagged(CellType::tet4, 6);
  store.put("mesh/m", m);
  const FunctionSpace V("mesh/m", 1, 1, store);
  const Assembler coloured(V, exec), atomic(V, exec, Assembler::Scatter::atomic);
  const DeviceMesh& d = coloured.device_mesh();
  ASSERT_GT(d.num_colours(), 1);
  ASSERT_EQ(d.colour_offsets.back(), m.num_cells());
  std::vector<int> seen(static_cast<std::size_t>(m.num_cells()), 0);
  for (int k = 0; k < d.num_colours(); ++k) {
    std::vector<char> node_used(static_cast<std::size_t>(m.num_nodes()), 0);
    for (index_t p = d.colour_offsets[k]; p < d.colour_offsets[k + 1]; ++p) {
      const index_t c = d.order[static_cast<std::size_t>(p)];
      ++seen[static_cast<std::size_t>(c)];
      for (index_t node : m.cell(c)) {
        EXPECT_FALSE(node_used[static_cast<std::size_t>(node)]) << "colour " << k << " shares node " << node;
        node_used[static_cast<std::size_t>(node)] = 1;
      }
    }
  }
  EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
  std::vector<double> a(coloured.pattern()->nnz()), b(a.size()), h(a.size());
  coloured.matrix_into(Diffusion{1.0}, a);
  atomic.matrix_into(Diffusion{1.0}, b);
  Assembler(V).matrix_into(Diffusion{1.0}, h);
  EXPECT_LE(relative_difference(a, h), 1e-12);
  EXPECT_LE(relative_difference(b, h), 1e-12);
}

// The check on a realistic size: 6·32³ tetrahedra (197k cells), diffusion and
// elasticity assembled twice, the same bits both times, bitwise symmetric, and equal to the host
// Assembler to 1e-12.
TEST_P(DeviceAssemblyExec, Cube32TwiceBitwiseEqualAndSymmetric) {
  FEM_TEST_EXECUTOR(GetParam(), exec);
  Store store;
  store.put("mesh/cube", mesh::unit_cube(CellType::tet4, 32));
  for (int components : {1, 3}) {
    SCOPED_TRACE(components);
    const Assembler device(FunctionSpace("mesh/cube", 1, components, store), exec);
    const std::size_t nnz = device.pattern()->nnz();
    std::vector<double> first(nnz), second(nnz), host(nnz);
    auto assemble = [&](std::vector<double>& v, const auto& a) {
      if (components == 1)
        a.matrix_into(Diffusion{1.0}, v);
      else
        a.matrix_into(Elasticity{200.0, 0.3}, v);
    };
    assemble(first, device);
    assemble(second, device);
    assemble(host, Assembler(device.space()));
    EXPECT_EQ(0, std::memcmp(first.data(), second.data(), nnz * sizeof(double)));
    EXPECT_EQ(asymmetric_entries(*device.pattern(), first), 0u);
    EXPECT_LE(relative_difference(first, host), 1e-12);
  }
}

TEST(DeviceAssemblyErrors, UnsupportedCoefficientAndSpace) {
  Store store;
  store.put("mesh/sq", mesh::unit_square(CellType::tri3, 4));
  const Assembler device(FunctionSpace("mesh/sq", 1, 1, store), fem::gpu::Executor::debug_device());
  std::vector<double> values(device.pattern()->nnz());
  EXPECT_THROW(
      device.matrix_into(Diffusion{Coefficient::function([](const double*) { return 1.0; })}, values),
      InvalidArgument);
  // P2 has no device kernels: refused, never run on the host instead.
  const Assembler p2(FunctionSpace("mesh/sq", 2, 1, store), fem::gpu::Executor::debug_device());
  std::vector<double> p2_values(p2.pattern()->nnz());
  EXPECT_THROW(p2.matrix_into(Diffusion{}, p2_values), InvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Executors, DeviceAssemblyExec, fem::gpu::testing::device_targets,
                         fem::gpu::testing::target_name);

}  // namespace
