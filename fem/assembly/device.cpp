// The device assembler's host side: uploads cached in the store, coefficients turned into tag
// tables, the tabulation uploaded once per rule, and the launch (HostLaunch here for the host
// twin and the debug device; CudaLaunch in device_cuda.cu).
#include "fem/assembly/device.hpp"

#include <algorithm>
#include <bit>
#include <numeric>
#include <tuple>

#include "fem/assembly/detail/device_impl.hpp"
#include "launch_host.hpp"

namespace fem::assembly {

using detail::DeviceForm;
using detail::DeviceJob;
using detail::TagCoefficient;

std::string executor_key(const gpu::Executor& exec) {
  switch (exec.kind()) {
    case gpu::Executor::Kind::host:
      return "host";
    case gpu::Executor::Kind::debug_device:
      return "debug-device";
    case gpu::Executor::Kind::cuda:
      break;
  }
  // The context's address tells two devices of the same model apart (and injected contexts). It
  // cannot be reused by another context while an entry keyed with it exists: the entry's device
  // buffers hold a reference to their context.
  std::string key = "cuda-";
  for (char ch : exec.context().properties().name)
    key += (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ? ch : '-';
  return fmt::format("{}-{}", key, static_cast<const void*>(exec.context_ptr().get()));
}

namespace {

template <class T>
gpu::DeviceBuffer<T> upload(const gpu::Executor& exec, std::span<const T> host) {
  gpu::DeviceBuffer<T> buffer(exec, host.size());
  buffer.upload(host);
  return buffer;
}

// Colours of cells that share no node: greedy first fit in cell order, 64 colours per pass over
// the cells (a bit mask of the colours used at each node); cells by index within a colour.
// Returns the cells in colour order and the colours' offsets.
std::pair<std::vector<index_t>, std::vector<index_t>> colour_cells(const Mesh& mesh) {
  const auto nc = static_cast<std::size_t>(mesh.num_cells());
  const int npc = mesh.nodes_per_cell();
  const auto cells = mesh.cells();
  std::vector<int> colour(nc, -1);
  std::vector<std::uint64_t> used(static_cast<std::size_t>(mesh.num_nodes()));
  int colours = 0;
  for (std::size_t left = nc, base = 0; left > 0; base += 64) {
    std::fill(used.begin(), used.end(), 0);
    for (std::size_t c = 0; c < nc; ++c) {
      if (colour[c] >= 0) continue;
      std::uint64_t taken = 0;
      for (int g = 0; g < npc; ++g) taken |= used[static_cast<std::size_t>(cells[c * npc + g])];
      if (taken == ~std::uint64_t{0}) continue;  // the next pass's colours
      const int k = std::countr_one(taken);
      colour[c] = static_cast<int>(base) + k;
      colours = std::max(colours, colour[c] + 1);
      --left;
      for (int g = 0; g < npc; ++g)
        used[static_cast<std::size_t>(cells[c * npc + g])] |= std::uint64_t{1} << k;
    }
  }
  std::vector<index_t> offsets(static_cast<std::size_t>(colours) + 1, 0), order(nc);
  for (std::size_t c = 0; c < nc; ++c) ++offsets[static_cast<std::size_t>(colour[c]) + 1];
  std::partial_sum(offsets.begin(), offsets.end(), offsets.begin());
  std::vector<index_t> next(offsets.begin(), offsets.end() - 1);
  for (std::size_t c = 0; c < nc; ++c)
    order[static_cast<std::size_t>(next[static_cast<std::size_t>(colour[c])]++)] = static_cast<index_t>(c);
  offsets.erase(std::unique(offsets.begin(), offsets.end()), offsets.end());  // no empty colours
  return {std::move(order), std::move(offsets)};
}

// Per-cell arrays in colour order, entry-major: out[k · nc + p] = in[order[p] · width + k].
template <class T>
std::vector<T> by_position(std::span<const T> in, int width, std::span<const index_t> order) {
  const std::size_t nc = order.size();
  std::vector<T> out(in.size());
  for (std::size_t p = 0; p < nc; ++p) {
    const T* row = in.data() + static_cast<std::size_t>(order[p]) * width;
    for (int k = 0; k < width; ++k) out[static_cast<std::size_t>(k) * nc + p] = row[k];
  }
  return out;
}

DeviceMesh upload_mesh(const Mesh& mesh, const gpu::Executor& exec) {
  FEM_EXPECTS(mesh.gdim() == mesh.tdim(),
              "device assembly needs cells of the mesh's dimension: {} cells in {}D", mesh.cell_info().name,
              mesh.gdim());
  DeviceMesh d;
  d.num_cells = mesh.num_cells();
  d.num_nodes = mesh.num_nodes();
  d.nodes_per_cell = mesh.nodes_per_cell();
  d.dim = mesh.gdim();
  d.where = exec.separate_memory() ? Residency::device : Residency::host;
  std::tie(d.order, d.colour_offsets) = colour_cells(mesh);
  d.coords = upload(exec, mesh.coords());
  const auto cells = by_position(mesh.cells(), d.nodes_per_cell, std::span<const index_t>(d.order));
  d.cells = upload(exec, std::span<const index_t>(cells));
  d.cell_ids = upload(exec, std::span<const index_t>(d.order));
  std::vector<int> zeros;
  std::span<const int> tags = mesh.cell_tags();
  if (tags.size() != static_cast<std::size_t>(d.num_cells)) tags = zeros = std::vector<int>(d.num_cells, 0);
  const auto tags_by_position = by_position(tags, 1, std::span<const index_t>(d.order));
  d.tags = upload(exec, std::span<const int>(tags_by_position));
  d.distinct_tags.assign(tags.begin(), tags.end());
  std::sort(d.distinct_tags.begin(), d.distinct_tags.end());
  d.distinct_tags.erase(std::unique(d.distinct_tags.begin(), d.distinct_tags.end()), d.distinct_tags.end());
  exec.context().synchronize();  // the host arrays may go once the entry is published
  return d;
}

DevicePlan upload_plan(const AssemblyPlan& plan, const DeviceMesh& mesh, const gpu::Executor& exec) {
  DevicePlan d;
  d.dofs_per_cell = plan.connectivity.dofs_per_cell;
  const auto slots = by_position(std::span<const index_t>(plan.connectivity.element_slots),
                                 d.dofs_per_cell * d.dofs_per_cell, std::span<const index_t>(mesh.order));
  d.element_slots = upload(exec, std::span<const index_t>(slots));
  d.nnz = plan.pattern().nnz();
  d.where = exec.separate_memory() ? Residency::device : Residency::host;
  exec.context().synchronize();
  return d;
}

// A form's coefficient as a tag table over the tags present in the mesh.
TagCoefficient tag_coefficient(const Coefficient& given, const DeviceMesh& mesh, const Mesh& host_mesh,
                               const char* what) {
  FEM_EXPECTS(given.kind() == Coefficient::Kind::constant || given.kind() == Coefficient::Kind::per_tag,
              "device assembly takes constant or per-tag coefficients; the {} is per cell or a function "
              "(assemble on the host executor)",
              what);
  const Coefficient c = given.resolved(host_mesh, what);
  TagCoefficient t;
  if (c.kind() == Coefficient::Kind::constant) {
    t.otherwise = c(0, 0, nullptr);
    return t;
  }
  FEM_EXPECTS(mesh.distinct_tags.size() <= static_cast<std::size_t>(TagCoefficient::max_tags),
              "device assembly: the mesh has {} cell tags, at most {} are supported",
              mesh.distinct_tags.size(), TagCoefficient::max_tags);
  for (int tag : mesh.distinct_tags) {
    t.tags[t.num_tags] = tag;
    t.values[t.num_tags++] = c(0, tag, nullptr);
  }
  return t;
}

// Tabulation of the P1/Q1 element E at a rule, packed as device_impl.hpp reads it.
template <class E>
std::vector<double> pack_tabulation(const Quadrature& q) {
  const detail::Tabulation<E, E> tab(q);
  std::vector<double> out;
  for (const auto* v : {&tab.w, &tab.phi, &tab.dphi, &tab.psi, &tab.dpsi})
    out.insert(out.end(), v->begin(), v->end());
  return out;
}

bool supported_cell(CellType c) {
  return c == CellType::tri3 || c == CellType::tet4 || c == CellType::quad4 || c == CellType::hex8;
}

}  // namespace

std::shared_ptr<const DeviceMesh> device_mesh(const FunctionSpace& V, const gpu::Executor& exec) {
  auto compute = [&] {
    if (V.store()) V.store()->count("assembly.device_mesh_uploads");
    return upload_mesh(V.mesh(), exec);
  };
  if (V.store() == nullptr) return std::make_shared<const DeviceMesh>(compute());
  return V.store()->get_or_compute<DeviceMesh>(fmt::format("{}#device/{}", V.mesh_key(), executor_key(exec)),
                                               {{V.mesh_key(), V.mesh_version()}}, compute);
}

std::shared_ptr<const DevicePlan> device_plan(const FunctionSpace& V, const AssemblyPlan& plan,
                                              const DeviceMesh& mesh, const gpu::Executor& exec) {
  auto compute = [&] {
    if (V.store()) V.store()->count("assembly.device_plan_uploads");
    return upload_plan(plan, mesh, exec);
  };
  if (V.store() == nullptr) return std::make_shared<const DevicePlan>(compute());
  return V.store()->get_or_compute<DevicePlan>(
      fmt::format("{}#device-plan/{}/{}", V.mesh_key(), V.name(), executor_key(exec)),
      {{V.mesh_key(), V.mesh_version()}}, compute);
}

namespace detail {

DeviceEngine::DeviceEngine(const FunctionSpace& V, std::shared_ptr<const AssemblyPlan> plan,
                           gpu::Executor exec, Assembler::Scatter scatter)
    : space_(V), host_plan_(std::move(plan)), exec_(std::move(exec)), scatter_(scatter) {}

void DeviceEngine::upload_once() const {
  std::call_once(uploaded_, [&] {
    FEM_EXPECTS(space_.degree() == 1 && supported_cell(space_.mesh().cell_type()),
                "device assembly ({}) covers P1 on triangles and tetrahedra and Q1 on quadrilaterals and "
                "hexahedra, not {} on {} cells (assemble on the host executor)",
                executor_key(exec_), space_.name(), space_.mesh().cell_info().name);
    auto mesh = device_mesh(space_, exec_);
    plan_ = device_plan(space_, *host_plan_, *mesh, exec_);
    bad_cell_ = gpu::DeviceBuffer<int>(exec_, 1);
    bad_cell_host_ = gpu::PinnedBuffer<int>(exec_, 1);
    mesh_ = std::move(mesh);
  });
}

const DeviceMesh& DeviceEngine::mesh() const {
  upload_once();
  return *mesh_;
}

const DevicePlan& DeviceEngine::plan() const {
  upload_once();
  return *plan_;
}

gpu::DeviceBuffer<double>& DeviceEngine::scratch() const {
  const std::size_t nnz = host_plan_->pattern().nnz();
  if (scratch_.size() != nnz) scratch_ = gpu::DeviceBuffer<double>(exec_, nnz);
  return scratch_;
}

void DeviceEngine::download(const gpu::DeviceBuffer<double>& device, std::span<double> values) const {
  if (!exec_.separate_memory()) {
    device.download(values);
    exec_.context().synchronize();
    return;
  }
  if (staging_.size() != values.size()) staging_ = gpu::PinnedBuffer<double>(exec_, values.size());
  device.download(staging_.span());
  exec_.context().synchronize();
  std::copy(staging_.data(), staging_.data() + values.size(), values.begin());
}

const double* DeviceEngine::tabulation(int quadrature_degree, int* nq) const {
  std::lock_guard lock(mutex_);
  auto it = tabs_.find(quadrature_degree);
  if (it == tabs_.end()) {
    const Quadrature& q = quadrature(space_.element(), quadrature_degree);
    std::vector<double> packed;
    switch (space_.element()) {
      case CellType::tri3:
        packed = pack_tabulation<Lagrange<CellType::tri3>>(q);
        break;
      case CellType::tet4:
        packed = pack_tabulation<Lagrange<CellType::tet4>>(q);
        break;
      case CellType::quad4:
        packed = pack_tabulation<Lagrange<CellType::quad4>>(q);
        break;
      default:
        packed = pack_tabulation<Lagrange<CellType::hex8>>(q);
        break;
    }
    auto buffer = std::make_shared<gpu::DeviceBuffer<double>>(upload(exec_, std::span<const double>(packed)));
    exec_.context().synchronize();
    it = tabs_.emplace(quadrature_degree, std::make_pair(q.size(), std::move(buffer))).first;
  }
  *nq = it->second.first;
  return it->second.second->data();
}

struct DeviceEngine::Run {
  DeviceForm form;
  int quadrature_degree;
  TagCoefficient c0, c1;
  bool plane_stress = false;
};

void DeviceEngine::run(const Run& r, gpu::DeviceBuffer<double>& values) const {
  upload_once();
  const std::size_t nnz = host_plan_->pattern().nnz();
  FEM_EXPECTS(values.size() == nnz, "device matrix values: {} given, the pattern has {} nonzeros",
              values.size(), nnz);
  DeviceJob job;
  job.cell = space_.element();
  job.bs = space_.components();
  job.form = r.form;
  job.c0 = r.c0;
  job.c1 = r.c1;
  job.plane_stress = r.plane_stress;
  job.num_cells = mesh_->num_cells;
  job.coords = mesh_->coords.data();
  job.cells = mesh_->cells.data();
  job.cell_ids = mesh_->cell_ids.data();
  job.tags = mesh_->tags.data();
  job.slots = plan_->element_slots.data();
  job.colour_offsets = mesh_->colour_offsets.data();
  job.num_colours = mesh_->num_colours();
  job.atomic = scatter_ == Assembler::Scatter::atomic;
  job.tab = tabulation(r.quadrature_degree, &job.nq);
  job.values = values.data();
  // One launch at a time per assembler: they share the flag.
  std::lock_guard lock(run_mutex_);
  constexpr int none = 0x7f7f7f7f;  // what fill_bytes(0x7f) leaves: larger than any cell index
  job.bad_cell = bad_cell_.data();
  gpu::GpuContext& ctx = exec_.context();
  ctx.fill_bytes(bad_cell_.data(), 0x7f, sizeof(int));
  ctx.fill_bytes(values.data(), 0, values.bytes());
  const bool launched = exec_.kind() == gpu::Executor::Kind::cuda
                            ? detail::launch_device_assembly_cuda(exec_, job)
                            : detail::launch_device_assembly<gpu::detail::HostLaunch>(exec_, job);
  FEM_EXPECTS(launched, "device assembly: no kernel for {} with {} components and a {}-point rule",
              space_.name(), job.bs, job.nq);
  bad_cell_.download(bad_cell_host_.span());
  ctx.synchronize();
  const int bad_cell = bad_cell_host_.data()[0];
  if (bad_cell != none) {
    // Recompute the offending determinant on the host for the message (the same cell_geometry).
    const Mesh& m = space_.mesh();
    double det = 0;
    auto check = [&]<class E>() {
      constexpr int n = E::n, dim = E::dim;
      double X[n][dim];
      for (int g = 0; g < n; ++g)
        for (int d = 0; d < dim; ++d)
          X[g][d] = m.coords()[static_cast<std::size_t>(m.cell(bad_cell)[g]) * dim + d];
      const Tabulation<E, E> tab(quadrature(space_.element(), r.quadrature_degree));
      std::vector<double> weight(tab.nq), grad(tab.nq * n * dim);
      cell_geometry<E, E, 0>(X, tab.nq, tab.w.data(), tab.dphi.data(), tab.dpsi.data(), weight.data(),
                             grad.data(), det);
    };
    switch (space_.element()) {
      case CellType::tri3:
        check.template operator()<Lagrange<CellType::tri3>>();
        break;
      case CellType::tet4:
        check.template operator()<Lagrange<CellType::tet4>>();
        break;
      case CellType::quad4:
        check.template operator()<Lagrange<CellType::quad4>>();
        break;
      default:
        check.template operator()<Lagrange<CellType::hex8>>();
        break;
    }
    throw_inverted_cell(m, bad_cell, det);
  }
}

void DeviceEngine::matrix_into_device(const Diffusion& form, int degree,
                                      gpu::DeviceBuffer<double>& values) const {
  upload_once();
  run({DeviceForm::diffusion,
       degree,
       tag_coefficient(form.k, *mesh_, space_.mesh(), "diffusion coefficient"),
       {}},
      values);
}

void DeviceEngine::matrix_into_device(const Mass& form, int degree, gpu::DeviceBuffer<double>& values) const {
  upload_once();
  run({DeviceForm::mass, degree, tag_coefficient(form.rho, *mesh_, space_.mesh(), "mass density"), {}},
      values);
}

void DeviceEngine::matrix_into_device(const Elasticity& form, int degree,
                                      gpu::DeviceBuffer<double>& values) const {
  FEM_EXPECTS(space_.components() == space_.mesh().tdim(),
              "elasticity needs one component per dimension: space {} on a {}D mesh", space_.name(),
              space_.mesh().tdim());
  upload_once();
  const Mesh& mesh = space_.mesh();
  run({DeviceForm::elasticity, degree, tag_coefficient(form.young, *mesh_, mesh, "Young's modulus"),
       tag_coefficient(form.poisson, *mesh_, mesh, "Poisson's ratio"),
       form.plane == Elasticity::Plane::stress},
      values);
}

}  // namespace detail

#if !defined(FEM_WITH_CUDA)
bool detail::launch_device_assembly_cuda(const gpu::Executor&, const DeviceJob&) {
  throw NotCompiled("CUDA", "device assembly on a CUDA executor");
}
#endif

}  // namespace fem::assembly
