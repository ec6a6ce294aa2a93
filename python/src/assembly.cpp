// fem.FunctionSpace, fem.Assembler (the library's forms, with coefficients as numbers, per-cell
// arrays, {tag: value} or Python callables) and fem.DirichletBC.
#include "fem/assembly/assembly.hpp"

#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <cmath>
#include <limits>
#include <variant>

#include "common.hpp"
#include "fem/store.hpp"

namespace fem::python {

// --- Python callables as the assembly's functions ------------------------------------------

namespace {

/// f at count points: the Python result as `count × width` values.
void call_python(const py::object& f, std::size_t count, int gdim, const double* x, double* out, int width,
                 CallbackError& error) {
  py::gil_scoped_acquire gil;
  const auto fill_nan = [&] {
    std::fill(out, out + count * static_cast<std::size_t>(width), std::numeric_limits<double>::quiet_NaN());
  };
  if (error.raised()) return fill_nan();
  try {
    py::array_t<double> points({static_cast<py::ssize_t>(count), static_cast<py::ssize_t>(gdim)}, x);
    auto r = DoubleArray::ensure(f(points));
    if (!r) throw py::type_error("the function must return numbers");
    const auto n = static_cast<std::size_t>(r.size());
    const std::size_t want = count * static_cast<std::size_t>(width);
    if (n == want) {
      std::copy(r.data(), r.data() + n, out);
    } else if (n == static_cast<std::size_t>(width)) {  // one value (per component) for all points
      for (std::size_t i = 0; i < count; ++i)
        std::copy(r.data(), r.data() + n, out + i * static_cast<std::size_t>(width));
    } else {
      throw py::value_error(
          fmt::format("the function returned {} values for {} points of {} component(s)", n, count, width));
    }
  } catch (...) {
    error.capture();
    fill_nan();
  }
}

}  // namespace

assembly::BatchFunction batch_function(py::object f, int gdim, std::shared_ptr<CallbackError> error) {
  error->add_callback();
  auto held_f = hold_python(std::move(f));
  return [held_f, gdim, error](std::size_t count, const double* x, double* values) {
    call_python(*held_f, count, gdim, x, values, 1, *error);
  };
}

assembly::Function point_function(py::object f, int gdim, std::shared_ptr<CallbackError> error) {
  auto batch = batch_function(std::move(f), gdim, std::move(error));
  return [batch](const double* x) {
    double v = 0;
    batch(1, x, &v);
    return v;
  };
}

assembly::VectorFunction vector_function(py::object f, int gdim, int components,
                                         std::shared_ptr<CallbackError> error) {
  error->add_callback();
  auto held_f = hold_python(std::move(f));
  return [held_f, gdim, components, error](const double* x, double* value) {
    call_python(*held_f, 1, gdim, x, value, components, *error);
  };
}

namespace {

using assembly::Assembler;
using assembly::Coefficient;
using assembly::FunctionSpace;

/// Facet tags of `where`: a tag, a name, or a list of them.
std::vector<int> facet_tags(const Mesh& mesh, py::handle where, const char* what) {
  std::vector<int> tags;
  if (py::isinstance<py::list>(where) || py::isinstance<py::tuple>(where)) {
    for (py::handle t : where) tags.push_back(resolve_tag(mesh, t, mesh.tdim() - 1, what));
  } else {
    tags.push_back(resolve_tag(mesh, where, mesh.tdim() - 1, what));
  }
  return tags;
}

bool is_all(py::handle where) { return py::isinstance<py::str>(where) && where.cast<std::string>() == "all"; }

Coefficient coefficient(const FunctionSpace& V, py::handle c, const char* what,
                        const std::shared_ptr<CallbackError>& error) {
  if (c.is_none()) return Coefficient(1.0);
  // The values are checked by the library's Coefficient (finite, named by `what`).
  if (py::isinstance<py::float_>(c) || py::isinstance<py::int_>(c))
    return Coefficient::constant(c.cast<double>(), what);
  if (py::isinstance<py::dict>(c)) {
    std::map<int, double> values;
    std::optional<double> otherwise;
    for (auto [tag, value] : c.cast<py::dict>()) {
      const std::string of = fmt::format("{} {{{}: ...}}", what, std::string(py::repr(tag)));
      if (is_all(tag)) {
        otherwise = real_number(value, of);
        continue;
      }
      // A name and its number are one tag: two values for it are refused, as two for one cell.
      const int t = resolve_tag(V.mesh(), tag, V.mesh().tdim(), what);
      const double v = real_number(value, of);
      const auto [it, added] = values.emplace(t, v);
      FEM_EXPECTS(added || it->second == v, "{}: tag {} is given two values, {} and {}", what, t, it->second,
                  v);
    }
    return Coefficient::per_tag(std::move(values), otherwise, what);
  }
  if (PyCallable_Check(c.ptr()) && !py::isinstance<py::array>(c))
    return Coefficient::function(
        point_function(py::reinterpret_borrow<py::object>(c), V.mesh().gdim(), error));
  auto a = real_array(c, what);  // complex or non-numeric values refused in words, never cast
  FEM_EXPECTS(a, "{}: a number, one value per cell, {{tag: value}} or a function of x", what);
  if (a.size() == 1) return Coefficient::constant(a.data()[0], what);
  FEM_EXPECTS(a.size() == V.mesh().num_cells(), "{}: {} values for {} cells", what, a.size(),
              V.mesh().num_cells());
  return Coefficient::per_cell(std::vector<double>(a.data(), a.data() + a.size()), what);
}

/// The values of a matrix: into `out` (a writable float64 array of nnz entries) or a new matrix,
/// which carries the null space of the modes the form does not resist (the library's rule,
/// assembly::system_matrix: no conditions yet; DirichletBC.apply decides it again).
template <class Form>
py::object matrix(const Assembler& a, const Form& form, py::object out,
                  const std::shared_ptr<CallbackError>& error, const char* what) {
  if (out.is_none()) {
    auto m = without_gil(error, [&] {
      std::vector<double> values = prefaulted_vector<double>(a.pattern()->nnz());
      a.matrix_into(form, values);
      require_finite(values, what);
      if constexpr (std::is_same_v<Form, assembly::Mass>)
        return std::make_shared<const CsrMatrix>(a.pattern(), std::move(values));
      else
        return std::make_shared<const CsrMatrix>(assembly::system_matrix(a, std::move(values), {}));
    });
    return py::cast(held(std::move(m)));
  }
  std::span<double> v = output_array(out, a.pattern()->nnz(), what);
  without_gil(error, [&] { a.matrix_into(form, v); });
  require_finite(v, what);
  return out;
}

/// b (a new zero vector, or `out`, added to).
template <class F>
py::object vector(const Assembler& a, F&& assemble, py::object out,
                  const std::shared_ptr<CallbackError>& error, const char* what) {
  const auto n = static_cast<std::size_t>(a.space().num_dofs());
  if (out.is_none()) {
    std::vector<double> b(n, 0.0);
    without_gil(error, [&] { assemble(std::span<double>(b)); });
    require_finite(b, what);
    return to_numpy(std::move(b));
  }
  std::span<double> v = output_array(out, n, what);
  without_gil(error, [&] { assemble(v); });
  require_finite(v, what);
  return out;
}

struct DirichletBC {
  FunctionSpace V;
  assembly::DirichletValues values;
  /// Conditions of another space would index out of range (or silently constrain wrong DOFs).
  void check_size(std::size_t n, const char* what) const {
    FEM_EXPECTS(n == static_cast<std::size_t>(V.num_dofs()),
                "DirichletBC.{}: {} entries, but the conditions were made on the space {} of '{}' ({} DOFs)",
                what, n, V.name(), V.mesh_key(), V.num_dofs());
  }
};

/// fem.LockingWarning (a UserWarning): degree-1 elasticity of a nearly incompressible material.
PyObject* locking_warning = nullptr;

assembly::Elasticity elasticity_form(const Assembler& a, py::handle E, py::handle nu,
                                     const std::string& plane, const std::shared_ptr<CallbackError>& error) {
  FEM_EXPECTS(plane == "strain" || plane == "stress", "plane: 'strain' or 'stress', not '{}'", plane);
  return {coefficient(a.space(), E, "Young's modulus", error),
          nu.is_none() ? Coefficient(0.3) : coefficient(a.space(), nu, "Poisson's ratio", error),
          plane == "stress" ? assembly::Elasticity::Plane::stress : assembly::Elasticity::Plane::strain};
}

}  // namespace

void bind_assembly(py::module_& m) {
  locking_warning = PyErr_NewExceptionWithDoc("fem.LockingWarning",
                                              "Degree-1 elasticity of a nearly incompressible material: the "
                                              "displacement locks (fem::assembly::locking).",
                                              PyExc_UserWarning, nullptr);
  if (!locking_warning) throw py::error_already_set();
  m.add_object("LockingWarning", py::handle(locking_warning));
  py::class_<FunctionSpace>(m, "FunctionSpace", "A Lagrange space (P1/P2, Q1/Q2) on a stored mesh.")
      .def(py::init([](const std::string& mesh_key, int degree, int components) {
             return without_gil([&] { return FunctionSpace(mesh_key, degree, components); });
           }),
           py::arg("mesh"), py::arg("degree") = 1, py::arg("components") = 1,
           "The space on the mesh stored under the key `mesh`; its DOF map is cached in the store.")
      .def_property_readonly("num_dofs", &FunctionSpace::num_dofs)
      .def_property_readonly("name", &FunctionSpace::name)
      .def_property_readonly("degree", &FunctionSpace::degree)
      .def_property_readonly("components", &FunctionSpace::components)
      .def_property_readonly("mesh_key", &FunctionSpace::mesh_key)
      .def_property_readonly("mesh", [](const FunctionSpace& V) { return held(V.mesh_ptr()); })
      .def_property_readonly(
          "node_coordinates",
          [](const FunctionSpace& V) {
            const auto& d = V.dofmap();
            return readonly_view(d.coordinates.data(), {d.num_nodes, V.mesh().gdim()}, V.dofmap_ptr());
          },
          "Where each node sits (nodes × gdim); DOF i·components + k is component k of node i.")
      .def_property_readonly("cell_nodes",
                             [](const FunctionSpace& V) {
                               const auto& d = V.dofmap();
                               return readonly_view(d.cell_nodes.data(),
                                                    {V.mesh().num_cells(), d.nodes_per_cell}, V.dofmap_ptr());
                             })
      .def(
          "interpolate",
          [](const FunctionSpace& V, py::object f) {
            auto error = std::make_shared<CallbackError>();
            auto fn = vector_function(std::move(f), V.mesh().gdim(), V.components(), error);
            return to_numpy(without_gil(error, [&] { return assembly::interpolate(V, fn); }));
          },
          py::arg("f"), "The nodal interpolant of f(x) (x: (1, gdim) array; components values).")
      .def("__repr__", [](const FunctionSpace& V) {
        return fmt::format("<fem.FunctionSpace {} on {}: {} dofs>", V.name(), V.mesh_key(), V.num_dofs());
      });

  py::class_<Assembler, std::shared_ptr<Assembler>>(
      m, "Assembler", "Assembles the library's forms on a space through its cached plan.")
      .def(py::init([](const FunctionSpace& V) {
             return without_gil([&] { return std::make_shared<Assembler>(V); });
           }),
           py::arg("space"))
      .def_property_readonly("space", &Assembler::space)
      .def_property_readonly("pattern", [](const Assembler& a) { return held(a.pattern()); })
      .def(
          "diffusion",
          [](const Assembler& a, py::handle k, py::object out) {
            auto error = std::make_shared<CallbackError>();
            return matrix(a, assembly::Diffusion{coefficient(a.space(), k, "diffusion coefficient", error)},
                          out, error, "diffusion matrix");
          },
          py::arg("k") = py::none(), py::arg("out") = py::none(), "∫ k ∇u·∇v")
      .def(
          "mass",
          [](const Assembler& a, py::handle rho, py::object out) {
            auto error = std::make_shared<CallbackError>();
            return matrix(a, assembly::Mass{coefficient(a.space(), rho, "mass density", error)}, out, error,
                          "mass matrix");
          },
          py::arg("rho") = py::none(), py::arg("out") = py::none(), "∫ rho u·v")
      .def(
          "elasticity",
          [](const Assembler& a, py::handle E, py::handle nu, const std::string& plane, py::object out) {
            auto error = std::make_shared<CallbackError>();
            const assembly::Elasticity form = elasticity_form(a, E, nu, plane, error);
            py::object result = matrix(a, form, out, error, "elasticity matrix");
            // A locked displacement is no answer: said through Python's warnings (fem.LockingWarning).
            const auto locking = without_gil(error, [&] { return assembly::locking(a.space(), form); });
            if (locking.locks && PyErr_WarnEx(locking_warning, locking.warning().c_str(), 1) < 0)
              throw py::error_already_set();
            return result;
          },
          py::arg("E") = py::none(), py::arg("nu") = py::none(), py::arg("plane") = "strain",
          py::arg("out") = py::none(),
          "Linear elasticity ∫ σ(u):ε(v) from Young's modulus E and Poisson's ratio nu; a degree-1 space "
          "with a nearly incompressible material warns (fem.LockingWarning).")
      .def(
          "elasticity_locking",
          [](const Assembler& a, py::handle E, py::handle nu, const std::string& plane) {
            auto error = std::make_shared<CallbackError>();
            const assembly::Elasticity form = elasticity_form(a, E, nu, plane, error);
            const auto l = without_gil(error, [&] { return assembly::locking(a.space(), form); });
            py::dict d;
            d["lambda_over_mu"] = l.lambda_over_mu;
            d["h_over_L"] = l.h_over_L;
            d["indicator"] = l.indicator;
            d["locks"] = l.locks;
            d["warning"] = l.warning();
            return d;
          },
          py::arg("E") = py::none(), py::arg("nu") = py::none(), py::arg("plane") = "strain",
          "The volumetric-locking indicator of this elasticity form on the space (fem::assembly::locking): "
          "lambda_over_mu, h_over_L, indicator = (lambda/mu)(h/L)^2, locks, warning.")
      .def(
          "source",
          [](const Assembler& a, py::object f, py::object out) {
            auto error = std::make_shared<CallbackError>();
            const int gdim = a.space().mesh().gdim(), nc = a.space().components();
            if (nc == 1) {
              assembly::Source form;
              if (PyCallable_Check(f.ptr())) {
                form.batch = batch_function(f, gdim, error);
                form.f = point_function(f, gdim, error);
              } else {
                const double value =
                    real_number(f, "source: f (a number or a function of x on a scalar space)");
                form.f = [value](const double*) { return value; };
              }
              return vector(
                  a, [&](std::span<double> b) { a.vector_into(form, b); }, out, error, "source vector");
            }
            assembly::VectorSource form;
            if (PyCallable_Check(f.ptr())) {
              form.f = vector_function(f, gdim, nc, error);
            } else {
              auto c = real_array(f, "source");
              FEM_EXPECTS(c && c.size() == nc, "source: {} values for {} components", c ? c.size() : 0, nc);
              std::vector<double> value(c.data(), c.data() + nc);
              form.f = [value](const double*, double* out) { std::copy(value.begin(), value.end(), out); };
            }
            return vector(
                a, [&](std::span<double> b) { a.vector_into(form, b); }, out, error, "source vector");
          },
          py::arg("f"), py::arg("out") = py::none(),
          "∫ f·v: f a number (components values) or a function of x (an (n, gdim) array -> n values, or "
          "(n, components)); added to out when given.")
      .def(
          "neumann",
          [](const Assembler& a, py::handle where, py::object g, py::object out) {
            auto error = std::make_shared<CallbackError>();
            const Mesh& mesh = a.space().mesh();
            const int nc = a.space().components();
            assembly::Neumann form{is_all(where)
                                       ? assembly::FacetSet::all()
                                       : assembly::FacetSet::tagged(facet_tags(mesh, where, "neumann")),
                                   {}};
            if (PyCallable_Check(g.ptr())) {
              form.g = vector_function(g, mesh.gdim(), nc, error);
            } else {
              auto c = real_array(g, "neumann");
              FEM_EXPECTS(c && c.size() == nc, "neumann: {} values for {} components", c ? c.size() : 0, nc);
              std::vector<double> value(c.data(), c.data() + nc);
              form.g = [value](const double*, double* out) { std::copy(value.begin(), value.end(), out); };
            }
            return vector(
                a, [&](std::span<double> b) { a.vector_into(form, b); }, out, error, "Neumann vector");
          },
          py::arg("where"), py::arg("g"), py::arg("out") = py::none(),
          "∫_Γ g·v over the boundary facets `where` (a tag, a name, a list of them, or 'all': the whole "
          "boundary, tagged or not), each facet once.")
      .def(
          "diffusion_cell_gradient",
          [](const Assembler& a, const DoubleArray& w) {
            return to_numpy(without_gil([&] { return a.cell_gradient(assembly::Diffusion{}, span_of(w)); }));
          },
          py::arg("w"), "d/dk_c Σ_s w_s A_s for the diffusion matrix with per-cell k: one value per cell.")
      .def(
          "mass_cell_gradient",
          [](const Assembler& a, const DoubleArray& w) {
            return to_numpy(without_gil([&] { return a.cell_gradient(assembly::Mass{}, span_of(w)); }));
          },
          py::arg("w"), "d/drho_c Σ_s w_s M_s for the mass matrix with per-cell rho: one value per cell.");

  py::class_<DirichletBC>(m, "DirichletBC", "u = g on tagged facets, evaluated at the space's DOFs.")
      .def(py::init([](const FunctionSpace& V, py::dict conditions, int component) {
             auto error = std::make_shared<CallbackError>();
             std::vector<assembly::Dirichlet> list;
             for (auto [where, value] : conditions) {
               assembly::Dirichlet d;
               d.where = is_all(where) ? assembly::FacetSet::all()
                                       : assembly::FacetSet::tagged(facet_tags(V.mesh(), where, "dirichlet"));
               d.component = component;
               if (value.is_none()) {
                 d.value = nullptr;
               } else if (PyCallable_Check(value.ptr())) {
                 d.value = point_function(py::reinterpret_borrow<py::object>(value), V.mesh().gdim(), error);
               } else {
                 const double c =
                     real_number(value, fmt::format("dirichlet {{{}: ...}}", std::string(py::repr(where))));
                 d.value = [c](const double*) { return c; };
               }
               list.push_back(std::move(d));
             }
             auto values = without_gil(error, [&] { return assembly::dirichlet_values(V, list); });
             require_finite(values.values, "Dirichlet values");
             return DirichletBC{V, std::move(values)};
           }),
           py::arg("space"), py::arg("conditions"), py::arg("component") = -1,
           "conditions: {where: value}, where a facet tag, a name, a list of them or 'all' (the whole "
           "boundary), "
           "value a number, a function of x or None (zero). A condition on a tag wins over one on 'all', "
           "whatever the order; two tags that share a node must give it the same value (InvalidArgument "
           "naming both otherwise).")
      .def_property_readonly(
          "space", [](const DirichletBC& bc) { return bc.V; },
          "The space the conditions were made on (they apply to its matrices only).")
      .def(
          "check_pattern",
          [](const DirichletBC& bc, const CsrPattern& pattern, const std::string& what) {
            without_gil([&] { assembly::require_pattern_of(pattern, bc.V, what); });
          },
          py::arg("pattern"), py::arg("what") = "DirichletBC: the pattern",
          "InvalidArgument, naming both spaces, unless `pattern` is the pattern of the conditions' space.")
      .def_property_readonly(
          "dofs", [](const DirichletBC& bc) { return to_numpy(std::vector<index_t>(bc.values.dofs)); })
      .def_property_readonly(
          "values", [](const DirichletBC& bc) { return to_numpy(std::vector<double>(bc.values.values)); })
      .def(
          "apply",
          [](const DirichletBC& bc, const CsrMatrix& A, py::object b) {
            bc.check_size(static_cast<std::size_t>(A.rows()), "apply");
            // A count of DOFs is no identity: the library checks that A is a matrix of the space.
            without_gil([&] { assembly::require_pattern_of(A.pattern(), bc.V, "DirichletBC.apply: A"); });
            std::vector<double> values(A.values().begin(), A.values().end());
            std::vector<double> rhs(static_cast<std::size_t>(A.rows()), 0.0);
            if (!b.is_none()) {
              auto given = span_of(b.cast<DoubleArray>());
              FEM_EXPECTS(given.size() == rhs.size(), "b: {} values, the matrix has {} rows", given.size(),
                          rhs.size());
              std::copy(given.begin(), given.end(), rhs.begin());
            }
            auto out = without_gil([&] {
              assembly::apply_dirichlet(bc.values, A.pattern(), values, rhs);
              return std::make_shared<const CsrMatrix>(
                  assembly::constrained_matrix(A, bc.V, std::move(values), bc.values));
            });
            return py::make_tuple(held(std::move(out)), to_numpy(std::move(rhs)));
          },
          py::arg("A"), py::arg("b") = py::none(),
          "(A', b'): the values imposed symmetrically (rows and columns zeroed but the diagonal, b lifted), "
          "A' "
          "carrying the null space of the motions the conditions leave free (none when they stop them all). "
          "Without b, b' is what the conditions add to every right-hand side (A' x = zero(b) + b').")
      .def(
          "zero",
          [](const DirichletBC& bc, const DoubleArray& b) {
            auto v = span_of(b);
            bc.check_size(v.size(), "zero");
            std::vector<double> out(v.begin(), v.end());
            assembly::zero_dirichlet(bc.values, out);
            return to_numpy(std::move(out));
          },
          py::arg("b"), "A copy of b with the constrained entries zero.")
      .def(
          "set",
          [](const DirichletBC& bc, const DoubleArray& x) {
            auto v = span_of(x);
            bc.check_size(v.size(), "set");
            std::vector<double> out(v.begin(), v.end());
            assembly::set_dirichlet(bc.values, out);
            return to_numpy(std::move(out));
          },
          py::arg("x"), "A copy of x with the constrained entries set to their values.");
}

// The Newton bindings need the conditions' values.
const assembly::DirichletValues& dirichlet_values(py::handle bc, index_t num_dofs) {
  const auto& conditions = bc.cast<const DirichletBC&>();
  conditions.check_size(static_cast<std::size_t>(num_dofs), "(in newton_solve)");
  return conditions.values;
}

}  // namespace fem::python
