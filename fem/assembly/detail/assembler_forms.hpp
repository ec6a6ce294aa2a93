// Internal: what the Assembler's translation units share (assembler.cpp: construction, device,
// vectors; assembler_scalar.cpp: diffusion and mass; assembler_elasticity.cpp: elasticity). The
// bilinear forms are split so that a build's cores compile them side by side: each instantiates
// the element kernels for every cell type.
#pragma once

#include <mutex>

#include "fem/assembly/assembler.hpp"
#include "fem/assembly/detail/kernels.hpp"
#include "fem/assembly/device.hpp"

namespace fem::assembly::detail {

// A Coefficient as the (cell, tag, x) callable the kernels take.
struct CoefficientRef {
  const Coefficient* c;
  double operator()(index_t cell, int tag, const double* x) const { return (*c)(cell, tag, x); }
};

// A constant, inlined into the kernel: the general callable's branches cost as much as the
// element math of P1 forms.
struct Constant {
  double value;
  double operator()(index_t, int, const double*) const { return value; }
};

// Call f(coefficient callable) with the cheapest callable for each coefficient.
template <class F>
void with_coefficient(const Coefficient& c, F&& f) {
  if (c.kind() == Coefficient::Kind::constant)
    f(Constant{c(0, 0, nullptr)});
  else
    f(CoefficientRef{&c});
}

inline bool affine(const FunctionSpace& V) {
  const CellType g = V.mesh().cell_type();
  return g == CellType::line2 || g == CellType::tri3 || g == CellType::tet4;
}

// A bilinear form on the device: into its scratch buffer, then copied back into `values`.
template <class Form>
void assemble_on_device(const detail::DeviceEngine& device, const Form& form, int degree, std::size_t nnz,
                        std::span<double> values) {
  FEM_EXPECTS(values.size() == nnz, "matrix values: {} given, the pattern has {} nonzeros", values.size(),
              nnz);
  std::lock_guard lock(device.scratch_mutex());
  gpu::DeviceBuffer<double>& scratch = device.scratch();
  device.matrix_into_device(form, degree, scratch);
  device.download(scratch, values);
}

}  // namespace fem::assembly::detail
