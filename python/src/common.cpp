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
