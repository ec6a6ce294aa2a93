// The C ABI of libfem_solve (fem/solve/c_api.h): cached factorizations and solves by key.
#include "fem/solve/c_api.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "fem/array.hpp"
#include "fem/csr.hpp"
#include "fem/detail/c_api_guard.hpp"
#include "fem/solve/solve.hpp"
#include "fem/store.hpp"

namespace {

using fem::capi::guarded;
using fem::capi::key_arg;
namespace solve = fem::solve;

constexpr double default_max_relative_residual = solve::Options{}.max_relative_residual;

solve::Options options_of(const fem_solve_options* o) {
  solve::Options s;
  if (o == nullptr) return s;
  FEM_EXPECTS(o->backend >= FEM_BACKEND_AUTOMATIC && o->backend <= FEM_BACKEND_LU,
              "solve options: unknown backend {} (FEM_BACKEND_AUTOMATIC .. FEM_BACKEND_LU)", o->backend);
  FEM_EXPECTS(o->ordering >= FEM_ORDERING_AUTOMATIC && o->ordering <= FEM_ORDERING_NATURAL,
              "solve options: unknown ordering {} (FEM_ORDERING_AUTOMATIC .. FEM_ORDERING_NATURAL)",
              o->ordering);
  FEM_EXPECTS(o->refinement_steps >= 0 && o->refinement_steps <= 100,
              "solve options: refinement_steps {} is outside 0..100", o->refinement_steps);
  FEM_EXPECTS(o->max_relative_residual >= 0, "solve options: max_relative_residual {} is not a tolerance",
              o->max_relative_residual);  // NaN fails too
  s.backend = static_cast<solve::Backend>(o->backend);
  s.ordering = static_cast<solve::Ordering>(o->ordering);
  if (!solve::available(s.backend))
    throw fem::NotCompiled("SuiteSparse", fmt::format("the {} backend", solve::to_string(s.backend)));
  if (!solve::available(s.ordering))
    throw fem::NotCompiled("METIS", fmt::format("the {} ordering", solve::to_string(s.ordering)));
  s.refinement_steps = o->refinement_steps;
  s.max_relative_residual =
      o->max_relative_residual == 0 ? default_max_relative_residual : o->max_relative_residual;
  return s;
}

/// The number of rows of the (square) matrix under key.
fem::index_t rows_of(const std::string& key) {
  const auto A = fem::store().get<fem::CsrMatrix>(key);
  if (A->rows() != A->cols())
    throw fem::DimensionMismatch(
        fmt::format("solve: the matrix under '{}' is {} x {}, not square", key, A->rows(), A->cols()));
  return A->rows();
}

int solve_pointers(const char* name, const char* matrix_key, const double* B, double* X, int64_t n,
                   int64_t nrhs, bool transpose, const fem_solve_options* options) {
  return guarded([&] {
    const std::string key(key_arg(matrix_key, "matrix_key"));
    const solve::Options o = options_of(options);
    const fem::index_t rows = rows_of(key);
    if (n != rows)
      throw fem::DimensionMismatch(
          fmt::format("{}: the matrix under '{}' is {} x {}, but n = {}", name, key, rows, rows, n));
    FEM_EXPECTS(nrhs >= 0 && nrhs <= std::numeric_limits<fem::index_t>::max(), "{}: nrhs = {}", name, nrhs);
    const auto total = static_cast<std::size_t>(n) * static_cast<std::size_t>(nrhs);
    if (total == 0) return;
    FEM_EXPECTS(B != nullptr && X != nullptr, "{}: b or x is a null pointer", name);
    const std::span<const double> b(B, total);
    const auto k = static_cast<fem::index_t>(nrhs);
    auto& store = fem::store();
    const std::vector<double> x =
        transpose ? (k == 1 ? solve::solve_transpose(store, key, b, o)
                            : solve::solve_transpose_block(store, key, b, k, o))
                  : (k == 1 ? solve::solve(store, key, b, o) : solve::solve_block(store, key, b, k, o));
    std::copy(x.begin(), x.end(), X);
  });
}

int solve_keys(const char* name, const char* matrix_key, const char* b_key, const char* x_key, bool transpose,
               const fem_solve_options* options, uint64_t* version) {
  return guarded([&] {
    const std::string key(key_arg(matrix_key, "matrix_key"));
    const std::string bkey(key_arg(b_key, "b_key")), xkey(key_arg(x_key, "x_key"));
    fem::Store::validate_key(xkey);
    const solve::Options o = options_of(options);
    const fem::index_t rows = rows_of(key);
    auto& store = fem::store();
    const auto b = store.get<fem::Array<double>>(bkey);
    const auto& shape = b->shape();
    FEM_EXPECTS(
        (b->ndim() == 1 || b->ndim() == 2) && shape[0] == rows,
        "{}: the matrix under '{}' is {} x {}, the right-hand side under '{}' has shape {} (expected [{}] or "
        "[{}, nrhs])",
        name, key, rows, rows, bkey, fem::shape_string(shape), rows, rows);
    const std::int64_t nrhs = b->ndim() == 2 ? shape[1] : 1;
    FEM_EXPECTS(nrhs <= std::numeric_limits<fem::index_t>::max(), "{}: {} right-hand sides", name, nrhs);
    const auto n = static_cast<std::size_t>(rows), k = static_cast<std::size_t>(nrhs);
    std::vector<double> x;
    if (n * k > 0) {
      // Row-major [n, nrhs] in the store, column-major blocks for the solver.
      std::vector<double> B(n * k);
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < k; ++j) B[j * n + i] = (*b)[i * k + j];
      const auto m = static_cast<fem::index_t>(nrhs);
      const std::vector<double> X =
          transpose ? (m == 1 ? solve::solve_transpose(store, key, B, o)
                              : solve::solve_transpose_block(store, key, B, m, o))
                    : (m == 1 ? solve::solve(store, key, B, o) : solve::solve_block(store, key, B, m, o));
      x.resize(n * k);
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < k; ++j) x[i * k + j] = X[j * n + i];
    }
    const fem::Version v = store.put(xkey, fem::Array<double>(shape, std::move(x)));
    if (version) *version = v;
  });
}

template <std::size_t N>
void copy_name(char (&out)[N], std::string_view name) {
  std::snprintf(out, N, "%.*s", static_cast<int>(name.size()), name.data());
}

}  // namespace

extern "C" {

int fem_solve_options_default(fem_solve_options* out) {
  return guarded([&] {
    FEM_EXPECTS(out != nullptr, "fem_solve_options_default: out is a null pointer");
    const solve::Options d;
    *out = fem_solve_options{static_cast<int32_t>(d.backend), static_cast<int32_t>(d.ordering),
                             d.refinement_steps, d.max_relative_residual};
  });
}

int fem_factorize(const char* matrix_key, const fem_solve_options* options, fem_factorization_info* info) {
  return guarded([&] {
    const std::string key(key_arg(matrix_key, "matrix_key"));
    const auto f = solve::factorization(fem::store(), key, options_of(options));
    if (info == nullptr) return;
    fem_factorization_info r{};
    copy_name(r.backend, solve::to_string(f->backend()));
    copy_name(r.ordering, solve::to_string(f->ordering()));
    r.n = f->size();
    r.factor_nonzeros = static_cast<int64_t>(f->factor_nonzeros());
    r.bytes = static_cast<int64_t>(f->bytes());
    r.symbolic_analyses = f->counts().symbolic_analyses;
    r.factorizations = f->counts().factorizations;
    r.null_space_dimension = f->null_space() ? f->null_space()->dimension() : 0;
    *info = r;
  });
}

int fem_solve(const char* matrix_key, const double* b, double* x, int64_t n,
              const fem_solve_options* options) {
  return solve_pointers("fem_solve", matrix_key, b, x, n, 1, false, options);
}
int fem_solve_transpose(const char* matrix_key, const double* b, double* x, int64_t n,
                        const fem_solve_options* options) {
  return solve_pointers("fem_solve_transpose", matrix_key, b, x, n, 1, true, options);
}
int fem_solve_block(const char* matrix_key, const double* B, double* X, int64_t n, int64_t nrhs,
                    const fem_solve_options* options) {
  return solve_pointers("fem_solve_block", matrix_key, B, X, n, nrhs, false, options);
}
int fem_solve_transpose_block(const char* matrix_key, const double* B, double* X, int64_t n, int64_t nrhs,
                              const fem_solve_options* options) {
  return solve_pointers("fem_solve_transpose_block", matrix_key, B, X, n, nrhs, true, options);
}

int fem_solve_keys(const char* matrix_key, const char* b_key, const char* x_key,
                   const fem_solve_options* options, uint64_t* version) {
  return solve_keys("fem_solve_keys", matrix_key, b_key, x_key, false, options, version);
}
int fem_solve_transpose_keys(const char* matrix_key, const char* b_key, const char* x_key,
                             const fem_solve_options* options, uint64_t* version) {
  return solve_keys("fem_solve_transpose_keys", matrix_key, b_key, x_key, true, options, version);
}

}  // extern "C"
