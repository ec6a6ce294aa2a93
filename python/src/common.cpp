// The bindings' shared helpers (common.hpp).
#include "common.hpp"

#include <omp.h>

#include <cmath>
#include <limits>

#include "fem/error.hpp"

namespace fem::python {

SerialRegion::SerialRegion(bool serial) {
  if (!serial) return;
  previous_ = omp_get_max_threads();
  omp_set_num_threads(1);
}

SerialRegion::~SerialRegion() {
  if (previous_ > 0) omp_set_num_threads(previous_);
}

void require_finite(std::span<const double> values, const std::string& what) {
  for (std::size_t i = 0; i < values.size(); ++i)
    if (!std::isfinite(values[i]))
      throw NumericalError(
          fmt::format("{}: entry {} is {} (a coefficient, source or callable gave a non-finite value)", what,
                      i, values[i]));
}

std::span<double> output_array(py::handle out, std::size_t size, const char* what) {
  using Exact = py::array_t<double, py::array::c_style>;
  FEM_EXPECTS(py::isinstance<Exact>(out),
              "{}: out must be a C-contiguous float64 numpy array (it is written in place)", what);
  auto a = py::reinterpret_borrow<Exact>(out);
  FEM_EXPECTS(a.writeable(), "{}: out is read-only", what);
  FEM_EXPECTS(a.ndim() == 1 && static_cast<std::size_t>(a.size()) == size,
              "{}: out has shape {}, {} values wanted", what, std::string(py::str(out.attr("shape"))), size);
  return {a.mutable_data(), size};
}

namespace {
std::string described(py::handle v) {
  std::string r = py::repr(v);
  if (r.size() > 60) r = r.substr(0, 57) + "...";
  return fmt::format("{} ({})", r, std::string(py::str(py::type::handle_of(v).attr("__name__"))));
}
}  // namespace

double real_number(py::handle v, const std::string& what) {
  if (py::isinstance<py::bool_>(v) || py::isinstance<py::str>(v) || py::isinstance<py::bytes>(v) ||
      PyComplex_Check(v.ptr()))
    throw InvalidArgument(fmt::format("{}: {} is not a real number", what, described(v)));
  if (PyFloat_Check(v.ptr()) || PyLong_Check(v.ptr())) return v.cast<double>();
  py::array a = py::array::ensure(v);  // numpy scalars and arrays; nullptr for anything else
  if (!a) throw InvalidArgument(fmt::format("{}: {} is not a number", what, described(v)));
  const char kind = a.dtype().kind();
  if (kind == 'c')
    throw InvalidArgument(
        fmt::format("{}: {} is complex; the kernels take real numbers", what, described(v)));
  if (kind != 'f' && kind != 'i' && kind != 'u')
    throw InvalidArgument(fmt::format("{}: {} is not a number", what, described(v)));
  if (a.size() != 1)
    throw InvalidArgument(fmt::format("{}: an array of {} values where one number belongs", what, a.size()));
  return DoubleArray::ensure(a).data()[0];
}

DoubleArray real_array(py::handle a, const std::string& what) {
  py::array given = py::array::ensure(a);
  if (!given) throw InvalidArgument(fmt::format("{}: {} is not an array of numbers", what, described(a)));
  const char kind = given.dtype().kind();
  if (kind == 'c')
    throw InvalidArgument(
        fmt::format("{}: the values are complex (dtype {}); the kernels solve real systems "
                    "(solve for the real and imaginary parts separately)",
                    what, std::string(py::str(given.dtype()))));
  if (kind != 'f' && kind != 'i' && kind != 'u' && kind != 'b')
    throw InvalidArgument(
        fmt::format("{}: dtype {} is not numeric", what, std::string(py::str(given.dtype()))));
  return DoubleArray::ensure(given);
}

std::vector<std::int32_t> checked_int32(py::handle a, const char* what) {
  py::array given = py::array::ensure(a);
  FEM_EXPECTS(given, "{}: not an array of integers", what);
  const char kind = given.dtype().kind();
  FEM_EXPECTS(kind == 'i' || kind == 'u' || given.size() == 0, "{}: integers wanted, not dtype {}", what,
              std::string(py::str(given.dtype())));
  if (kind == 'u' && given.dtype().itemsize() == 8) {
    py::array_t<std::uint64_t, py::array::c_style | py::array::forcecast> u(given);
    for (py::ssize_t i = 0; i < u.size(); ++i)
      FEM_EXPECTS(u.data()[i] <= static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max()),
                  "{}: entry {} is {}, beyond 32-bit indices", what, i, u.data()[i]);
  }
  py::array_t<std::int64_t, py::array::c_style | py::array::forcecast> c(given);
  std::vector<std::int32_t> out(static_cast<std::size_t>(c.size()));
  for (py::ssize_t i = 0; i < c.size(); ++i) {
    const std::int64_t v = c.data()[i];
    FEM_EXPECTS(
        v >= std::numeric_limits<std::int32_t>::min() && v <= std::numeric_limits<std::int32_t>::max(),
        "{}: entry {} is {}, beyond 32 bits", what, i, v);
    out[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(v);
  }
  return out;
}

}  // namespace fem::python
