// Shared pieces of the Python bindings: zero-copy read-only views of stored arrays, numpy
// inputs as spans, Python callables as the assembly's functions, and the GIL rules.
//
// Views: a stored value is immutable and held by shared_ptr; a numpy view of it owns a copy of
// that shared_ptr through a capsule, so the memory outlives an erase or a replace of the key
// for as long as the view (or anything made from it, e.g. a SciPy matrix) lives. The views are
// marked read-only: numpy refuses writes instead of corrupting what other kernels read.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "fem/assembly/boundary.hpp"
#include "fem/assembly/forms.hpp"
#include "fem/csr.hpp"
#include "fem/mesh.hpp"
#include "fem/store.hpp"

namespace fem::python {

namespace py = pybind11;

/// A read-only numpy array over `data` (row-major `shape`) that keeps `owner` alive.
template <class T>
py::array readonly_view(const T* data, std::vector<py::ssize_t> shape, std::shared_ptr<const void> owner) {
  auto* holder = new std::shared_ptr<const void>(std::move(owner));
  py::capsule base(holder, [](void* p) { delete static_cast<std::shared_ptr<const void>*>(p); });
  // numpy wants a non-null pointer even for an empty array.
  static const T empty{};
  py::array a(py::dtype::of<T>(), std::move(shape), data ? data : &empty, base);  // C-order strides
  py::detail::array_proxy(a.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return a;
}
template <class T>
py::array readonly_view(std::span<const T> data, std::shared_ptr<const void> owner) {
  return readonly_view(data.data(), {static_cast<py::ssize_t>(data.size())}, std::move(owner));
}

/// A fresh writable array that takes the vector's memory (no copy).
template <class T>
py::array_t<T> to_numpy(std::vector<T>&& v, std::vector<py::ssize_t> shape = {}) {
  if (shape.empty()) shape = {static_cast<py::ssize_t>(v.size())};
  auto* owned = new std::vector<T>(std::move(v));
  py::capsule base(owned, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  static T empty{};
  return py::array_t<T>(std::move(shape), owned->empty() ? &empty : owned->data(), base);
}

/// A C-contiguous float64 array from anything numpy converts (a copy only when needed).
using DoubleArray = py::array_t<double, py::array::c_style | py::array::forcecast>;
inline std::span<const double> span_of(const DoubleArray& a) {
  return {a.data(), static_cast<std::size_t>(a.size())};
}

/// The first Python exception raised by a callback that runs inside a kernel (on any thread);
/// the kernel goes on with NaN, and the binding raises the exception once the kernel returns.
/// It also records that a kernel calls Python at all: such a kernel runs on one thread, since
/// its threads would only queue for the GIL (11x slower on two threads than on one).
class CallbackError {
 public:
  void add_callback() noexcept { callbacks_ = true; }
  bool has_callbacks() const noexcept { return callbacks_; }
  void capture() {
    std::lock_guard lock(mutex_);
    if (!error_) error_ = std::current_exception();
  }
  bool raised() const {
    std::lock_guard lock(mutex_);
    return error_ != nullptr;
  }
  /// Rethrow the captured exception, if any (with the GIL held).
  void rethrow() const {
    std::lock_guard lock(mutex_);
    if (error_) std::rethrow_exception(error_);
  }

 private:
  mutable std::mutex mutex_;
  std::exception_ptr error_;
  bool callbacks_ = false;  // set with the GIL held, before the kernel starts
};

/// A Python object held by C++ functions that may be copied and dropped on any thread with the
/// GIL released (a Newton problem, a form): the last owner takes the GIL to release it.
inline std::shared_ptr<py::object> hold_python(py::object f) {
  return std::shared_ptr<py::object>(new py::object(std::move(f)), [](py::object* o) {
    py::gil_scoped_acquire gil;
    delete o;
  });
}

/// The kernel threads' count for the calling thread (OpenMP's per-thread nthreads-var), set to
/// one while a kernel that calls Python runs.
class SerialRegion {
 public:
  explicit SerialRegion(bool serial);
  ~SerialRegion();
  SerialRegion(const SerialRegion&) = delete;
  SerialRegion& operator=(const SerialRegion&) = delete;

 private:
  int previous_ = 0;
};

/// Throws NumericalError naming `what` and the first entry that is NaN or infinite.
void require_finite(std::span<const double> values, const std::string& what);

/// `out` as a span when it is a writable, C-contiguous float64 array of `size` values (anything
/// else would be written through a temporary copy and lost): InvalidArgument otherwise.
std::span<double> output_array(py::handle out, std::size_t size, const char* what);

/// Integer indices checked to fit 32 bits, from an array of integers (floats refused rather than
/// truncated, 2^33 refused rather than wrapped).
std::vector<std::int32_t> checked_int32(py::handle a, const char* what);

/// A real number (a Python or numpy int or float, or an array of one value), else InvalidArgument
/// naming `what` and what was given (a complex number, a string, an array of several values),
/// not pybind11's bare RuntimeError.
double real_number(py::handle v, const std::string& what);

/// A float64 array of real numbers (a copy only when needed), else InvalidArgument naming
/// `what`: complex values are refused, not cast to their real parts with numpy's warning only.
DoubleArray real_array(py::handle a, const std::string& what);

/// f(x) for `count` points x (count × gdim) in one Python call: f takes an array of shape
/// (count, gdim) and returns count values (or one value for all). Takes the GIL itself.
assembly::BatchFunction batch_function(py::object f, int gdim, std::shared_ptr<CallbackError> error);
/// The same, one point at a time (for coefficients the kernels evaluate pointwise).
assembly::Function point_function(py::object f, int gdim, std::shared_ptr<CallbackError> error);
/// f with `components` values per point: f(x) returns (count, components) or (components,).
assembly::VectorFunction vector_function(py::object f, int gdim, int components,
                                         std::shared_ptr<CallbackError> error);

/// Run a kernel with the GIL released. A Python exception raised by one of its callbacks is
/// raised once the kernel returns, and takes precedence over whatever the kernel made of the
/// NaN it got instead.
template <class F>
auto without_gil(const std::shared_ptr<CallbackError>& error, F&& kernel) {
  try {
    if constexpr (std::is_void_v<decltype(kernel())>) {
      {
        SerialRegion serial(error && error->has_callbacks());
        py::gil_scoped_release release;
        kernel();
      }
      if (error) error->rethrow();
    } else {
      auto result = [&] {
        SerialRegion serial(error && error->has_callbacks());
        py::gil_scoped_release release;
        return kernel();
      }();
      if (error) error->rethrow();
      return result;
    }
  } catch (...) {
    if (error && error->raised()) error->rethrow();
    throw;
  }
}
template <class F>
auto without_gil(F&& kernel) {
  py::gil_scoped_release release;
  return kernel();
}

/// A stored value held by a pybind11 holder: pybind11 wants shared_ptr<T>, the store gives
/// shared_ptr<const T>; the bindings expose only const members.
template <class T>
std::shared_ptr<T> held(std::shared_ptr<const T> p) {
  return std::const_pointer_cast<T>(std::move(p));
}

/// The value of a store entry as a Python object (a read-only array view, fem.CsrMatrix, ...).
py::object stored_value(const Store& store, const std::string& key);
/// The tag of `tag`: a number as it is, a physical name of dimension `dim` (any when dim < 0)
/// resolved, or InvalidArgument naming `what` and listing the mesh's names.
int resolve_tag(const Mesh& mesh, py::handle tag, int dim, const char* what);
/// The constrained DOFs and values of a fem.DirichletBC.
/// The constrained DOFs and values of a fem.DirichletBC, checked to be of a space of num_dofs.
const assembly::DirichletValues& dirichlet_values(py::handle bc, index_t num_dofs);

void bind_store(py::module_& m);
void bind_mesh(py::module_& m);
void bind_assembly(py::module_& m);
void bind_solve(py::module_& m);
void bind_newton(py::module_& m);
void bind_eigen(py::module_& m);
void bind_time(py::module_& m);
void bind_flow(py::module_& m);
void bind_table(py::module_& m);

}  // namespace fem::python
