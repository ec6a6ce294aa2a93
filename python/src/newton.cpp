// fem.newton_solve: Newton's method on the library's nonlinear problems (Bratu, the quasilinear
// -div((1 + u²)∇u) = f, the p-Laplacian), with the Jacobian factorized through the store's
// cache: one symbolic analysis for the whole solve.
#include "fem/newton/newton.hpp"

#include <pybind11/stl.h>

#include "common.hpp"
#include "fem/assembly/assembly.hpp"
#include "fem/newton/assembled.hpp"

namespace fem::python {
namespace {

assembly::NonlinearForm form(const std::string& problem, double parameter, py::object source, int gdim,
                             const std::shared_ptr<CallbackError>& error) {
  assembly::Function f = [](const double*) { return 0.0; };
  if (!source.is_none()) {
    if (PyCallable_Check(source.ptr())) {
      f = point_function(source, gdim, error);
    } else {
      const double c = real_number(source, "newton_solve: source (a number or a function of x)");
      f = [c](const double*) { return c; };
    }
  }
  if (problem == "bratu") {
    FEM_EXPECTS(source.is_none(), "newton_solve: bratu takes no source (-Δu = λ e^u)");
    return assembly::bratu(parameter);
  }
  if (problem == "quasilinear") return assembly::nonlinear_poisson(f);
  if (problem == "p_laplacian") return assembly::p_laplacian(parameter, f);
  throw InvalidArgument(
      fmt::format("newton_solve: problem '{}': one of bratu, quasilinear, p_laplacian", problem));
}

}  // namespace

void bind_newton(py::module_& m) {
  m.def(
      "newton_solve",
      [](std::shared_ptr<assembly::Assembler> assembler, const std::string& problem, double parameter,
         py::object source, py::handle bc, py::object u0, const std::string& name, double atol, double rtol,
         int max_iterations, int lag, const std::string& line_search) {
        auto error = std::make_shared<CallbackError>();
        const auto& V = assembler->space();
        assembly::NonlinearForm nf = form(problem, parameter, source, V.mesh().gdim(), error);
        assembly::DirichletValues values =
            bc.is_none() ? assembly::DirichletValues{} : dirichlet_values(bc, V.num_dofs());
        if (!bc.is_none()) assembly::require_space(values, V, "newton_solve: bc");  // named here, not deeper
        std::vector<double> u(static_cast<std::size_t>(V.num_dofs()), 0.0);
        if (!u0.is_none()) {
          auto given = span_of(u0.cast<DoubleArray>());
          FEM_EXPECTS(given.size() == u.size(), "newton_solve: u0 has {} values, the space {} DOFs",
                      given.size(), u.size());
          std::copy(given.begin(), given.end(), u.begin());
        }
        assembly::set_dirichlet(values, u);
        FEM_EXPECTS(max_iterations >= 1, "newton_solve: max_iterations {} must be at least 1",
                    max_iterations);
        FEM_EXPECTS(atol >= 0 && rtol >= 0, "newton_solve: atol {} and rtol {} must be non-negative numbers",
                    atol, rtol);
        FEM_EXPECTS(lag >= 1, "newton_solve: lag {} must be at least 1 (1: full Newton)", lag);
        FEM_EXPECTS(line_search == "none" || line_search == "backtracking",
                    "newton_solve: line_search 'none' or 'backtracking', not '{}'", line_search);
        newton::Options o;
        o.atol = atol;
        o.rtol = rtol;
        o.max_iterations = max_iterations;
        o.lagging = lag <= 1 ? newton::Lagging{} : newton::Lagging::fixed(lag);
        o.line_search = line_search == "none" ? newton::LineSearch::none : newton::LineSearch::backtracking;
        const newton::Result r = without_gil(error, [&] {
          const newton::Problem p = newton::assembled_problem(assembler, std::move(nf), values, name);
          return newton::solve(p, u, o);
        });
        py::dict d;
        d["converged"] = r.converged;
        d["reason"] = std::string(newton::to_string(r.reason));
        d["message"] = r.message;
        d["iterations"] = r.iterations;
        d["jacobian_refreshes"] = r.jacobian_refreshes;
        d["linear_solves"] = r.linear_solves;
        d["symbolic_analyses"] = r.symbolic_analyses;
        d["initial_residual_norm"] = r.initial_residual_norm;
        d["residual_norm"] = r.residual_norm;
        std::vector<double> history;
        for (const auto& it : r.history) history.push_back(it.residual_norm);
        d["residual_history"] = history;
        d["seconds"] = r.seconds;
        return py::make_tuple(to_numpy(std::move(u)), d);
      },
      py::arg("assembler"), py::arg("problem"), py::arg("parameter") = 1.0, py::arg("source") = py::none(),
      py::arg("bc") = py::none(), py::arg("u0") = py::none(), py::arg("name") = "newton",
      py::arg("atol") = 1e-10, py::arg("rtol") = 1e-10, py::arg("max_iterations") = 50, py::arg("lag") = 1,
      py::arg("line_search") = "none",
      R"((u, result): Newton on one of the library's problems:
  bratu        -Δu = λ e^u            (parameter: λ)
  quasilinear  -div((1 + u²)∇u) = f   (source: f)
  p_laplacian  -div(|∇u|^(p-2)∇u) = f (parameter: p, source: f)
The Jacobian is published as <name>/J and factorized through the store's cache. A stop without
convergence is not an error: result['converged'] and result['reason'] say why.)");
}

}  // namespace fem::python
