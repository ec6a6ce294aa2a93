// Internal: the C ABI's structs turned into the assembly library's C++ objects, shared by the C
// ABIs of libfem_assembly and libfem_newton (header-only, so neither exports it).
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "fem/assembly/boundary.hpp"
#include "fem/assembly/c_api.h"
#include "fem/assembly/forms.hpp"
#include "fem/assembly/space.hpp"
#include "fem/detail/c_api_guard.hpp"
#include "fem/store.hpp"

namespace fem::capi {

/// The space a fem_space names (its DOF map from the store's cache).
inline assembly::FunctionSpace space_of(const fem_space* s) {
  FEM_EXPECTS(s != nullptr, "space is a null pointer");
  key_arg(s->mesh_key, "space.mesh_key");
  FEM_EXPECTS(s->degree == 1 || s->degree == 2, "space on '{}': degree {}; 1 or 2 are supported", s->mesh_key,
              s->degree);
  FEM_EXPECTS(s->components >= 1 && s->components <= 3, "space on '{}': {} components; 1 to 3 are supported",
              s->mesh_key, s->components);
  return assembly::FunctionSpace(s->mesh_key, s->degree, s->components, fem::store());
}

/// A fem_function as the assembly's callables. The host's function is called under a mutex
/// unless it was declared concurrent.
class Callback {
 public:
  /// `what` names the function in messages ("source f").
  Callback(const fem_function* f, double otherwise, std::string what) : what_(std::move(what)) {
    if (f == nullptr) {
      value_ = otherwise;
      return;
    }
    fn_ = f->fn;
    ctx_ = f->ctx;
    value_ = f->value;
    concurrent_ = f->concurrent != 0;
    FEM_EXPECTS(fn_ != nullptr || std::isfinite(value_), "{}: the constant value is {}", what_, value_);
  }
  bool constant() const noexcept { return fn_ == nullptr; }
  double value() const noexcept { return value_; }
  const std::string& what() const noexcept { return what_; }

  void batch(std::size_t count, const double* x, double* values) const {
    if (fn_ == nullptr) {
      std::fill(values, values + count, value_);
      return;
    }
    if (concurrent_) {
      fn_(static_cast<int64_t>(count), x, values, ctx_);
      return;
    }
    std::lock_guard lock(*mutex_);
    fn_(static_cast<int64_t>(count), x, values, ctx_);
  }
  double operator()(const double* x) const {
    double v = 0;
    batch(1, x, &v);
    return v;
  }

  /// The callables (sharing this object: copies of std::function stay cheap).
  static assembly::Function point(std::shared_ptr<const Callback> c) {
    return [c = std::move(c)](const double* x) { return (*c)(x); };
  }
  static assembly::BatchFunction batched(std::shared_ptr<const Callback> c) {
    return [c = std::move(c)](std::size_t count, const double* x, double* values) {
      c->batch(count, x, values);
    };
  }

 private:
  fem_batch_fn fn_ = nullptr;
  void* ctx_ = nullptr;
  double value_ = 0;
  bool concurrent_ = false;
  std::string what_;
  std::shared_ptr<std::mutex> mutex_ = std::make_shared<std::mutex>();
};

inline std::shared_ptr<const Callback> callback(const fem_function* f, double otherwise, std::string what) {
  return std::make_shared<const Callback>(f, otherwise, std::move(what));
}

/// The facet tags of a C call: ntags = 0 is the whole boundary (`allow_all`).
inline assembly::FacetSet facets_of(const int32_t* tags, int32_t ntags, bool allow_all, const char* what) {
  FEM_EXPECTS(ntags >= 0, "{}: ntags is {}", what, ntags);
  FEM_EXPECTS(ntags == 0 || tags != nullptr, "{}: tags is a null pointer but ntags is {}", what, ntags);
  FEM_EXPECTS(ntags > 0 || allow_all, "{}: no facet tags given (ntags = 0)", what);
  if (ntags == 0) return assembly::FacetSet::all();
  return assembly::FacetSet::tagged(std::vector<int>(tags, tags + ntags));
}

/// The Dirichlet values of one condition, checked finite (a host function returning NaN is a
/// NumericalError naming the DOF).
inline assembly::DirichletValues dirichlet_of(const assembly::FunctionSpace& V, const int32_t* tags,
                                              int32_t ntags, const fem_function* value, int32_t component,
                                              const char* what) {
  assembly::Dirichlet d;
  d.where = facets_of(tags, ntags, /*allow_all=*/true, what);
  d.component = component;
  const auto c = callback(value, 0.0, fmt::format("{}: the Dirichlet value", what));
  if (value != nullptr) d.value = Callback::point(c);
  assembly::DirichletValues bc = assembly::dirichlet_values(V, std::span<const assembly::Dirichlet>(&d, 1));
  for (std::size_t i = 0; i < bc.values.size(); ++i)
    if (!std::isfinite(bc.values[i]))
      throw NumericalError(
          fmt::format("{}: the Dirichlet value at DOF {} is {}", what, bc.dofs[i], bc.values[i]));
  return bc;
}

/// NumericalError naming the first non-finite entry of `values` (`what`: "the matrix for 'A'").
inline void require_finite(std::span<const double> values, const std::string& what) {
  for (std::size_t i = 0; i < values.size(); ++i)
    if (!std::isfinite(values[i]))
      throw NumericalError(fmt::format("{}: entry {} is {}; nothing was published", what, i, values[i]));
}

}  // namespace fem::capi
