// fem.solve_flow and fem.flow_sizes: steady Stokes and Navier–Stokes on the Taylor–Hood space of
// a stored mesh (fem::flow), the velocity's Dirichlet DOFs given in the numbering of the P2 (Q2)
// vector space fem.FunctionSpace(mesh, 2, dim) makes (its DirichletBC's dofs and values).
#include "fem/flow/flow.hpp"

#include <pybind11/stl.h>

#include <memory>

#include "common.hpp"

namespace fem::python {
namespace {

struct Projection {
  std::shared_ptr<const assembly::MixedSpace> W;
  std::unique_ptr<flow::ProjectionStepper> s;
};

assembly::DirichletValues velocity_values(const assembly::MixedSpace& W, py::object dofs, py::object values,
                                          const char* who) {
  assembly::DirichletValues bc;
  const auto d = checked_int32(dofs, fmt::format("{}: dofs", who).c_str());
  bc.dofs.assign(d.begin(), d.end());
  const DoubleArray v = real_array(values, fmt::format("{}: values", who));
  FEM_EXPECTS(static_cast<std::size_t>(v.size()) == bc.dofs.size(), "{}: {} values for {} dofs", who,
              v.size(), bc.dofs.size());
  const auto x = span_of(v);
  bc.values.assign(x.begin(), x.end());
  for (index_t i : bc.dofs)
    FEM_EXPECTS(i >= 0 && i < W.pressure_offset(), "{}: DOF {} is not a velocity DOF (0 .. {})", who, i,
                W.pressure_offset() - 1);
  FEM_EXPECTS(std::is_sorted(bc.dofs.begin(), bc.dofs.end()), "{}: the dofs must be sorted", who);
  return bc;
}

}  // namespace

void bind_flow(py::module_& m) {
  py::class_<Projection>(m, "ProjectionStepper",
                         "Unsteady Navier–Stokes by incremental pressure correction (fem::flow): its three "
                         "matrices factorized once for the run. Velocity data constant in time.")
      .def(py::init([](const std::string& mesh, double dt, py::object dofs, py::object values,
                       py::object outflow, double viscosity, double density, const std::string& name) {
             const char* who = "fem.ProjectionStepper";
             auto self = std::make_unique<Projection>();
             self->W = std::make_shared<const assembly::MixedSpace>(mesh);
             const auto bc = velocity_values(*self->W, std::move(dofs), std::move(values), who);
             flow::Projection p;
             p.name = name;
             p.W = self->W;
             p.viscosity = viscosity;
             p.density = density;
             p.velocity.dofs = bc.dofs;
             p.velocity.values = [g = bc.values](double, std::span<double> out) {
               std::copy(g.begin(), g.end(), out.begin());
             };
             if (!outflow.is_none()) {
               const auto o = checked_int32(outflow, "fem.ProjectionStepper: outflow");
               p.pressure_dofs.assign(o.begin(), o.end());
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
           py::arg("name") = "fem.ProjectionStepper",
           "dofs, values: the velocity's Dirichlet data (sorted; the numbering of fem.FunctionSpace(mesh, 2, "
           "dim)); outflow: pressure DOFs (of fem.FunctionSpace(mesh, 1)) where p = 0; None: p free up to a "
           "constant. Starts from rest.")
      .def(
          "step",
          [](Projection& self, int count) {
            FEM_EXPECTS(count >= 1, "fem.ProjectionStepper.step: count {} must be at least 1", count);
            without_gil([&] {
              for (int i = 0; i < count; ++i) self.s->step();
              return 0;
            });
          },
          py::arg("count") = 1, "count steps of dt")
      .def_property_readonly("t", [](const Projection& self) { return self.s->t(); })
      .def_property_readonly("steps", [](const Projection& self) { return self.s->steps(); })
      .def_property_readonly("matrices", [](const Projection& self) { return self.s->matrices(); })
      .def_property_readonly("velocity",
                             [](const Projection& self) {
                               const auto u = self.W->velocity_part(self.s->w());
                               return to_numpy(std::vector<double>(u.begin(), u.end()));
                             })
      .def_property_readonly("pressure", [](const Projection& self) {
        const auto p = self.W->pressure_part(self.s->w());
        return to_numpy(std::vector<double>(p.begin(), p.end()));
      });

  m.def(
      "flow_sizes",
      [](const std::string& mesh) {
        const assembly::MixedSpace W(mesh);
        py::dict d;
        d["dim"] = W.dim();
        d["velocity_dofs"] = W.pressure_offset();
        d["pressure_dofs"] = W.num_pressure_dofs();
        d["dofs"] = W.num_dofs();
        return d;
      },
      py::arg("mesh"),
      "The Taylor–Hood space of the mesh under `mesh`: dim, velocity_dofs, pressure_dofs, dofs.");
  m.def(
      "solve_flow",
      [](const std::string& mesh, py::object dofs, py::object values, double viscosity, double density,
         bool navier_stokes, bool pressure_null_space, int picard_steps, double rtol,
         const std::string& name) {
        const char* who = "fem.solve_flow";
        auto W = std::make_shared<const assembly::MixedSpace>(mesh);
        assembly::DirichletValues bc;
        const auto d = checked_int32(dofs, "fem.solve_flow: dofs");
        bc.dofs.assign(d.begin(), d.end());
        const DoubleArray v = real_array(values, "fem.solve_flow: values");
        FEM_EXPECTS(static_cast<std::size_t>(v.size()) == bc.dofs.size(), "{}: {} values for {} dofs", who,
                    v.size(), bc.dofs.size());
        const auto x = span_of(v);
        bc.values.assign(x.begin(), x.end());
        for (index_t i : bc.dofs)
          FEM_EXPECTS(i >= 0 && i < W->pressure_offset(), "{}: DOF {} is not a velocity DOF (0 .. {})", who,
                      i, W->pressure_offset() - 1);
        FEM_EXPECTS(std::is_sorted(bc.dofs.begin(), bc.dofs.end()), "{}: the dofs must be sorted", who);
        assembly::Flow flow = navier_stokes ? assembly::Flow::navier_stokes(viscosity, density)
                                            : assembly::Flow::stokes(viscosity);
        flow::SteadyOptions o;
        o.picard_steps = picard_steps;
        o.newton.rtol = rtol;
        o.newton.linear.backend = solve::Backend::umfpack;
        std::vector<double> w(static_cast<std::size_t>(W->num_dofs()), 0.0);
        const flow::SteadyResult r = without_gil(
            [&] { return flow::solve_steady(W, flow, bc, pressure_null_space, w, o, name, fem::store()); });
        py::dict out;
        const auto nv = static_cast<std::size_t>(W->pressure_offset());
        out["velocity"] =
            to_numpy(std::vector<double>(w.begin(), w.begin() + static_cast<std::ptrdiff_t>(nv)));
        out["pressure"] = to_numpy(std::vector<double>(w.begin() + static_cast<std::ptrdiff_t>(nv), w.end()));
        out["converged"] = r.converged();
        out["reason"] = std::string(newton::to_string(r.newton.reason));
        out["picard_iterations"] = r.picard.iterations;
        out["newton_iterations"] = r.newton.iterations;
        out["jacobians"] = r.picard.jacobian_refreshes + r.newton.jacobian_refreshes;
        out["symbolic_analyses"] = r.picard.symbolic_analyses + r.newton.symbolic_analyses;
        out["residual_norm"] = r.newton.residual_norm;
        return out;
      },
      py::arg("mesh"), py::arg("dofs"), py::arg("values"), py::arg("viscosity") = 1.0,
      py::arg("density") = 1.0, py::arg("navier_stokes") = false, py::arg("pressure_null_space") = true,
      py::arg("picard_steps") = 3, py::arg("rtol") = 1e-10, py::arg("name") = "fem.solve_flow",
      "Steady Stokes (or Navier–Stokes) flow on Taylor–Hood elements: the velocity given at `dofs` "
      "(sorted; the numbering of fem.FunctionSpace(mesh, 2, dim)) with `values`; without an outflow "
      "the pressure is found with zero mean (pressure_null_space). Returns a dict: velocity, pressure "
      "(numpy, at the P2 nodes × dim and the vertices), converged, reason, picard_iterations, "
      "newton_iterations, jacobians, symbolic_analyses, residual_norm.");
}

}  // namespace fem::python
