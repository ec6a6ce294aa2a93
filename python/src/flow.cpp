// Flow from Python (fem::flow): fem.MixedSpace (the Taylor–Hood space of a stored mesh, its
// nodes and velocity data), steady fem.stokes / fem.navier_stokes (and the older fem.solve_flow,
// fem.flow_sizes), fem.force, and fem.ProjectionStepper (unsteady incremental pressure
// correction). Velocity Dirichlet DOFs are in the numbering of the P2 (Q2) vector space
// fem.FunctionSpace(mesh, 2, dim) makes (node·dim + component).
#include "fem/flow/flow.hpp"

#include <pybind11/stl.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <memory>

#include "common.hpp"

namespace fem::python {
namespace {

using assembly::MixedSpace;
using SpacePtr = std::shared_ptr<const MixedSpace>;

// The stepper, what its force is computed with, and its velocity data: constant, or a Python
// function of t called (with the GIL) before each step into `g`, which the stepper copies.
struct Projection {
  SpacePtr W;
  assembly::Flow flow;
  std::shared_ptr<std::vector<double>> g;
  py::object values = py::none();  // None: constant
  std::unique_ptr<flow::ProjectionStepper> s;
};

// A fem.MixedSpace, or the key of a mesh to make one on.
SpacePtr space_arg(py::handle space) {
  if (py::isinstance<MixedSpace>(space)) return space.cast<std::shared_ptr<MixedSpace>>();
  FEM_EXPECTS(py::isinstance<py::str>(space), "a fem.MixedSpace or a mesh key, not {}",
              std::string(py::repr(space)));
  const auto key = space.cast<std::string>();
  return without_gil([&] { return std::make_shared<const MixedSpace>(key); });
}

bool is_all(py::handle where) { return py::isinstance<py::str>(where) && where.cast<std::string>() == "all"; }

// `where`: a facet tag, a physical name, a list of them, or "all" (the whole boundary).
assembly::FacetSet facets_of(const Mesh& mesh, py::handle where, const char* what) {
  if (is_all(where)) return assembly::FacetSet::all();
  std::vector<int> tags;
  if (py::isinstance<py::list>(where) || py::isinstance<py::tuple>(where)) {
    for (py::handle t : where) tags.push_back(resolve_tag(mesh, t, mesh.tdim() - 1, what));
  } else {
    tags.push_back(resolve_tag(mesh, where, mesh.tdim() - 1, what));
  }
  return assembly::FacetSet::tagged(std::move(tags));
}

// The nodes a force is summed over: those of `where`, or `nodes` as given (exactly one of them).
std::vector<index_t> force_nodes(const MixedSpace& W, py::object where, py::object nodes, const char* who) {
  FEM_EXPECTS(where.is_none() != nodes.is_none(), "{}: give `where` (tags or names) or `nodes`, one of them",
              who);
  if (!where.is_none())
    return without_gil(
        [&, f = facets_of(W.mesh(), where, who)] { return flow::boundary_nodes(W.velocity(), f); });
  const auto n = checked_int32(nodes, fmt::format("{}: nodes", who).c_str());
  const index_t count = W.velocity().dofmap().num_nodes;
  for (auto i : n)
    FEM_EXPECTS(i >= 0 && i < count, "{}: node {} is not a velocity node (0 .. {})", who, i, count - 1);
  return {n.begin(), n.end()};
}

assembly::DirichletValues velocity_values(const MixedSpace& W, py::object dofs, py::object values,
                                          const char* who) {
  assembly::DirichletValues bc;
  const auto d = checked_int32(dofs, fmt::format("{}: dofs", who).c_str());
  bc.dofs.assign(d.begin(), d.end());
  const DoubleArray v = real_array(values, fmt::format("{}: values", who));
  FEM_EXPECTS(static_cast<std::size_t>(v.size()) == bc.dofs.size(), "{}: {} values for {} dofs", who,
              v.size(), bc.dofs.size());
  const auto x = span_of(v);
  bc.values.assign(x.begin(), x.end());
  require_finite(bc.values, fmt::format("{}: values", who));
  for (index_t i : bc.dofs)
    FEM_EXPECTS(i >= 0 && i < W.pressure_offset(), "{}: DOF {} is not a velocity DOF (0 .. {})", who, i,
                W.pressure_offset() - 1);
  FEM_EXPECTS(std::adjacent_find(bc.dofs.begin(), bc.dofs.end(), std::greater_equal<>()) == bc.dofs.end(),
              "{}: the dofs must be strictly increasing", who);
  return bc;
}

std::pair<py::array, py::array> split(const MixedSpace& W, std::span<const double> w) {
  const auto u = W.velocity_part(w), p = W.pressure_part(w);
  return {to_numpy(std::vector<double>(u.begin(), u.end())),
          to_numpy(std::vector<double>(p.begin(), p.end()))};
}

// The mixed vector from (u, p) or w.
std::vector<double> state_of(const MixedSpace& W, py::handle u, py::handle p, const char* who) {
  const auto nv = static_cast<std::size_t>(W.pressure_offset()), n = static_cast<std::size_t>(W.num_dofs());
  std::vector<double> w(n, 0.0);
  const DoubleArray a = real_array(u, fmt::format("{}: velocity", who));
  if (p.is_none()) {
    FEM_EXPECTS(static_cast<std::size_t>(a.size()) == n, "{}: the state has {} values, the space {} DOFs",
                who, a.size(), n);
    std::copy_n(a.data(), n, w.begin());
  } else {
    const DoubleArray b = real_array(p, fmt::format("{}: pressure", who));
    FEM_EXPECTS(static_cast<std::size_t>(a.size()) == nv && static_cast<std::size_t>(b.size()) == n - nv,
                "{}: {} velocity and {} pressure values, the space has {} and {}", who, a.size(), b.size(),
                nv, n - nv);
    std::copy_n(a.data(), nv, w.begin());
    std::copy_n(b.data(), n - nv, w.begin() + static_cast<std::ptrdiff_t>(nv));
  }
  require_finite(w, fmt::format("{}: the state", who));
  return w;
}

py::dict report_of(const flow::SteadyResult& r) {
  py::dict out;
  out["converged"] = r.converged();
  out["reason"] = std::string(newton::to_string(r.newton.reason));
  out["picard_iterations"] = r.picard.iterations;
  out["newton_iterations"] = r.newton.iterations;
  out["jacobians"] = r.picard.jacobian_refreshes + r.newton.jacobian_refreshes;
  out["symbolic_analyses"] = r.picard.symbolic_analyses + r.newton.symbolic_analyses;
  out["initial_residual_norm"] = r.newton.initial_residual_norm;
  out["residual_norm"] = r.newton.residual_norm;
  return out;
}

struct Steady {
  std::vector<double> w;
  flow::SteadyResult result;
};

Steady steady(const SpacePtr& W, assembly::Flow flow, const assembly::DirichletValues& bc,
              bool pressure_null_space, int picard_steps, double rtol, int max_iterations, py::object guess,
              py::object body_force, const std::string& name, const char* who) {
  FEM_EXPECTS(std::isfinite(flow.viscosity) && flow.viscosity > 0, "{}: viscosity {} must be positive", who,
              flow.viscosity);
  FEM_EXPECTS(picard_steps >= 0 && max_iterations >= 1, "{}: picard_steps {} and max_iterations {}", who,
              picard_steps, max_iterations);
  Steady out;
  if (guess.is_none()) {
    out.w.assign(static_cast<std::size_t>(W->num_dofs()), 0.0);
  } else if (py::isinstance<py::tuple>(guess)) {
    const auto t = guess.cast<py::tuple>();
    FEM_EXPECTS(t.size() == 2, "{}: guess is (velocity, pressure) or the mixed vector", who);
    out.w = state_of(*W, t[0], t[1], who);
  } else {
    out.w = state_of(*W, guess, py::none(), who);
  }
  auto error = std::make_shared<CallbackError>();
  if (!body_force.is_none())
    flow.body_force = vector_function(std::move(body_force), W->mesh().gdim(), W->dim(), error);
  flow::SteadyOptions o;
  o.picard_steps = picard_steps;
  o.newton.rtol = rtol;
  o.newton.max_iterations = max_iterations;
  o.newton.linear.backend = solve::Backend::umfpack;
  out.result = without_gil(error, [&] {
    return flow::solve_steady(W, flow, bc, pressure_null_space, out.w, o, name, fem::store());
  });
  return out;
}

py::tuple steady_tuple(const MixedSpace& W, const Steady& r) {
  auto [u, p] = split(W, r.w);
  return py::make_tuple(u, p, report_of(r.result));
}

}  // namespace

void bind_flow(py::module_& m) {
  py::class_<MixedSpace, std::shared_ptr<MixedSpace>>(
      m, "MixedSpace",
      "The Taylor–Hood space (P2–P1, Q2–Q1) of a stored mesh: the velocity's DOFs (node·dim + "
      "component, as fem.FunctionSpace(mesh, 2, dim)), then the pressure's (one per vertex; the "
      "vertices are the first nodes). Its block pattern is built once per mesh version and cached.")
      .def(py::init([](const std::string& mesh) {
             return std::const_pointer_cast<MixedSpace>(
                 without_gil([&] { return std::make_shared<const MixedSpace>(mesh); }));
           }),
           py::arg("mesh"))
      .def_property_readonly("mesh_key", [](const MixedSpace& W) { return W.velocity().mesh_key(); })
      .def_property_readonly("dim", &MixedSpace::dim)
      .def_property_readonly("dofs", &MixedSpace::num_dofs)
      .def_property_readonly("velocity_dofs", &MixedSpace::pressure_offset)
      .def_property_readonly("pressure_dofs", &MixedSpace::num_pressure_dofs)
      .def_property_readonly("pressure_offset", &MixedSpace::pressure_offset)
      .def_property_readonly(
          "velocity", [](const MixedSpace& W) { return W.velocity(); },
          "The velocity's space (a copy of the fem.FunctionSpace; same DOF map).")
      .def_property_readonly("pressure", [](const MixedSpace& W) { return W.pressure(); })
      .def_property_readonly(
          "node_coordinates",
          [](const MixedSpace& W) {
            const auto& d = W.velocity().dofmap();
            return readonly_view(d.coordinates.data(), {d.num_nodes, W.mesh().gdim()},
                                 W.velocity().dofmap_ptr());
          },
          "Where the velocity's nodes sit (nodes × gdim); the first pressure_dofs are the vertices.")
      .def(
          "boundary_nodes",
          [](const MixedSpace& W, py::object where) {
            const auto f = facets_of(W.mesh(), where, "MixedSpace.boundary_nodes");
            return to_numpy(without_gil([&] { return flow::boundary_nodes(W.velocity(), f); }));
          },
          py::arg("where") = "all",
          "The velocity nodes (sorted) on the facets of `where`: a tag, a name, a list of them, or 'all'.")
      .def(
          "dirichlet",
          [](const MixedSpace& W, py::dict conditions) {
            const char* who = "MixedSpace.dirichlet";
            auto error = std::make_shared<CallbackError>();
            std::vector<assembly::Dirichlet> list;
            const int dim = W.dim(), gdim = W.mesh().gdim();
            for (auto [where, value] : conditions) {
              const auto f = facets_of(W.mesh(), where, who);
              const std::string of = fmt::format("{} {{{}: ...}}", who, std::string(py::repr(where)));
              std::vector<py::object> parts;
              if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
                for (py::handle c : value) parts.push_back(py::reinterpret_borrow<py::object>(c));
                FEM_EXPECTS(static_cast<int>(parts.size()) == dim,
                            "{}: {} components given, the velocity has {}", of, parts.size(), dim);
              } else {
                parts.assign(static_cast<std::size_t>(dim), py::reinterpret_borrow<py::object>(value));
              }
              for (int k = 0; k < dim; ++k) {
                py::object c = parts[static_cast<std::size_t>(k)];
                if (c.is_none()) continue;  // free
                assembly::Dirichlet d{f, nullptr, k};
                if (PyCallable_Check(c.ptr())) {
                  d.value = point_function(c, gdim, error);
                } else {
                  const double v = real_number(c, of);
                  d.value = [v](const double*) { return v; };
                }
                list.push_back(std::move(d));
              }
            }
            auto bc = without_gil(error, [&] { return assembly::dirichlet_values(W.velocity(), list); });
            require_finite(bc.values, "MixedSpace.dirichlet: the values");
            return py::make_tuple(to_numpy(std::move(bc.dofs)), to_numpy(std::move(bc.values)));
          },
          py::arg("conditions"),
          "The velocity's Dirichlet DOFs and values, sorted: conditions {where: value}, where a tag, a name, "
          "a list of them or 'all'; value one per component (a number, a function of x, or None: that "
          "component free) or one number for all. A tag wins over 'all'. Returns (dofs, values).")
      .def(
          "split",
          [](const MixedSpace& W, const DoubleArray& w) {
            return split(W, state_of(W, w, py::none(), "MixedSpace.split"));
          },
          py::arg("w"), "(velocity, pressure) of a mixed vector.")
      .def("__repr__", [](const MixedSpace& W) {
        return fmt::format("<fem.MixedSpace {}–{} on {}: {} + {} dofs>", W.velocity().name(),
                           W.pressure().name(), W.velocity().mesh_key(), W.pressure_offset(),
                           W.num_pressure_dofs());
      });

  m.def(
      "stokes",
      [](py::object space, py::object dofs, py::object values, double viscosity, bool pressure_null_space,
         py::object body_force, const std::string& name) {
        const auto W = space_arg(space);
        const auto bc = velocity_values(*W, std::move(dofs), std::move(values), "fem.stokes");
        const auto r =
            steady(W, assembly::Flow::stokes(viscosity), bc, pressure_null_space, 0, 1e-10,
                   newton::Options{}.max_iterations, py::none(), std::move(body_force), name, "fem.stokes");
        return steady_tuple(*W, r);
      },
      py::arg("space"), py::arg("dofs"), py::arg("values"), py::arg("viscosity") = 1.0,
      py::arg("pressure_null_space") = true, py::arg("body_force") = py::none(),
      py::arg("name") = "fem.stokes",
      "Steady Stokes flow on Taylor–Hood elements (`space`: a fem.MixedSpace or a mesh key), the velocity "
      "given at `dofs` (strictly increasing velocity DOFs: MixedSpace.dirichlet) with `values`; "
      "pressure_null_space: the velocity is given on the whole boundary, p found with zero mean (else "
      "an outflow fixes it). body_force: f(x) → dim values. Returns (velocity, pressure, report).");
  m.def(
      "navier_stokes",
      [](py::object space, py::object dofs, py::object values, double viscosity, double density,
         bool pressure_null_space, int picard_steps, double rtol, int max_iterations, py::object guess,
         py::object body_force, const std::string& name) {
        const auto W = space_arg(space);
        const auto bc = velocity_values(*W, std::move(dofs), std::move(values), "fem.navier_stokes");
        const auto r = steady(W, assembly::Flow::navier_stokes(viscosity, density), bc, pressure_null_space,
                              picard_steps, rtol, max_iterations, std::move(guess), std::move(body_force),
                              name, "fem.navier_stokes");
        return steady_tuple(*W, r);
      },
      py::arg("space"), py::arg("dofs"), py::arg("values"), py::arg("viscosity"), py::arg("density") = 1.0,
      py::arg("pressure_null_space") = true, py::arg("picard_steps") = 3, py::arg("rtol") = 1e-10,
      py::arg("max_iterations") = 30, py::arg("guess") = py::none(), py::arg("body_force") = py::none(),
      py::arg("name") = "fem.navier_stokes",
      "Steady Navier–Stokes flow: Picard steps, then Newton, every Jacobian on one symbolic analysis "
      "(published as <name>/J). guess: (velocity, pressure) or the mixed vector (None: zero). A "
      "Newton that does not converge is a report with converged False, not an exception. Returns "
      "(velocity, pressure, report).");
  m.def(
      "force",
      [](py::object space, py::object u, py::object p, py::object where, py::object nodes, double viscosity,
         double density, bool navier_stokes) {
        const char* who = "fem.force";
        const auto W = space_arg(space);
        const auto w = state_of(*W, u, p, who);
        const auto n = force_nodes(*W, std::move(where), std::move(nodes), who);
        FEM_EXPECTS(std::isfinite(viscosity) && viscosity >= 0, "{}: viscosity {}", who, viscosity);
        const auto flow = navier_stokes ? assembly::Flow::navier_stokes(viscosity, density)
                                        : assembly::Flow::stokes(viscosity);
        const auto f = without_gil([&] { return flow::force(*W, flow, w, n); });
        return to_numpy(std::vector<double>(f.begin(), f.begin() + W->dim()));
      },
      py::arg("space"), py::arg("velocity"), py::arg("pressure"), py::arg("where") = py::none(),
      py::arg("nodes") = py::none(), py::arg("viscosity") = 1.0, py::arg("density") = 1.0,
      py::arg("navier_stokes") = false,
      "The force of the fluid on the facets of `where` (a tag, a name, a list, 'all') or on the velocity "
      "`nodes`, by the volume formulation (minus the momentum residual summed over the nodes): dim "
      "values, per unit depth in 2D (drag and lift).");

  py::class_<Projection>(m, "ProjectionStepper",
                         "Unsteady Navier–Stokes by incremental pressure correction (fem::flow): its three "
                         "matrices factorized once for the run.")
      .def(py::init([](py::object space, double dt, py::object dofs, py::object values, py::object outflow,
                       double viscosity, double density, bool convection, const std::string& name) {
             const char* who = "fem.ProjectionStepper";
             auto self = std::make_unique<Projection>();
             self->W = space_arg(space);
             self->flow = convection ? assembly::Flow::navier_stokes(viscosity, density)
                                     : assembly::Flow::stokes(viscosity);
             self->flow.density = density;
             const bool callable = PyCallable_Check(values.ptr()) != 0;
             // Constant values: checked with the dofs; a function: its value at t = 0.
             const auto bc = velocity_values(*self->W, dofs, callable ? values(0.0) : values, who);
             self->g = std::make_shared<std::vector<double>>(bc.values);
             if (callable) self->values = values;
             flow::Projection p;
             p.name = name;
             p.W = self->W;
             p.viscosity = viscosity;
             p.density = density;
             p.convection = convection;
             p.velocity.dofs = bc.dofs;
             p.velocity.values = [g = self->g](double, std::span<double> out) {
               std::copy(g->begin(), g->end(), out.begin());
             };
             if (!outflow.is_none()) {
               const auto o = checked_int32(outflow, "fem.ProjectionStepper: outflow");
               p.pressure_dofs.assign(o.begin(), o.end());
               for (index_t i : p.pressure_dofs)
                 FEM_EXPECTS(i >= 0 && i < self->W->num_pressure_dofs(),
                             "{}: outflow DOF {} is not a pressure DOF (0 .. {})", who, i,
                             self->W->num_pressure_dofs() - 1);
             }
             std::vector<double> w(static_cast<std::size_t>(self->W->num_dofs()), 0.0);
             assembly::set_dirichlet(bc, w);
             self->s = without_gil([&] {
               return std::make_unique<flow::ProjectionStepper>(fem::store(), std::move(p), dt, w);
             });
             return self;
           }),
           py::arg("mesh"), py::arg("dt"), py::arg("dofs"), py::arg("values"),
           py::arg("outflow") = py::none(), py::arg("viscosity") = 1.0, py::arg("density") = 1.0,
           py::arg("convection") = true, py::arg("name") = "fem.ProjectionStepper",
           "mesh: a mesh key or a fem.MixedSpace. dofs, values: the velocity's Dirichlet data (strictly "
           "increasing velocity DOFs: MixedSpace.dirichlet); values an array (constant in time) or a "
           "function of t returning len(dofs) values, called before each step at its end time. outflow: "
           "pressure DOFs where p = 0; None: p free up to a constant. convection False: unsteady Stokes. "
           "Starts from rest (the velocity data at t = 0).")
      .def(
          "step",
          [](Projection& self, int count) {
            FEM_EXPECTS(count >= 1, "fem.ProjectionStepper.step: count {} must be at least 1", count);
            for (int i = 0; i < count; ++i) {
              if (!self.values.is_none()) {  // the data at the step's end, before the step
                const double t = self.s->t() + self.s->dt();
                const DoubleArray v =
                    real_array(self.values(t), fmt::format("fem.ProjectionStepper: values({})", t));
                FEM_EXPECTS(static_cast<std::size_t>(v.size()) == self.g->size(),
                            "fem.ProjectionStepper: values({}) gave {} values for {} dofs", t, v.size(),
                            self.g->size());
                const auto x = span_of(v);
                require_finite(x, fmt::format("fem.ProjectionStepper: values({})", t));
                std::copy(x.begin(), x.end(), self.g->begin());
              }
              without_gil([&] {
                self.s->step();
                return 0;
              });
            }
          },
          py::arg("count") = 1, "count steps of dt")
      .def(
          "force",
          [](const Projection& self, py::object where, py::object nodes) {
            const auto n =
                force_nodes(*self.W, std::move(where), std::move(nodes), "ProjectionStepper.force");
            const auto f = without_gil(
                [&] { return flow::force(*self.W, self.flow, self.s->w(), n, self.s->inertia()); });
            return to_numpy(std::vector<double>(f.begin(), f.begin() + self.W->dim()));
          },
          py::arg("where") = py::none(), py::arg("nodes") = py::none(),
          "The force of the fluid on the facets of `where` (or on `nodes`) now, the last step's inertia "
          "included: dim values (drag and lift).")
      .def_property_readonly(
          "space", [](const Projection& self) { return std::const_pointer_cast<MixedSpace>(self.W); })
      .def_property_readonly("t", [](const Projection& self) { return self.s->t(); })
      .def_property_readonly("dt", [](const Projection& self) { return self.s->dt(); })
      .def_property_readonly("steps", [](const Projection& self) { return self.s->steps(); })
      .def_property_readonly("matrices", [](const Projection& self) { return self.s->matrices(); })
      .def_property_readonly("velocity",
                             [](const Projection& self) { return split(*self.W, self.s->w()).first; })
      .def_property_readonly("pressure",
                             [](const Projection& self) { return split(*self.W, self.s->w()).second; });

  m.def(
      "flow_sizes",
      [](const std::string& mesh) {
        const MixedSpace W(mesh);
        py::dict d;
        d["dim"] = W.dim();
        d["velocity_dofs"] = W.pressure_offset();
        d["pressure_dofs"] = W.num_pressure_dofs();
        d["dofs"] = W.num_dofs();
        return d;
      },
      py::arg("mesh"),
      "The Taylor–Hood space of the mesh under `mesh`: dim, velocity_dofs, pressure_dofs, dofs "
      "(fem.MixedSpace has them too).");
  m.def(
      "solve_flow",
      [](const std::string& mesh, py::object dofs, py::object values, double viscosity, double density,
         bool navier_stokes, bool pressure_null_space, int picard_steps, double rtol,
         const std::string& name) {
        const char* who = "fem.solve_flow";
        const SpacePtr W = std::make_shared<const MixedSpace>(mesh);
        const auto bc = velocity_values(*W, std::move(dofs), std::move(values), who);
        const auto flow = navier_stokes ? assembly::Flow::navier_stokes(viscosity, density)
                                        : assembly::Flow::stokes(viscosity);
        const auto r = steady(W, flow, bc, pressure_null_space, picard_steps, rtol, 30, py::none(),
                              py::none(), name, who);
        py::dict out = report_of(r.result);
        auto [u, p] = split(*W, r.w);
        out["velocity"] = u;
        out["pressure"] = p;
        return out;
      },
      py::arg("mesh"), py::arg("dofs"), py::arg("values"), py::arg("viscosity") = 1.0,
      py::arg("density") = 1.0, py::arg("navier_stokes") = false, py::arg("pressure_null_space") = true,
      py::arg("picard_steps") = 3, py::arg("rtol") = 1e-10, py::arg("name") = "fem.solve_flow",
      "Steady Stokes (or Navier–Stokes) flow on Taylor–Hood elements as one dict: velocity, pressure "
      "(numpy) and the report's entries (fem.stokes and fem.navier_stokes return (velocity, pressure, "
      "report)).");
}

}  // namespace fem::python
