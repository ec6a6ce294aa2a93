// The C ABI of libfem_time (fem/time/c_api.h): steppers behind an opaque handle, C callbacks as
// the load and the Dirichlet values, exceptions turned into status codes by guarded().
#include "fem/time/c_api.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "fem/array.hpp"
#include "fem/detail/c_api_guard.hpp"
#include "fem/store.hpp"
#include "fem/time/time.hpp"

namespace ft = fem::time;

struct fem_time_stepper {
  double dt = 0;  // the options' step (a second-order stepper's fixed one)
  std::unique_ptr<ft::FirstOrderStepper> first;
  std::unique_ptr<ft::SecondOrderStepper> second;
};

namespace {

using fem::capi::guarded;
using fem::capi::key_arg;
namespace solve = fem::solve;

// A callback's nonzero return: the step stops (FEM_ERR_INTERNAL through guarded()).
class CallbackFailed : public fem::Error {
 public:
  using fem::Error::Error;
};

solve::Options linear_of(const fem_solve_options& o, const char* name) {
  solve::Options s;
  FEM_EXPECTS(o.backend >= FEM_BACKEND_AUTOMATIC && o.backend <= FEM_BACKEND_LU,
              "{}: unknown linear.backend {} (FEM_BACKEND_AUTOMATIC .. FEM_BACKEND_LU)", name, o.backend);
  FEM_EXPECTS(o.ordering >= FEM_ORDERING_AUTOMATIC && o.ordering <= FEM_ORDERING_NATURAL,
              "{}: unknown linear.ordering {} (FEM_ORDERING_AUTOMATIC .. FEM_ORDERING_NATURAL)", name,
              o.ordering);
  FEM_EXPECTS(o.refinement_steps >= 0 && o.refinement_steps <= 100,
              "{}: linear.refinement_steps {} is outside 0..100", name, o.refinement_steps);
  FEM_EXPECTS(o.max_relative_residual >= 0, "{}: linear.max_relative_residual {} is not a tolerance", name,
              o.max_relative_residual);
  s.backend = static_cast<solve::Backend>(o.backend);
  s.ordering = static_cast<solve::Ordering>(o.ordering);
  if (!solve::available(s.backend))
    throw fem::NotCompiled("SuiteSparse", fmt::format("the {} backend", solve::to_string(s.backend)));
  if (!solve::available(s.ordering))
    throw fem::NotCompiled("METIS", fmt::format("the {} ordering", solve::to_string(s.ordering)));
  s.refinement_steps = o.refinement_steps;
  if (o.max_relative_residual > 0) s.max_relative_residual = o.max_relative_residual;
  return s;
}

ft::Scheme scheme_of(int32_t scheme, const char* name) {
  FEM_EXPECTS(scheme >= FEM_TIME_BACKWARD_EULER && scheme <= FEM_TIME_GENERALIZED_ALPHA,
              "{}: unknown scheme {} (FEM_TIME_BACKWARD_EULER .. FEM_TIME_GENERALIZED_ALPHA)", name, scheme);
  return static_cast<ft::Scheme>(scheme);
}

std::vector<fem::index_t> dofs_of(const int64_t* dofs, int64_t count, int64_t n, const char* what,
                                  const char* name) {
  FEM_EXPECTS(count >= 0, "{}: {} count is {}", name, what, count);
  FEM_EXPECTS(count == 0 || dofs != nullptr, "{}: {} is a null pointer", name, what);
  std::vector<fem::index_t> out;
  out.reserve(static_cast<std::size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    FEM_EXPECTS(dofs[i] >= 0 && dofs[i] < n, "{}: {}[{}] = {} is not an unknown of 0..{}", name, what, i,
                dofs[i], n - 1);
    FEM_EXPECTS(i == 0 || dofs[i] > dofs[i - 1], "{}: {} must be strictly increasing ({}[{}] = {} after {})",
                name, what, what, i, dofs[i], dofs[i - 1]);
    out.push_back(static_cast<fem::index_t>(dofs[i]));
  }
  return out;
}

std::vector<double> vector_of(const double* x, int64_t n, const char* what, const char* name) {
  FEM_EXPECTS(n >= 0, "{}: n is {}", name, n);
  FEM_EXPECTS(n == 0 || x != nullptr, "{}: {} is a null pointer", name, what);
  return std::vector<double>(x, x + n);
}

ft::Load load_of(fem_time_load_fn load, void* user) {
  if (load == nullptr) return {};
  return [load, user](double t, std::span<double> f) {
    const int r = load(t, f.data(), static_cast<int64_t>(f.size()), user);
    if (r != 0) throw CallbackFailed(fmt::format("the load callback returned {} at t = {}", r, t));
  };
}

template <class F>
int with_stepper(fem_time_stepper* s, const char* name, F&& f) {
  return guarded([&] {
    FEM_EXPECTS(s != nullptr, "{}: stepper is a null pointer", name);
    f(*s);
  });
}

std::span<const double> u_of(const fem_time_stepper& s) { return s.first ? s.first->u() : s.second->u(); }
double t_of(const fem_time_stepper& s) { return s.first ? s.first->t() : s.second->t(); }

}  // namespace

extern "C" {

int fem_time_options_default(fem_time_options* out) {
  return guarded([&] {
    FEM_EXPECTS(out != nullptr, "fem_time_options_default: out is a null pointer");
    const ft::FirstOrderOptions f;
    const ft::SecondOrderOptions s;
    const ft::SecondOrder p;
    fem_time_options o{};
    o.scheme = static_cast<int32_t>(f.scheme);
    o.dt = f.dt;
    o.t0 = 0;
    o.theta = f.theta;
    o.rannacher_steps = f.rannacher_steps;
    o.tolerance = f.tolerance;
    o.absolute_tolerance = f.absolute_tolerance;
    o.dt_min = f.dt_min;
    o.dt_max = f.dt_max;
    o.beta = s.beta;
    o.gamma = s.gamma;
    o.rho_inf = s.rho_inf;
    o.rayleigh_mass = p.rayleigh_mass;
    o.rayleigh_stiffness = p.rayleigh_stiffness;
    o.linear = fem_solve_options{};
    *out = o;
  });
}

int fem_time_first_order_create(const char* name, const char* M_key, const char* K_key,
                                const fem_time_options* options, const double* u0, int64_t n,
                                const int64_t* dirichlet_dofs, int64_t ndofs, fem_time_load_fn load,
                                fem_time_values_fn values, void* user, fem_time_stepper** out) {
  return guarded([&] {
    const char* fn = "fem_time_first_order_create";
    FEM_EXPECTS(out != nullptr, "{}: out is a null pointer", fn);
    FEM_EXPECTS(options != nullptr, "{}: options is a null pointer (fem_time_options_default, then dt)", fn);
    ft::FirstOrder p;
    p.name = key_arg(name, "name");
    p.M = key_arg(M_key, "M_key");
    p.K = key_arg(K_key, "K_key");
    p.load = load_of(load, user);
    p.dirichlet.dofs = dofs_of(dirichlet_dofs, ndofs, n, "dirichlet_dofs", fn);
    if (values != nullptr)
      p.dirichlet.values = [values, user](double t, std::span<double> g) {
        const int r = values(t, g.data(), static_cast<int64_t>(g.size()), user);
        if (r != 0)
          throw CallbackFailed(fmt::format("the Dirichlet values callback returned {} at t = {}", r, t));
      };
    ft::FirstOrderOptions o;
    o.scheme = scheme_of(options->scheme, fn);
    o.dt = options->dt;
    o.theta = options->theta;
    o.rannacher_steps = options->rannacher_steps;
    o.tolerance = options->tolerance;
    o.absolute_tolerance = options->absolute_tolerance;
    o.dt_min = options->dt_min;
    o.dt_max = options->dt_max;
    o.linear = linear_of(options->linear, fn);
    FEM_EXPECTS(std::isfinite(options->t0), "{}: t0 is {}", fn, options->t0);
    auto s = std::make_unique<fem_time_stepper>();
    s->dt = o.dt;
    s->first = std::make_unique<ft::FirstOrderStepper>(fem::store(), std::move(p), o,
                                                       vector_of(u0, n, "u0", fn), options->t0);
    *out = s.release();
  });
}

int fem_time_set_stiffness(fem_time_stepper* stepper, fem_time_stiffness_fn stiffness, void* user) {
  return with_stepper(stepper, "fem_time_set_stiffness", [&](fem_time_stepper& s) {
    FEM_EXPECTS(s.first != nullptr, "fem_time_set_stiffness: a second-order stepper's K is constant");
    if (stiffness == nullptr) {
      s.first->set_stiffness({});
      return;
    }
    s.first->set_stiffness([stiffness, user](double t, std::span<double> v) {
      const int r = stiffness(t, v.data(), static_cast<int64_t>(v.size()), user);
      if (r != 0) throw CallbackFailed(fmt::format("the stiffness callback returned {} at t = {}", r, t));
    });
  });
}

int fem_time_set_nonlinear(fem_time_stepper* stepper, fem_time_residual_fn residual,
                           fem_time_jacobian_fn jacobian, void* user) {
  return with_stepper(stepper, "fem_time_set_nonlinear", [&](fem_time_stepper& s) {
    FEM_EXPECTS(s.first != nullptr, "fem_time_set_nonlinear: nonlinear steps are for first-order steppers");
    FEM_EXPECTS((residual == nullptr) == (jacobian == nullptr),
                "fem_time_set_nonlinear: give both the residual and the Jacobian (or neither)");
    fem::newton::Options options;
    options.lagging = fem::newton::Lagging::adaptive();
    if (residual == nullptr) return s.first->set_nonlinear({}, options);
    ft::Nonlinear n;
    n.residual = [residual, user](double t, std::span<const double> u, std::span<double> N) {
      const int r = residual(t, u.data(), N.data(), static_cast<int64_t>(N.size()), user);
      if (r != 0) throw CallbackFailed(fmt::format("the residual callback returned {} at t = {}", r, t));
    };
    n.jacobian = [jacobian, user](double t, std::span<const double> u, std::span<double> v) {
      const int r = jacobian(t, u.data(), static_cast<int64_t>(u.size()), v.data(),
                             static_cast<int64_t>(v.size()), user);
      if (r != 0) throw CallbackFailed(fmt::format("the Jacobian callback returned {} at t = {}", r, t));
    };
    s.first->set_nonlinear(std::move(n), options);
  });
}

int fem_time_second_order_create(const char* name, const char* M_key, const char* K_key,
                                 const fem_time_options* options, const double* u0, const double* v0,
                                 int64_t n, const int64_t* fixed, int64_t nfixed, fem_time_load_fn load,
                                 void* user, fem_time_stepper** out) {
  return guarded([&] {
    const char* fn = "fem_time_second_order_create";
    FEM_EXPECTS(out != nullptr, "{}: out is a null pointer", fn);
    FEM_EXPECTS(options != nullptr, "{}: options is a null pointer (fem_time_options_default, then dt)", fn);
    ft::SecondOrder p;
    p.name = key_arg(name, "name");
    p.M = key_arg(M_key, "M_key");
    p.K = key_arg(K_key, "K_key");
    p.load = load_of(load, user);
    p.fixed = dofs_of(fixed, nfixed, n, "fixed", fn);
    p.rayleigh_mass = options->rayleigh_mass;
    p.rayleigh_stiffness = options->rayleigh_stiffness;
    FEM_EXPECTS(std::isfinite(p.rayleigh_mass) && std::isfinite(p.rayleigh_stiffness),
                "{}: rayleigh_mass {} and rayleigh_stiffness {} must be finite", fn, p.rayleigh_mass,
                p.rayleigh_stiffness);
    ft::SecondOrderOptions o;
    o.scheme = scheme_of(options->scheme, fn);
    o.dt = options->dt;
    o.beta = options->beta;
    o.gamma = options->gamma;
    o.rho_inf = options->rho_inf;
    o.tolerance = options->tolerance;
    o.absolute_tolerance = options->absolute_tolerance;
    o.dt_min = options->dt_min;
    o.dt_max = options->dt_max;
    o.linear = linear_of(options->linear, fn);
    FEM_EXPECTS(std::isfinite(options->t0), "{}: t0 is {}", fn, options->t0);
    auto s = std::make_unique<fem_time_stepper>();
    s->dt = o.dt;
    s->second = std::make_unique<ft::SecondOrderStepper>(
        fem::store(), std::move(p), o, vector_of(u0, n, "u0", fn), vector_of(v0, n, "v0", fn), options->t0);
    *out = s.release();
  });
}

void fem_time_destroy(fem_time_stepper* stepper) { delete stepper; }

int fem_time_step(fem_time_stepper* stepper, double max_dt, double* dt_taken) {
  return with_stepper(stepper, "fem_time_step", [&](fem_time_stepper& s) {
    FEM_EXPECTS(max_dt > 0, "fem_time_step: max_dt is {}; a positive step (INFINITY: the stepper's)", max_dt);
    double h = 0;
    if (s.first) {
      h = s.first->step(max_dt);
    } else {
      h = s.second->step(max_dt);
    }
    if (dt_taken != nullptr) *dt_taken = h;
  });
}

int fem_time_advance_to(fem_time_stepper* stepper, double t_end) {
  return with_stepper(stepper, "fem_time_advance_to", [&](fem_time_stepper& s) {
    FEM_EXPECTS(!std::isnan(t_end) && std::isfinite(t_end), "fem_time_advance_to: t_end is {}", t_end);
    if (s.first) {
      s.first->advance_to(t_end);
    } else {
      s.second->advance_to(t_end);
    }
  });
}

int fem_time_state(const fem_time_stepper* stepper, double* t, const double** u, int64_t* n) {
  return guarded([&] {
    FEM_EXPECTS(stepper != nullptr, "fem_time_state: stepper is a null pointer");
    const auto x = u_of(*stepper);
    if (t != nullptr) *t = t_of(*stepper);
    if (u != nullptr) *u = x.data();
    if (n != nullptr) *n = static_cast<int64_t>(x.size());
  });
}

int fem_time_copy(const fem_time_stepper* stepper, int32_t which, double* out, int64_t capacity) {
  return guarded([&]() -> int {
    const char* fn = "fem_time_copy";
    FEM_EXPECTS(stepper != nullptr, "{}: stepper is a null pointer", fn);
    FEM_EXPECTS(which >= FEM_TIME_U && which <= FEM_TIME_A, "{}: which {} (FEM_TIME_U, _V or _A)", fn, which);
    FEM_EXPECTS(which == FEM_TIME_U || stepper->second, "{}: a first-order stepper has no {}", fn,
                which == FEM_TIME_V ? "velocity" : "acceleration");
    const auto x = which == FEM_TIME_U   ? u_of(*stepper)
                   : which == FEM_TIME_V ? stepper->second->v()
                                         : stepper->second->a();
    if (capacity < static_cast<int64_t>(x.size()))
      return fem::capi::fail(FEM_ERR_BUFFER_TOO_SMALL,
                             fmt::format("{}: {} values, capacity {}", fn, x.size(), capacity));
    FEM_EXPECTS(x.empty() || out != nullptr, "{}: out is a null pointer", fn);
    std::copy(x.begin(), x.end(), out);
    return FEM_OK;
  });
}

int fem_time_publish(const fem_time_stepper* stepper, const char* prefix) {
  return guarded([&] {
    FEM_EXPECTS(stepper != nullptr, "fem_time_publish: stepper is a null pointer");
    const std::string p(key_arg(prefix, "prefix"));
    const std::string u_key = p + "/u", v_key = p + "/v", a_key = p + "/a";
    for (const auto& key : {u_key, v_key, a_key}) fem::Store::validate_key(key);
    auto& store = fem::store();
    const auto put = [&](const std::string& key, std::span<const double> x) {
      store.put(key, fem::Array<double>({static_cast<std::int64_t>(x.size())},
                                        std::vector<double>(x.begin(), x.end())));
    };
    put(u_key, u_of(*stepper));
    if (stepper->second) {
      put(v_key, stepper->second->v());
      put(a_key, stepper->second->a());
    }
  });
}

int fem_time_report_get(const fem_time_stepper* stepper, fem_time_report* report) {
  return guarded([&] {
    FEM_EXPECTS(stepper != nullptr, "fem_time_report_get: stepper is a null pointer");
    FEM_EXPECTS(report != nullptr, "fem_time_report_get: report is a null pointer");
    const ft::Report& r = stepper->first ? stepper->first->report() : stepper->second->report();
    fem_time_report out{};
    std::snprintf(out.scheme, sizeof out.scheme, "%s", r.scheme.c_str());
    out.accepted = r.accepted;
    out.rejected = r.rejected;
    out.dt_min = r.dt_min;
    out.dt_max = r.dt_max;
    out.solves = r.solves;
    out.systems = r.systems;
    out.distinct_dts = static_cast<int64_t>(r.distinct_dts.size());
    out.factorize_seconds = r.factorize_seconds;
    out.solve_seconds = r.solve_seconds;
    out.newton_iterations = r.newton_iterations;
    out.jacobians = r.jacobians;
    out.newton_failures = r.newton_failures;
    out.t = t_of(*stepper);
    out.dt = stepper->first ? stepper->first->dt() : stepper->dt;
    *report = out;
  });
}

int fem_time_energy(const fem_time_stepper* stepper, double* kinetic, double* strain) {
  return guarded([&] {
    FEM_EXPECTS(stepper != nullptr, "fem_time_energy: stepper is a null pointer");
    FEM_EXPECTS(stepper->second, "fem_time_energy: a first-order stepper has no kinetic and strain energy");
    if (kinetic != nullptr) *kinetic = stepper->second->kinetic_energy();
    if (strain != nullptr) *strain = stepper->second->strain_energy();
  });
}

}  // extern "C"
