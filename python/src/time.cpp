// fem._FirstOrderStepper and fem._SecondOrderStepper: fem::time's steppers on matrices under
// store keys (fem.TimeStepper and fem.DynamicsStepper are the interface). A step runs with the
// GIL released; the load, the Dirichlet values and advance_to's callback take it back to call
// Python. A Python exception in one of them stops the step (the state stays) and is raised.
#include "fem/time/time.hpp"

#include <pybind11/stl.h>

#include <cmath>
#include <memory>

#include "common.hpp"

namespace fem::python {
namespace {

// The CallbackError of the current call: a fresh one per step, so that an exception raised by a
// callback in one call is not raised again by a later one.
struct Errors {
  std::shared_ptr<CallbackError> current = std::make_shared<CallbackError>();
  const std::shared_ptr<CallbackError>& fresh() { return current = std::make_shared<CallbackError>(); }
};

// Calls f with the GIL; a Python exception is captured for the binding to raise and stops the
// kernel with an fem::Error naming `what`.
template <class F>
void with_python(Errors& errors, const char* what, F&& f) {
  py::gil_scoped_acquire gil;
  try {
    f();
  } catch (py::error_already_set&) {
    errors.current->capture();
    throw Error(fmt::format("{} raised", what));
  }
}

// f(t) -> n values, added into the load.
time::Load load_of(py::object load, std::shared_ptr<Errors> errors, const char* who) {
  if (load.is_none()) return {};
  FEM_EXPECTS(PyCallable_Check(load.ptr()), "{}: load must be a function of t (or None)", who);
  return [fn = hold_python(std::move(load)), errors, who](double t, std::span<double> f) {
    with_python(*errors, "the load", [&] {
      const DoubleArray v = real_array((*fn)(t), fmt::format("{}: load(t)", who));
      FEM_EXPECTS(static_cast<std::size_t>(v.size()) == f.size(), "{}: load({}) gave {} values, not {}", who,
                  t, v.size(), f.size());
      const auto s = span_of(v);
      for (std::size_t i = 0; i < f.size(); ++i) f[i] += s[i];
    });
  };
}

std::vector<double> vector_of(py::handle x, std::size_t n, const char* what, const char* who) {
  if (x.is_none()) return std::vector<double>(n, 0.0);
  const DoubleArray a = real_array(x, fmt::format("{}: {}", who, what));
  FEM_EXPECTS(a.ndim() == 1, "{}: {} must be a vector, not {} dimensions", who, what, a.ndim());
  return {a.data(), a.data() + a.size()};
}

index_t rows_of(const std::string& key) { return fem::store().get<CsrMatrix>(key)->rows(); }

py::dict report_dict(const time::Report& r, double t) {
  py::dict d;
  d["scheme"] = r.scheme;
  d["t"] = t;
  d["accepted"] = r.accepted;
  d["rejected"] = r.rejected;
  d["dt_min"] = r.dt_min;
  d["dt_max"] = r.dt_max;
  d["solves"] = r.solves;
  d["systems"] = r.systems;
  d["distinct_dts"] = r.distinct_dts;
  d["factorize_seconds"] = r.factorize_seconds;
  d["solve_seconds"] = r.solve_seconds;
  d["newton_iterations"] = r.newton_iterations;
  d["jacobians"] = r.jacobians;
  d["newton_failures"] = r.newton_failures;
  return d;
}

time::Scheme scheme_of(const std::string& s, bool second) {
  if (!second) {
    if (s == "be" || s == "backward-euler") return time::Scheme::backward_euler;
    if (s == "cn" || s == "crank-nicolson") return time::Scheme::crank_nicolson;
    if (s == "theta") return time::Scheme::theta;
    if (s == "bdf2") return time::Scheme::bdf2;
    throw InvalidArgument(fmt::format("TimeStepper: scheme '{}': be, cn, bdf2 or theta", s));
  }
  if (s == "newmark") return time::Scheme::newmark;
  if (s == "galpha" || s == "generalized-alpha") return time::Scheme::generalized_alpha;
  throw InvalidArgument(fmt::format("DynamicsStepper: scheme '{}': newmark or galpha", s));
}

// A stepper and the callbacks' error slot.
template <class S>
struct Stepper {
  std::shared_ptr<Errors> errors = std::make_shared<Errors>();
  std::unique_ptr<S> s;
  // Runs kernel() without the GIL, raising a callback's Python exception first.
  template <class F>
  auto run(F&& kernel) {
    return without_gil(errors->fresh(), std::forward<F>(kernel));
  }
  // loop(f): the stepping loop, with f calling `each()` (Python; None: f empty) after every step.
  template <class Each>
  void advance_to(py::object each, Each&& loop) {
    std::function<void()> f;
    if (!each.is_none()) f = [&] { with_python(*errors, "the advance_to callback", [&] { each(); }); };
    run([&] { loop(f); });
  }
};

using First = Stepper<time::FirstOrderStepper>;
using Second = Stepper<time::SecondOrderStepper>;

}  // namespace

void bind_time(py::module_& m) {
  py::class_<First>(m, "_FirstOrderStepper",
                    "fem::time::FirstOrderStepper (fem.TimeStepper is the interface).")
      .def(py::init([](const std::string& name, const std::string& M, const std::string& K,
                       const std::string& scheme, double dt, py::object u0, py::object load, py::object dofs,
                       py::object values, double theta, int rannacher, double tolerance, double atol,
                       double dt_min, double dt_max, double t0) {
             const char* who = "TimeStepper";
             auto self = std::make_unique<First>();
             time::FirstOrder p;
             p.name = name;
             p.M = M;
             p.K = K;
             const auto n = static_cast<std::size_t>(rows_of(M));
             p.load = load_of(std::move(load), self->errors, who);
             if (!dofs.is_none()) {
               const auto d = checked_int32(dofs, "TimeStepper: the Dirichlet unknowns");
               p.dirichlet.dofs.assign(d.begin(), d.end());
               for (index_t i : p.dirichlet.dofs)
                 FEM_EXPECTS(i >= 0 && static_cast<std::size_t>(i) < n,
                             "TimeStepper: Dirichlet unknown {} is outside 0..{}", i, n - 1);
             }
             if (PyCallable_Check(values.ptr())) {
               p.dirichlet.values = [fn = hold_python(std::move(values)), errors = self->errors](
                                        double t, std::span<double> g) {
                 with_python(*errors, "the Dirichlet values", [&] {
                   const DoubleArray v = real_array((*fn)(t), "TimeStepper: the Dirichlet values(t)");
                   FEM_EXPECTS(static_cast<std::size_t>(v.size()) == g.size(),
                               "TimeStepper: the Dirichlet values({}) gave {} values for {} unknowns", t,
                               v.size(), g.size());
                   std::copy(v.data(), v.data() + v.size(), g.begin());
                 });
               };
             } else if (!values.is_none()) {
               std::vector<double> c = vector_of(values, 0, "the Dirichlet values", who);
               FEM_EXPECTS(c.size() == p.dirichlet.dofs.size(),
                           "TimeStepper: {} Dirichlet values for {} unknowns", c.size(),
                           p.dirichlet.dofs.size());
               p.dirichlet.values = [c = std::move(c)](double, std::span<double> g) {
                 std::copy(c.begin(), c.end(), g.begin());
               };
             }
             time::FirstOrderOptions o;
             o.scheme = scheme_of(scheme, false);
             o.dt = dt;
             o.theta = theta;
             o.rannacher_steps = rannacher;
             o.tolerance = tolerance;
             o.absolute_tolerance = atol;
             o.dt_min = dt_min;
             o.dt_max = dt_max;
             std::vector<double> u = vector_of(u0, n, "u0", who);
             self->s =
                 std::make_unique<time::FirstOrderStepper>(fem::store(), std::move(p), o, std::move(u), t0);
             return self;
           }),
           py::arg("name"), py::arg("M"), py::arg("K"), py::arg("scheme"), py::arg("dt"), py::arg("u0"),
           py::arg("load"), py::arg("dofs"), py::arg("values"), py::arg("theta"), py::arg("rannacher"),
           py::arg("tolerance"), py::arg("atol"), py::arg("dt_min"), py::arg("dt_max"), py::arg("t0"))
      .def(
          "set_stiffness",
          [](First& self, py::object fn) {
            const char* who = "TimeStepper.set_stiffness";
            if (fn.is_none()) return self.s->set_stiffness({});
            FEM_EXPECTS(PyCallable_Check(fn.ptr()), "{}: stiffness must be a function of t (or None)", who);
            self.s->set_stiffness(
                [f = hold_python(std::move(fn)), errors = self.errors, who](double t, std::span<double> v) {
                  with_python(*errors, "the stiffness", [&] {
                    const DoubleArray a = real_array((*f)(t), fmt::format("{}: stiffness(t)", who));
                    FEM_EXPECTS(static_cast<std::size_t>(a.size()) == v.size(),
                                "{}: stiffness({}) gave {} values, K's pattern holds {}", who, t, a.size(),
                                v.size());
                    const auto x = span_of(a);
                    std::copy(x.begin(), x.end(), v.begin());
                  });
                });
          },
          py::arg("stiffness"))
      .def(
          "set_nonlinear",
          [](First& self, py::object residual, py::object jacobian, bool lag) {
            const char* who = "TimeStepper.set_nonlinear";
            newton::Options options;
            if (lag) options.lagging = newton::Lagging::adaptive();
            if (residual.is_none() && jacobian.is_none()) return self.s->set_nonlinear({}, options);
            FEM_EXPECTS(PyCallable_Check(residual.ptr()) && PyCallable_Check(jacobian.ptr()),
                        "{}: residual and jacobian must be functions of (t, u) (or both None)", who);
            time::Nonlinear n;
            n.residual = [f = hold_python(std::move(residual)), errors = self.errors, who](
                             double t, std::span<const double> u, std::span<double> N) {
              with_python(*errors, "the residual", [&] {
                const DoubleArray a = real_array((*f)(t, to_numpy(std::vector<double>(u.begin(), u.end()))),
                                                 fmt::format("{}: residual(t, u)", who));
                FEM_EXPECTS(static_cast<std::size_t>(a.size()) == N.size(),
                            "{}: residual(t, u) gave {} values for {} unknowns", who, a.size(), N.size());
                const auto x = span_of(a);
                for (std::size_t i = 0; i < N.size(); ++i) N[i] += x[i];
              });
            };
            n.jacobian = [f = hold_python(std::move(jacobian)), errors = self.errors, who](
                             double t, std::span<const double> u, std::span<double> v) {
              with_python(*errors, "the jacobian", [&] {
                const DoubleArray a = real_array((*f)(t, to_numpy(std::vector<double>(u.begin(), u.end()))),
                                                 fmt::format("{}: jacobian(t, u)", who));
                FEM_EXPECTS(static_cast<std::size_t>(a.size()) == v.size(),
                            "{}: jacobian(t, u) gave {} values, K's pattern holds {}", who, a.size(),
                            v.size());
                const auto x = span_of(a);
                std::copy(x.begin(), x.end(), v.begin());
              });
            };
            self.s->set_nonlinear(std::move(n), options);
          },
          py::arg("residual"), py::arg("jacobian"), py::arg("lag"))
      .def(
          "step",
          [](First& self, double max_dt) {
            FEM_EXPECTS(max_dt > 0, "TimeStepper.step: max_dt is {}; a positive step", max_dt);
            return self.run([&] { return self.s->step(max_dt); });
          },
          py::arg("max_dt"))
      .def(
          "advance_to",
          [](First& self, double t_end, py::object each) {
            FEM_EXPECTS(std::isfinite(t_end), "TimeStepper.advance_to: t_end is {}", t_end);
            self.advance_to(std::move(each), [&](const std::function<void()>& f) {
              if (f)
                self.s->advance_to(t_end, [&](const time::FirstOrderStepper&) { f(); });
              else
                self.s->advance_to(t_end);
            });
          },
          py::arg("t_end"), py::arg("each"))
      .def_property_readonly("t", [](const First& self) { return self.s->t(); })
      .def_property_readonly("dt", [](const First& self) { return self.s->dt(); })
      .def_property_readonly("u",
                             [](const First& self) {
                               const auto u = self.s->u();
                               return to_numpy(std::vector<double>(u.begin(), u.end()));
                             })
      .def_property_readonly("report",
                             [](const First& self) { return report_dict(self.s->report(), self.s->t()); });

  py::class_<Second>(m, "_SecondOrderStepper",
                     "fem::time::SecondOrderStepper (fem.DynamicsStepper is the interface).")
      .def(py::init([](const std::string& name, const std::string& M, const std::string& K,
                       const std::string& scheme, double dt, py::object u0, py::object v0, py::object load,
                       py::object fixed, double rho_inf, double beta, double gamma, double rayleigh_mass,
                       double rayleigh_stiffness, double t0, double tolerance, double atol, double dt_min,
                       double dt_max) {
             const char* who = "DynamicsStepper";
             auto self = std::make_unique<Second>();
             time::SecondOrder p;
             p.name = name;
             p.M = M;
             p.K = K;
             const auto n = static_cast<std::size_t>(rows_of(M));
             p.load = load_of(std::move(load), self->errors, who);
             if (!fixed.is_none()) {
               const auto d = checked_int32(fixed, "DynamicsStepper: fixed");
               p.fixed.assign(d.begin(), d.end());
               for (index_t i : p.fixed)
                 FEM_EXPECTS(i >= 0 && static_cast<std::size_t>(i) < n,
                             "DynamicsStepper: fixed unknown {} is outside 0..{}", i, n - 1);
             }
             FEM_EXPECTS(std::isfinite(rayleigh_mass) && std::isfinite(rayleigh_stiffness),
                         "DynamicsStepper: rayleigh ({}, {}) must be finite", rayleigh_mass,
                         rayleigh_stiffness);
             p.rayleigh_mass = rayleigh_mass;
             p.rayleigh_stiffness = rayleigh_stiffness;
             time::SecondOrderOptions o;
             o.scheme = scheme_of(scheme, true);
             o.dt = dt;
             o.rho_inf = rho_inf;
             o.beta = beta;
             o.gamma = gamma;
             o.tolerance = tolerance;
             o.absolute_tolerance = atol;
             o.dt_min = dt_min;
             o.dt_max = dt_max;
             std::vector<double> u = vector_of(u0, n, "u0", who), v = vector_of(v0, n, "v0", who);
             self->run([&] {
               self->s = std::make_unique<time::SecondOrderStepper>(fem::store(), std::move(p), o,
                                                                    std::move(u), std::move(v), t0);
             });
             return self;
           }),
           py::arg("name"), py::arg("M"), py::arg("K"), py::arg("scheme"), py::arg("dt"), py::arg("u0"),
           py::arg("v0"), py::arg("load"), py::arg("fixed"), py::arg("rho_inf"), py::arg("beta"),
           py::arg("gamma"), py::arg("rayleigh_mass"), py::arg("rayleigh_stiffness"), py::arg("t0"),
           py::arg("tolerance"), py::arg("atol"), py::arg("dt_min"), py::arg("dt_max"))
      .def(
          "step",
          [](Second& self, double max_dt) {
            FEM_EXPECTS(max_dt > 0, "DynamicsStepper.step: max_dt is {}; a positive step", max_dt);
            return self.run([&] { return self.s->step(max_dt); });
          },
          py::arg("max_dt"))
      .def(
          "advance_to",
          [](Second& self, double t_end, py::object each) {
            FEM_EXPECTS(std::isfinite(t_end), "DynamicsStepper.advance_to: t_end is {}", t_end);
            self.advance_to(std::move(each), [&](const std::function<void()>& f) {
              if (f)
                self.s->advance_to(t_end, [&](const time::SecondOrderStepper&) { f(); });
              else
                self.s->advance_to(t_end);
            });
          },
          py::arg("t_end"), py::arg("each"))
      .def_property_readonly("dt", [](const Second& self) { return self.s->dt(); })
      .def_property_readonly("t", [](const Second& self) { return self.s->t(); })
      .def_property_readonly("u",
                             [](const Second& self) {
                               const auto x = self.s->u();
                               return to_numpy(std::vector<double>(x.begin(), x.end()));
                             })
      .def_property_readonly("v",
                             [](const Second& self) {
                               const auto x = self.s->v();
                               return to_numpy(std::vector<double>(x.begin(), x.end()));
                             })
      .def_property_readonly("a",
                             [](const Second& self) {
                               const auto x = self.s->a();
                               return to_numpy(std::vector<double>(x.begin(), x.end()));
                             })
      .def_property_readonly("kinetic_energy", [](const Second& self) { return self.s->kinetic_energy(); })
      .def_property_readonly("strain_energy", [](const Second& self) { return self.s->strain_energy(); })
      .def_property_readonly("report",
                             [](const Second& self) { return report_dict(self.s->report(), self.s->t()); });
}

}  // namespace fem::python
