// Test support for assembly: a direct solve with Eigen (the solve kernel is tested on its own)
// and convergence-rate bookkeeping.
#pragma once

#include <Eigen/SparseCholesky>
#include <Eigen/SparseCore>
#include <cmath>
#include <span>
#include <vector>

#include "fem/csr.hpp"

namespace fem::testing {

inline Eigen::SparseMatrix<double, Eigen::RowMajor, int> to_eigen(const CsrPattern& p,
                                                                  std::span<const double> values) {
  return Eigen::Map<const Eigen::SparseMatrix<double, Eigen::RowMajor, int>>(
      p.rows(), p.cols(), static_cast<int>(p.nnz()), p.row_offsets().data(), p.col_indices().data(),
      values.data());
}

/// Solve the SPD system with Eigen's LDLT.
inline std::vector<double> solve_spd(const CsrPattern& p, std::span<const double> values,
                                     std::span<const double> b) {
  Eigen::SparseMatrix<double> A = to_eigen(p, values);
  Eigen::SimplicialLDLT<Eigen::SparseMatrix<double>> ldlt(A);
  Eigen::VectorXd x =
      ldlt.solve(Eigen::Map<const Eigen::VectorXd>(b.data(), static_cast<Eigen::Index>(b.size())));
  return {x.data(), x.data() + x.size()};
}

/// log2 ratio of successive errors on meshes refined by 2.
inline double rate(double coarse, double fine) { return std::log2(coarse / fine); }

}  // namespace fem::testing
