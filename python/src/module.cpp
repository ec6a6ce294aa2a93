// fem._fem: the extension module behind `import fem`. One exception family: fem.Error and its
// subclasses, each also a subclass of the matching built-in exception (fem.KeyError is a
// KeyError, fem.InvalidArgument a ValueError, ...), so both `except fem.Error` and the usual
// Python idioms catch them.
#include <pybind11/pybind11.h>

#include "common.hpp"
#include "fem/c_api.h"
#include "fem/error.hpp"
#include "fem/threads.hpp"

namespace fem::python {
namespace {

PyObject* new_exception(py::module_& m, const char* name, PyObject* base, PyObject* builtin,
                        const char* doc) {
  const std::string qualified = std::string("fem.") + name;
  py::object bases = builtin ? py::object(py::make_tuple(py::handle(base), py::handle(builtin)))
                             : py::object(py::reinterpret_borrow<py::object>(base));
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases.ptr(), nullptr);
  if (!type) throw py::error_already_set();
  m.add_object(name, py::handle(type));
  return type;
}

// The exception types, for the translator (a plain function: pybind11 takes no captures).
PyObject *error, *key_error, *type_error, *invalid_key, *invalid, *parse, *numerical, *not_compiled;

void translate(std::exception_ptr p) {
  try {
    if (p) std::rethrow_exception(p);
  } catch (const fem::KeyError& e) {
    PyErr_SetString(key_error, e.what());
  } catch (const fem::TypeError& e) {
    PyErr_SetString(type_error, e.what());
  } catch (const fem::InvalidKey& e) {
    PyErr_SetString(invalid_key, e.what());
  } catch (const fem::InvalidArgument& e) {
    PyErr_SetString(invalid, e.what());
  } catch (const fem::ParseError& e) {
    PyErr_SetString(parse, e.what());
  } catch (const fem::NumericalError& e) {
    PyErr_SetString(numerical, e.what());
  } catch (const fem::NotCompiled& e) {
    PyErr_SetString(not_compiled, e.what());
  } catch (const fem::Error& e) {
    PyErr_SetString(error, e.what());
  }
}

}  // namespace
}  // namespace fem::python

PYBIND11_MODULE(_fem, m) {
  using namespace fem::python;
  m.doc() = "Finite-element kernels (mesh, assembly, solve, Newton, eigen, time) sharing one store";

  error = new_exception(m, "Error", PyExc_Exception, nullptr, "Base of every fem error.");
  key_error = new_exception(m, "KeyError", error, PyExc_KeyError,
                            "No entry under that key (the message names the nearest keys).");
  type_error = new_exception(m, "TypeError", error, PyExc_TypeError, "The entry holds another type.");
  invalid_key = new_exception(m, "InvalidKey", error, PyExc_ValueError, "An empty or malformed key.");
  invalid = new_exception(m, "InvalidArgument", error, PyExc_ValueError,
                          "A bad argument: a shape, a size, a value out of range.");
  parse = new_exception(m, "ParseError", error, PyExc_ValueError,
                        "A bad input file (the message names the file and the line).");
  numerical = new_exception(m, "NumericalError", error, PyExc_ArithmeticError,
                            "A singular or indefinite matrix, non-finite values, an inaccurate solve.");
  not_compiled = new_exception(m, "NotCompiled", error, PyExc_NotImplementedError,
                               "A feature this build lacks (a backend, CUDA).");

  py::register_exception_translator(&translate);

  m.attr("c_api_version") = fem_abi_version();
  // For tests: run the kernels' parallel paths on small meshes (fem/threads.hpp). Returns the
  // previous (adaptive, grain_scale).
  m.def("_set_thread_policy", [](bool adaptive, double grain_scale) {
    const fem::ThreadPolicy previous = fem::thread_policy();
    fem::set_thread_policy({adaptive, grain_scale});
    return py::make_tuple(previous.adaptive, previous.grain_scale);
  });
  bind_store(m);
  bind_mesh(m);
  bind_assembly(m);
  bind_solve(m);
  bind_newton(m);
  bind_eigen(m);
  bind_time(m);
  bind_flow(m);
  bind_table(m);
}
