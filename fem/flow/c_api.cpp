// The C ABI of libfem_flow (fem/flow/c_api.h).
#include "fem/flow/c_api.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "fem/array.hpp"
#include "fem/assembly/detail/c_api.hpp"
#include "fem/detail/c_api_guard.hpp"
#include "fem/flow/flow.hpp"
#include "fem/store.hpp"

namespace {

using fem::capi::guarded;
using fem::capi::key_arg;
namespace fa = fem::assembly;

fa::Flow flow_of(const fem_flow_options* o, const char* name) {
  FEM_EXPECTS(o != nullptr, "{}: options is a null pointer (fem_flow_options_default)", name);
  FEM_EXPECTS(std::isfinite(o->viscosity) && o->viscosity > 0, "{}: viscosity {} must be positive", name,
              o->viscosity);
  FEM_EXPECTS(std::isfinite(o->compressibility) && o->compressibility >= 0,
              "{}: compressibility {} is negative", name, o->compressibility);
  fa::Flow f =
      o->convection ? fa::Flow::navier_stokes(o->viscosity, o->density) : fa::Flow::stokes(o->viscosity);
  f.density = o->density;
  f.symmetric_gradient = o->symmetric_gradient != 0;
  f.compressibility = o->compressibility;
  return f;
}

std::shared_ptr<const fa::MixedSpace> space_of(const char* mesh_key) {
  return std::make_shared<const fa::MixedSpace>(std::string(key_arg(mesh_key, "mesh_key")));
}

fa::VectorFunction vector_of(const fem_function* f, int dim, const char* what) {
  if (f == nullptr) return nullptr;
  std::vector<std::shared_ptr<const fem::capi::Callback>> c;
  for (int k = 0; k < dim; ++k) c.push_back(fem::capi::callback(&f[k], 0.0, fmt::format("{}[{}]", what, k)));
  return [c, dim](const double* x, double* v) {
    for (int k = 0; k < dim; ++k) v[k] = fem::capi::Callback::point(c[static_cast<std::size_t>(k)])(x);
  };
}

std::vector<double> state_of(const char* key, std::size_t n, const char* name) {
  std::vector<double> w(n, 0.0);
  if (key == nullptr) return w;
  if (const auto a = fem::store().find<fem::Array<double>>(key)) {
    FEM_EXPECTS(a->ndim() == 1 && a->size() == n, "{}: the state under '{}' has shape {}, the space {} DOFs",
                name, key, fem::shape_string(a->shape()), n);
    w = a->vector();
  } else {
    FEM_EXPECTS(false, "{}: no state under '{}'", name, key);
  }
  return w;
}

}  // namespace

extern "C" {

int fem_flow_options_default(fem_flow_options* out) {
  return guarded([&] {
    FEM_EXPECTS(out != nullptr, "fem_flow_options_default: out is a null pointer");
    fem_flow_options o{};
    o.viscosity = 1;
    o.density = 1;
    o.picard_steps = 3;
    o.max_iterations = 30;
    o.atol = o.rtol = 1e-10;
    *out = o;
  });
}

int fem_flow_sizes_get(const char* mesh_key, fem_flow_sizes* out) {
  return guarded([&] {
    FEM_EXPECTS(out != nullptr, "fem_flow_sizes_get: out is a null pointer");
    const auto W = space_of(mesh_key);
    *out = {W->dim(), W->pressure_offset(), W->num_pressure_dofs(), W->num_dofs()};
  });
}

int fem_flow_assemble(const char* mesh_key, const fem_flow_options* options, const fem_function* body_force,
                      const char* w_key, const char* J_key, const char* F_key) {
  return guarded([&] {
    const char* name = "fem_flow_assemble";
    const auto W = space_of(mesh_key);
    fa::Flow flow = flow_of(options, name);
    flow.body_force = vector_of(body_force, W->dim(), "fem_flow_assemble: body_force");
    const auto w = state_of(w_key, static_cast<std::size_t>(W->num_dofs()), name);
    std::vector<double> values(J_key ? static_cast<std::size_t>(W->pattern()->nnz()) : 0),
        F(F_key ? w.size() : 0, 0.0);
    fa::flow_into(*W, flow, w, values, F);
    fem::capi::require_finite(values, fmt::format("{}: the Jacobian", name));
    fem::capi::require_finite(F, fmt::format("{}: the residual", name));
    if (J_key) fem::store().put(J_key, fem::CsrMatrix(W->pattern(), std::move(values)));
    if (F_key) fem::store().put(F_key, fem::Array<double>(std::move(F)));
  });
}

int fem_flow_solve_steady(const char* mesh_key, const fem_flow_options* options,
                          const fem_flow_velocity* velocity, int32_t nvelocity,
                          const fem_function* body_force, const char* out_key, fem_flow_report* report) {
  return guarded([&] {
    const char* name = "fem_flow_solve_steady";
    const std::string key(key_arg(out_key, "out_key"));
    const auto W = space_of(mesh_key);
    fa::Flow flow = flow_of(options, name);
    const int dim = W->dim();
    flow.body_force = vector_of(body_force, dim, "fem_flow_solve_steady: body_force");
    FEM_EXPECTS(nvelocity >= 0 && (nvelocity == 0 || velocity != nullptr), "{}: {} velocity conditions at {}",
                name, nvelocity, static_cast<const void*>(velocity));
    std::vector<fa::Dirichlet> conditions;
    for (int32_t i = 0; i < nvelocity; ++i) {
      const auto where = fem::capi::facets_of(velocity[i].tags, velocity[i].ntags, true, name);
      for (int k = 0; k < dim; ++k)
        if (const fem_function* g = velocity[i].components[k])
          conditions.push_back({where,
                                fem::capi::Callback::point(
                                    fem::capi::callback(g, 0.0, fmt::format("{}: velocity {}", name, i))),
                                k});
    }
    const auto bc = fa::dirichlet_values(W->velocity(), conditions);
    auto& store = fem::store();
    std::vector<double> w(static_cast<std::size_t>(W->num_dofs()), 0.0);
    if (store.contains(key)) w = state_of(key.c_str(), w.size(), name);
    fem::flow::SteadyOptions so;
    so.picard_steps = options->picard_steps;
    so.newton.max_iterations = options->max_iterations;
    so.newton.atol = options->atol;
    so.newton.rtol = options->rtol;
    so.newton.linear.backend = fem::solve::Backend::umfpack;
    const auto r = fem::flow::solve_steady(W, flow, bc, options->pressure_null_space != 0, w, so, key, store);
    store.put(key, fem::Array<double>(std::move(w)));
    if (report) {
      fem_flow_report out{};
      out.converged = r.converged() ? 1 : 0;
      out.picard_iterations = r.picard.iterations;
      out.newton_iterations = r.newton.iterations;
      out.jacobians = r.picard.jacobian_refreshes + r.newton.jacobian_refreshes;
      out.symbolic_analyses = r.picard.symbolic_analyses + r.newton.symbolic_analyses;
      out.initial_residual_norm = r.newton.initial_residual_norm;
      out.residual_norm = r.newton.residual_norm;
      const auto reason = fem::newton::to_string(r.newton.reason);
      std::snprintf(out.reason, sizeof out.reason, "%.*s", static_cast<int>(reason.size()), reason.data());
      *report = out;
    }
  });
}

int fem_flow_force(const char* mesh_key, const fem_flow_options* options, const char* w_key,
                   const int32_t* tags, int32_t ntags, double force[3]) {
  return guarded([&] {
    const char* name = "fem_flow_force";
    FEM_EXPECTS(force != nullptr, "{}: force is a null pointer", name);
    FEM_EXPECTS(ntags > 0 && tags != nullptr, "{}: give the boundary's facet tags", name);
    const auto W = space_of(mesh_key);
    const std::string wk(key_arg(w_key, "w_key"));
    const auto w = state_of(wk.c_str(), static_cast<std::size_t>(W->num_dofs()), name);
    const auto nodes = fem::flow::boundary_nodes(W->velocity(), std::vector<int>(tags, tags + ntags));
    const auto f = fem::flow::force(*W, flow_of(options, name), w, nodes);
    for (int k = 0; k < 3; ++k) force[k] = f[static_cast<std::size_t>(k)];
  });
}

}  // extern "C"
