// fem._eigsh and fem._count_eigenvalues_below: fem::eigen on matrices under store keys (the
// Python wrapper fem.eigsh publishes SciPy and fem.CsrMatrix inputs under temporary keys).
#include "fem/eigen/eigen.hpp"

#include <pybind11/stl.h>

#include <optional>

#include "common.hpp"

namespace fem::python {
namespace {

eigen::Options options(const std::string& which, index_t count, double shift, double lower, double upper,
                       py::object constrained, bool lumped, double tolerance, index_t max_iterations,
                       index_t subspace, bool verify, py::object start, index_t dense_below) {
  eigen::Options o;
  if (which == "smallest") {
    o.which = eigen::Which::smallest;
  } else if (which == "nearest") {
    o.which = eigen::Which::nearest;
  } else if (which == "interval") {
    o.which = eigen::Which::interval;
  } else {
    throw InvalidArgument(fmt::format("eigsh: which '{}': smallest, nearest or interval", which));
  }
  o.count = count;
  o.shift = shift;
  o.lower = lower;
  o.upper = upper;
  if (!constrained.is_none()) o.constrained = checked_int32(constrained, "eigsh: constrained");
  o.lumped = lumped;
  o.tolerance = tolerance;
  o.max_iterations = max_iterations;
  FEM_EXPECTS(subspace >= 0, "eigsh: ncv {} (0: automatic)", subspace);
  o.subspace = subspace;
  o.verify = verify;
  if (!start.is_none()) {
    const DoubleArray v = real_array(start, "eigsh: v0");
    FEM_EXPECTS(v.ndim() == 1, "eigsh: v0 must be a vector, not {} dimensions", v.ndim());
    o.start.assign(v.data(), v.data() + v.size());
  }
  FEM_EXPECTS(dense_below >= 0, "eigsh: dense_below {}", dense_below);
  o.dense_below = dense_below;
  return o;
}

}  // namespace

void bind_eigen(py::module_& m) {
  m.def(
      "_eigsh",
      [](const std::string& K, const std::string& M, const std::string& which, index_t count, double shift,
         double lower, double upper, py::object constrained, bool lumped, double tolerance,
         index_t max_iterations, index_t subspace, bool verify, py::object start, index_t dense_below) {
        const eigen::Options o = options(which, count, shift, lower, upper, constrained, lumped, tolerance,
                                         max_iterations, subspace, verify, start, dense_below);
        eigen::Result r = without_gil([&] { return eigen::solve(fem::store(), K, M, o); });
        const auto modes = static_cast<py::ssize_t>(r.modes());
        py::dict info;
        info["sturm_count"] = r.sturm_count;
        info["missing"] = r.missing;
        info["converged"] = r.converged;
        info["residuals"] = to_numpy(std::vector<double>(r.residuals));
        info["residual_max"] = r.residual_max;
        info["orthogonality_max"] = r.orthogonality_max;
        info["shift"] = r.shift;
        info["method"] = r.method;
        info["backend"] =
            r.method.rfind("dense", 0) == 0 ? std::string() : std::string(solve::to_string(r.backend));
        info["restarts"] = r.restarts;
        info["operator_applications"] = r.operator_applications;
        info["sturm_factorizations"] = r.sturm_factorizations;
        info["factor_nonzeros"] = r.factor_nonzeros;
        info["factorize_seconds"] = r.factorize_seconds;
        info["solve_seconds"] = r.solve_seconds;
        info["log"] = r.log;
        const auto n = static_cast<py::ssize_t>(r.size);
        // The column-major n × modes block as a (modes, n) C-order array, returned transposed:
        // an (n, modes) view, no copy.
        py::array_t<double> rows = to_numpy(std::move(r.vectors), {modes, n});
        return py::make_tuple(to_numpy(std::move(r.eigenvalues)), rows.attr("T"), info);
      },
      py::arg("K"), py::arg("M"), py::arg("which"), py::arg("count"), py::arg("shift"), py::arg("lower"),
      py::arg("upper"), py::arg("constrained"), py::arg("lumped"), py::arg("tolerance"),
      py::arg("max_iterations"), py::arg("subspace"), py::arg("verify"), py::arg("start"),
      py::arg("dense_below"), "fem::eigen::solve on store keys (fem.eigsh is the interface).");
  m.def(
      "_count_eigenvalues_below",
      [](const std::string& K, const std::string& M, double sigma, py::object constrained, bool lumped) {
        eigen::Options o;
        if (!constrained.is_none()) o.constrained = checked_int32(constrained, "constrained");
        o.lumped = lumped;
        return without_gil([&] { return eigen::count_below(fem::store(), K, M, sigma, o); });
      },
      py::arg("K"), py::arg("M"), py::arg("sigma"), py::arg("constrained"), py::arg("lumped"),
      "fem::eigen::count_below on store keys (fem.count_eigenvalues_below is the interface).");
}

}  // namespace fem::python
