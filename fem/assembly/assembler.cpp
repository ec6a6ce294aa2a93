// The library's bilinear and linear forms through the assembly templates (the kernels of
// detail/kernels.hpp with host coefficients), or through the device engine on a device executor.
// The nonlinear forms are nonlinear.cpp's.
#include "fem/assembly/assembler.hpp"

#include "fem/assembly/boundary.hpp"
#include "fem/assembly/detail/assembler_forms.hpp"

namespace fem::assembly {
namespace {

using detail::affine;

// Quadrature points per call of a source's batch function: enough to spread the call and the
// dispatch of an interpreted expression thin, few enough to stay in L1.
constexpr int kBatchPoints = 256;

// ∫ f v with f evaluated through its batch function: the cells' quadrature points gathered (whole
// cells, up to kBatchPoints points), f at all of them in one call, then each cell's vector summed
// in kernels::Source's order.
void assemble_source_batched(const FunctionSpace& V, const AssemblyPlan& plan, const BatchFunction& f,
                             int quadrature_degree, std::span<double> b) {
  FEM_EXPECTS(b.size() == static_cast<std::size_t>(V.num_dofs()),
              "vector of {} entries, the space has {} DOFs", b.size(), V.num_dofs());
  detail::visit_space<Blocks::scalar>(V, [&]<class E, class G, int BS>() {
    constexpr int n = E::n, dim = E::dim;
    const detail::Tabulation<E, G> tab(quadrature(V.element(), quadrature_degree));
    const index_t* cell_nodes = V.dofmap().cell_nodes.data();
    const double* phi = tab.phi.data();
    double* out = b.data();
    const int nq = tab.nq;
    const int cells_per_batch = std::max(1, kBatchPoints / std::max(nq, 1));
    detail::visit_rule_size<G>(nq, [&]<int NQ>() {
      for_each_cell_block(plan, [&](index_t first, index_t last) {
        detail::CellEvaluator<E, G, BS, NQ> ev(tab, V.mesh(), V.dofmap(), {});
        std::vector<double> x(static_cast<std::size_t>(cells_per_batch) * nq * dim),
            w(static_cast<std::size_t>(cells_per_batch) * nq), fx(w.size());
        for (index_t c0 = first; c0 < last; c0 += cells_per_batch) {
          const index_t c1 = std::min<index_t>(last, c0 + cells_per_batch);
          for (index_t c = c0; c < c1; ++c) {
            const auto& cv = ev.reinit(c);
            const std::size_t k = static_cast<std::size_t>(c - c0) * nq;
            const int m = NQ > 0 ? NQ : nq;  // fixed-size copies where the rule size is known
            for (int j = 0; j < m * dim; ++j) x[k * dim + j] = cv.x[j];
            for (int j = 0; j < m; ++j) w[k + j] = cv.weight[j];
          }
          f(static_cast<std::size_t>(c1 - c0) * nq, x.data(), fx.data());
          for (index_t c = c0; c < c1; ++c) {
            const std::size_t k = static_cast<std::size_t>(c - c0) * nq;
            double be[n] = {};
            for (int q = 0; q < (NQ > 0 ? NQ : nq); ++q)
              for (int i = 0; i < n; ++i) be[i] += w[k + q] * fx[k + q] * phi[q * n + i];
            const index_t* nodes = cell_nodes + static_cast<std::size_t>(c) * n;
            for (int i = 0; i < n; ++i) out[nodes[i]] += be[i];
          }
        }
      });
    });
  });
}

}  // namespace

Assembler::Assembler(FunctionSpace V, const gpu::Executor& exec, Scatter scatter)
    : space_(std::move(V)), plan_(assembly::plan(space_, exec)), exec_(exec) {
  if (exec_.kind() != gpu::Executor::Kind::host)
    device_ = std::make_shared<const detail::DeviceEngine>(space_, plan_, exec_, scatter);
}

const detail::DeviceEngine& Assembler::require_device(const char* what) const {
  FEM_EXPECTS(device_ != nullptr, "{}: the assembler runs on the host executor (give it a device executor)",
              what);
  return *device_;
}

gpu::DeviceBuffer<double> Assembler::values_buffer() const {
  require_device("values_buffer");
  return gpu::DeviceBuffer<double>(exec_, pattern()->nnz());
}
void Assembler::matrix_into_device(const Diffusion& form, gpu::DeviceBuffer<double>& values) const {
  require_device("matrix_into_device")
      .matrix_into_device(form, quadrature_degree(2 * (space_.degree() - 1)), values);
}
void Assembler::matrix_into_device(const Mass& form, gpu::DeviceBuffer<double>& values) const {
  require_device("matrix_into_device")
      .matrix_into_device(form, quadrature_degree(2 * space_.degree()), values);
}
void Assembler::matrix_into_device(const Elasticity& form, gpu::DeviceBuffer<double>& values) const {
  require_device("matrix_into_device")
      .matrix_into_device(form, quadrature_degree(2 * (space_.degree() - 1)), values);
}
const DeviceMesh& Assembler::device_mesh() const { return require_device("device_mesh").mesh(); }
const DevicePlan& Assembler::device_plan() const { return require_device("device_plan").plan(); }

int Assembler::quadrature_degree(int integrand_degree) const {
  return std::max(0, integrand_degree) + (affine(space_) ? 0 : 2);
}

void Assembler::vector_into(const Source& form, std::span<double> b) const {
  FEM_EXPECTS(form.f != nullptr || form.batch != nullptr, "a source needs a function");
  FEM_EXPECTS(space_.components() == 1, "a scalar source on the vector space {}; use VectorSource",
              space_.name());
  // A pointwise f goes through the same loop, one call per point: the two give the same vector
  // bit for bit (two differently inlined loops may contract different products into FMAs).
  const int gdim = space_.mesh().gdim();
  const BatchFunction pointwise = [&](std::size_t count, const double* x, double* values) {
    for (std::size_t i = 0; i < count; ++i) values[i] = form.f(x + i * gdim);
  };
  assemble_source_batched(space_, *plan_, form.batch ? form.batch : pointwise,
                          quadrature_degree(space_.degree() + 2), b);
}

void Assembler::vector_into(const VectorSource& form, std::span<double> b) const {
  FEM_EXPECTS(form.f != nullptr, "a source needs a function");
  auto f = [&](const double* x, double* v) { form.f(x, v); };
  assemble_vector(space_, *plan_, kernels::Source<decltype(f)>{f}, quadrature_degree(space_.degree() + 2), b);
}

void Assembler::vector_into(const Neumann& form, std::span<double> b) const {
  assemble_neumann(space_, form, b);
}

}  // namespace fem::assembly
