// The C ABI of libfem_eigen (fem/eigen/c_api.h): eigenpairs of stored matrices, published by key.
#include "fem/eigen/c_api.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "fem/array.hpp"
#include "fem/detail/c_api_guard.hpp"
#include "fem/eigen/eigen.hpp"
#include "fem/store.hpp"

namespace {

using fem::capi::guarded;
using fem::capi::key_arg;
namespace eigen = fem::eigen;

eigen::Options options_of(const fem_eigen_options* o, const char* name) {
  eigen::Options s;
  if (o == nullptr) return s;
  FEM_EXPECTS(o->which >= FEM_EIGEN_SMALLEST && o->which <= FEM_EIGEN_INTERVAL,
              "{}: unknown which {} (FEM_EIGEN_SMALLEST, _NEAREST or _INTERVAL)", name, o->which);
  FEM_EXPECTS(o->nconstrained >= 0, "{}: nconstrained is {}", name, o->nconstrained);
  FEM_EXPECTS(o->nconstrained == 0 || o->constrained != nullptr, "{}: constrained is a null pointer", name);
  s.which = static_cast<eigen::Which>(o->which);
  s.count = o->count;
  s.shift = o->shift;
  s.lower = o->lower;
  s.upper = o->upper;
  s.constrained.assign(o->constrained, o->constrained + o->nconstrained);
  s.lumped = o->lumped != 0;
  s.verify = o->verify != 0;
  s.tolerance = o->tolerance;  // the rest is checked by eigen::solve, in its words
  s.max_iterations = o->max_iterations;
  FEM_EXPECTS(o->subspace >= 0, "{}: subspace is {} (0: automatic)", name, o->subspace);
  s.subspace = o->subspace;
  FEM_EXPECTS(o->dense_below >= 0, "{}: dense_below is {}", name, o->dense_below);
  s.dense_below = o->dense_below;
  return s;
}

template <std::size_t N>
void copy_text(char (&out)[N], std::string_view text) {
  std::snprintf(out, N, "%.*s", static_cast<int>(text.size()), text.data());
}

}  // namespace

extern "C" {

int fem_eigen_options_default(fem_eigen_options* out) {
  return guarded([&] {
    FEM_EXPECTS(out != nullptr, "fem_eigen_options_default: out is a null pointer");
    const eigen::Options d;
    fem_eigen_options o{};
    o.which = static_cast<int32_t>(d.which);
    o.count = d.count;
    o.shift = d.shift;
    o.lower = d.lower;
    o.upper = d.upper;
    o.constrained = nullptr;
    o.nconstrained = 0;
    o.lumped = d.lumped ? 1 : 0;
    o.verify = d.verify ? 1 : 0;
    o.tolerance = d.tolerance;
    o.max_iterations = d.max_iterations;
    o.subspace = d.subspace;
    o.dense_below = d.dense_below;
    *out = o;
  });
}

int fem_eigen_solve(const char* K_key, const char* M_key, const fem_eigen_options* options,
                    const char* out_prefix, fem_eigen_result* result) {
  return guarded([&] {
    const char* name = "fem_eigen_solve";
    const std::string k(key_arg(K_key, "K_key")), m(key_arg(M_key, "M_key"));
    const std::string prefix(key_arg(out_prefix, "out_prefix"));
    const std::string values_key = prefix + "/eigenvalues", vectors_key = prefix + "/vectors",
                      residuals_key = prefix + "/residuals";
    for (const auto& key : {values_key, vectors_key, residuals_key}) fem::Store::validate_key(key);
    const eigen::Options o = options_of(options, name);
    auto& store = fem::store();
    eigen::Result r = eigen::solve(store, k, m, o);

    const auto modes = static_cast<std::int64_t>(r.modes());
    store.put(values_key, fem::Array<double>({modes}, std::move(r.eigenvalues)));
    store.put(vectors_key,
              fem::Array<double>({modes, static_cast<std::int64_t>(r.size)}, std::move(r.vectors)));
    store.put(residuals_key, fem::Array<double>({modes}, std::move(r.residuals)));
    if (result == nullptr) return;
    fem_eigen_result out{};
    out.n = r.size;
    out.modes = static_cast<int32_t>(modes);
    out.converged = r.converged ? 1 : 0;
    out.sturm_count = r.sturm_count;
    out.missing = r.missing;
    out.restarts = r.restarts;
    out.shift = r.shift;
    out.residual_max = r.residual_max;
    out.orthogonality_max = r.orthogonality_max;
    out.operator_applications = r.operator_applications;
    out.sturm_factorizations = r.sturm_factorizations;
    copy_text(out.method, r.method);
    const bool dense = r.method.rfind("dense", 0) == 0;
    copy_text(out.backend, dense ? std::string_view("") : fem::solve::to_string(r.backend));
    copy_text(out.message, fmt::format("{}", fmt::join(r.log, "; ")));
    *result = out;
  });
}

int fem_eigen_count_below(const char* K_key, const char* M_key, double sigma,
                          const fem_eigen_options* options, int64_t* count) {
  return guarded([&] {
    const char* name = "fem_eigen_count_below";
    const std::string k(key_arg(K_key, "K_key")), m(key_arg(M_key, "M_key"));
    FEM_EXPECTS(count != nullptr, "{}: count is a null pointer", name);
    const eigen::Options o = options_of(options, name);
    *count = eigen::count_below(fem::store(), k, m, sigma, o);
  });
}

}  // extern "C"
