// The C ABI of libfem_flow (fem/flow/c_api.h).
#include "fem/flow/c_api.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "fem/array.hpp"
#include "fem/assembly/detail/c_api.hpp"
#include "fem/detail/c_api_guard.hpp"
#include "fem/flow/flow.hpp"
#include "fem/store.hpp"

// The handle: the space, the library's stepper, and the host's values callback, called before
// each step (so that its failure leaves the state as it was) into `g`, which the stepper's own
// values function then copies.
struct fem_flow_stepper {
  std::shared_ptr<const fem::assembly::MixedSpace> W;
  fem::assembly::Flow flow;  // μ, ρ, convection: what the force is computed with
  fem_flow_values_fn values = nullptr;
  void* user = nullptr;
  std::shared_ptr<std::vector<double>> g;
  std::unique_ptr<fem::flow::ProjectionStepper> stepper;
};

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

// Strictly increasing indices below `limit` (`what` names the array and the range).
std::vector<fem::index_t> indices_of(const int64_t* p, int64_t count, int64_t limit, const char* what,
                                     const char* range, const char* name) {
  FEM_EXPECTS(count >= 0, "{}: {} count is {}", name, what, count);
  FEM_EXPECTS(count == 0 || p != nullptr, "{}: {} is a null pointer but its count is {}", name, what, count);
  std::vector<fem::index_t> out;
  out.reserve(static_cast<std::size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    FEM_EXPECTS(p[i] >= 0 && p[i] < limit, "{}: {}[{}] = {} is not one of the {} (0 .. {})", name, what, i,
                p[i], range, limit - 1);
    FEM_EXPECTS(i == 0 || p[i] > p[i - 1], "{}: {} must be strictly increasing ({}[{}] = {} after {})", name,
                what, what, i, p[i], p[i - 1]);
    out.push_back(static_cast<fem::index_t>(p[i]));
  }
  return out;
}

void put_i64(const std::string& key, const std::vector<fem::index_t>& v) {
  fem::store().put(key, fem::Array<std::int64_t>(std::vector<std::int64_t>(v.begin(), v.end())));
}

fem_flow_report report_of(const fem::flow::SteadyResult& r) {
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
  return out;
}

// The steady solve both entry points share: from the guess under `key` (else zero), the
// solution published under `key`.
void solve_steady(const std::shared_ptr<const fa::MixedSpace>& W, const fa::Flow& flow,
                  const fa::DirichletValues& bc, const fem_flow_options* options, const std::string& key,
                  fem_flow_report* report, const char* name) {
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
  if (report) *report = report_of(r);
}

std::array<double, 3> force_on(const fa::MixedSpace& W, const fa::Flow& flow, std::span<const double> w,
                               const int64_t* nodes, int64_t nnodes, std::span<const double> inertia,
                               const char* name) {
  const auto n = indices_of(nodes, nnodes, W.velocity().dofmap().num_nodes, "nodes", "velocity nodes", name);
  return fem::flow::force(W, flow, w, n, inertia);
}

// The host's values at t into s.g: its failure or a non-finite value is an error before the step.
void host_values(fem_flow_stepper& s, double t, const char* name) {
  if (s.values == nullptr) return;
  std::vector<double> g(s.g->size(), 0.0);
  const int r = s.values(t, g.data(), static_cast<int64_t>(g.size()), s.user);
  if (r != 0)
    throw fem::Error(fmt::format("{}: the velocity values callback returned {} at t = {}", name, r, t));
  for (std::size_t i = 0; i < g.size(); ++i)
    if (!std::isfinite(g[i]))
      throw fem::NumericalError(
          fmt::format("{}: the velocity values callback gave {} for value {} at t = {}", name, g[i], i, t));
  *s.g = std::move(g);
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
    solve_steady(W, flow, bc, options, key, report, name);
  });
}

int fem_flow_solve_steady_dofs(const char* mesh_key, const fem_flow_options* options, const int64_t* dofs,
                               const double* values, int64_t ndofs, const fem_function* body_force,
                               const char* out_key, fem_flow_report* report) {
  return guarded([&] {
    const char* name = "fem_flow_solve_steady_dofs";
    const std::string key(key_arg(out_key, "out_key"));
    fem::Store::validate_key(key);
    const auto W = space_of(mesh_key);
    fa::Flow flow = flow_of(options, name);
    flow.body_force = vector_of(body_force, W->dim(), "fem_flow_solve_steady_dofs: body_force");
    fa::DirichletValues bc;
    bc.dofs = indices_of(dofs, ndofs, W->pressure_offset(), "dofs", "velocity DOFs", name);
    FEM_EXPECTS(ndofs == 0 || values != nullptr, "{}: values is a null pointer", name);
    bc.values.assign(values, values + ndofs);
    fem::capi::require_finite(bc.values, fmt::format("{}: values", name));
    solve_steady(W, flow, bc, options, key, report, name);
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

int fem_flow_force_nodes(const char* mesh_key, const fem_flow_options* options, const char* w_key,
                         const int64_t* nodes, int64_t nnodes, double force[3]) {
  return guarded([&] {
    const char* name = "fem_flow_force_nodes";
    FEM_EXPECTS(force != nullptr, "{}: force is a null pointer", name);
    const auto W = space_of(mesh_key);
    const fa::Flow flow = flow_of(options, name);
    const std::string wk(key_arg(w_key, "w_key"));
    const auto w = state_of(wk.c_str(), static_cast<std::size_t>(W->num_dofs()), name);
    const auto f = force_on(*W, flow, w, nodes, nnodes, {}, name);
    for (int k = 0; k < 3; ++k) force[k] = f[static_cast<std::size_t>(k)];
  });
}

int fem_flow_nodes(const char* mesh_key, const char* coordinates_key, int64_t* count) {
  return guarded([&] {
    const std::string key(key_arg(coordinates_key, "coordinates_key"));
    fem::Store::validate_key(key);
    const auto W = space_of(mesh_key);
    const auto& d = W->velocity().dofmap();
    const auto gdim = static_cast<std::int64_t>(W->mesh().gdim());
    fem::store().put(key,
                     fem::Array<double>({static_cast<std::int64_t>(d.num_nodes), gdim},
                                        std::vector<double>(d.coordinates.begin(), d.coordinates.end())));
    if (count != nullptr) *count = d.num_nodes;
  });
}

int fem_flow_boundary_nodes(const char* mesh_key, const int32_t* tags, int32_t ntags, const char* nodes_key,
                            int64_t* count) {
  return guarded([&] {
    const char* name = "fem_flow_boundary_nodes";
    const std::string key(key_arg(nodes_key, "nodes_key"));
    fem::Store::validate_key(key);
    const auto W = space_of(mesh_key);
    const auto nodes =
        fem::flow::boundary_nodes(W->velocity(), fem::capi::facets_of(tags, ntags, true, name));
    put_i64(key, nodes);
    if (count != nullptr) *count = static_cast<int64_t>(nodes.size());
  });
}

int fem_flow_stepper_create(const char* name, const char* mesh_key, const fem_flow_options* options,
                            double dt, const int64_t* dofs, int64_t ndofs, fem_flow_values_fn values,
                            void* user, const int64_t* outflow, int64_t noutflow, const double* w0,
                            fem_flow_stepper** out) {
  return guarded([&] {
    const char* fn = "fem_flow_stepper_create";
    FEM_EXPECTS(out != nullptr, "{}: out is a null pointer", fn);
    const std::string prefix(key_arg(name, "name"));
    fem::Store::validate_key(prefix + "/pressure");
    auto s = std::make_unique<fem_flow_stepper>();
    s->W = space_of(mesh_key);
    s->flow = flow_of(options, fn);
    FEM_EXPECTS(options->symmetric_gradient == 0 && options->compressibility == 0,
                "{}: the projection scheme is for incompressible flow in the gradient form "
                "(symmetric_gradient {}, compressibility {})",
                fn, options->symmetric_gradient, options->compressibility);
    FEM_EXPECTS(std::isfinite(options->density) && options->density > 0, "{}: density {} must be positive",
                fn, options->density);
    FEM_EXPECTS(std::isfinite(dt) && dt > 0, "{}: dt is {}; a positive step", fn, dt);
    const fa::MixedSpace& W = *s->W;
    fem::flow::Projection p;
    p.name = prefix;
    p.W = s->W;
    p.viscosity = options->viscosity;
    p.density = options->density;
    p.convection = options->convection != 0;
    p.velocity.dofs = indices_of(dofs, ndofs, W.pressure_offset(), "dofs", "velocity DOFs", fn);
    p.pressure_dofs = indices_of(outflow, noutflow, W.num_pressure_dofs(), "outflow", "pressure DOFs", fn);
    s->values = values;
    s->user = user;
    s->g = std::make_shared<std::vector<double>>(p.velocity.dofs.size(), 0.0);
    p.velocity.values = [g = s->g](double, std::span<double> v) {
      std::copy(g->begin(), g->end(), v.begin());
    };
    std::vector<double> w(static_cast<std::size_t>(W.num_dofs()), 0.0);
    if (w0 != nullptr) {
      w.assign(w0, w0 + W.num_dofs());
      fem::capi::require_finite(w, fmt::format("{}: w0", fn));
    } else {
      host_values(*s, 0.0, fn);
      for (std::size_t i = 0; i < p.velocity.dofs.size(); ++i)
        w[static_cast<std::size_t>(p.velocity.dofs[i])] = (*s->g)[i];
    }
    s->stepper = std::make_unique<fem::flow::ProjectionStepper>(fem::store(), std::move(p), dt, std::move(w));
    *out = s.release();
  });
}

void fem_flow_stepper_destroy(fem_flow_stepper* stepper) { delete stepper; }

int fem_flow_stepper_step(fem_flow_stepper* stepper, int64_t count) {
  return guarded([&] {
    const char* fn = "fem_flow_stepper_step";
    FEM_EXPECTS(stepper != nullptr, "{}: stepper is a null pointer", fn);
    FEM_EXPECTS(count >= 1, "{}: count {} must be at least 1", fn, count);
    for (int64_t i = 0; i < count; ++i) {
      host_values(*stepper, stepper->stepper->t() + stepper->stepper->dt(), fn);
      stepper->stepper->step();
    }
  });
}

int fem_flow_stepper_state(const fem_flow_stepper* stepper, double* t, const double** w, int64_t* n) {
  return guarded([&] {
    FEM_EXPECTS(stepper != nullptr, "fem_flow_stepper_state: stepper is a null pointer");
    const auto x = stepper->stepper->w();
    if (t != nullptr) *t = stepper->stepper->t();
    if (w != nullptr) *w = x.data();
    if (n != nullptr) *n = static_cast<int64_t>(x.size());
  });
}

int fem_flow_stepper_publish(const fem_flow_stepper* stepper, const char* key) {
  return guarded([&] {
    FEM_EXPECTS(stepper != nullptr, "fem_flow_stepper_publish: stepper is a null pointer");
    const std::string k(key_arg(key, "key"));
    const auto x = stepper->stepper->w();
    fem::store().put(k, fem::Array<double>(std::vector<double>(x.begin(), x.end())));
  });
}

int fem_flow_stepper_report_get(const fem_flow_stepper* stepper, fem_flow_stepper_report* report) {
  return guarded([&] {
    FEM_EXPECTS(stepper != nullptr, "fem_flow_stepper_report_get: stepper is a null pointer");
    FEM_EXPECTS(report != nullptr, "fem_flow_stepper_report_get: report is a null pointer");
    const auto& s = *stepper->stepper;
    fem_flow_stepper_report r{};
    r.t = s.t();
    r.dt = s.dt();
    r.steps = s.steps();
    r.matrices = s.matrices();
    r.dofs = static_cast<int64_t>(s.w().size());
    *report = r;
  });
}

int fem_flow_stepper_force(const fem_flow_stepper* stepper, const int64_t* nodes, int64_t nnodes,
                           double force[3]) {
  return guarded([&] {
    const char* fn = "fem_flow_stepper_force";
    FEM_EXPECTS(stepper != nullptr, "{}: stepper is a null pointer", fn);
    FEM_EXPECTS(force != nullptr, "{}: force is a null pointer", fn);
    const auto& s = *stepper->stepper;
    const auto f = force_on(*stepper->W, stepper->flow, s.w(), nodes, nnodes, s.inertia(), fn);
    for (int k = 0; k < 3; ++k) force[k] = f[static_cast<std::size_t>(k)];
  });
}

}  // extern "C"
