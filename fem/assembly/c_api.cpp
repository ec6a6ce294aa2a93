// The C ABI of libfem_assembly (fem/assembly/c_api.h): forms into matrix and vector keys.
#include "fem/assembly/c_api.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fem/array.hpp"
#include "fem/assembly/assembler.hpp"
#include "fem/assembly/boundary.hpp"
#include "fem/assembly/detail/c_api.hpp"
#include "fem/assembly/system.hpp"
#include "fem/csr.hpp"
#include "fem/detail/c_api_guard.hpp"
#include "fem/memory.hpp"
#include "fem/store.hpp"

namespace {

using fem::capi::Callback;
using fem::capi::guarded;
using fem::capi::key_arg;
namespace assembly = fem::assembly;

/// The key an output goes to, checked before any work is done.
std::string output_key(const char* key, const char* what) {
  const std::string k(key_arg(key, what));
  fem::Store::validate_key(k);
  return k;
}

/// A fem_coefficient as an assembly::Coefficient; `otherwise` for a null pointer.
assembly::Coefficient coefficient_of(const fem_coefficient* c, double otherwise, const fem::Mesh& mesh,
                                     const char* what) {
  if (c == nullptr) return assembly::Coefficient(otherwise);
  // The values are checked by the library's Coefficient (finite, named by `what`).
  switch (c->kind) {
    case FEM_COEF_CONSTANT:
      return assembly::Coefficient::constant(c->value, what);
    case FEM_COEF_PER_CELL: {
      const std::string_view key = key_arg(c->key, "coefficient.key");
      const auto values = fem::store().get<fem::Array<double>>(key);
      FEM_EXPECTS(values->size() == static_cast<std::size_t>(mesh.num_cells()),
                  "{}: the per-cell values under '{}' are {} (shape {}), the mesh '{}' has {} cells", what,
                  key, values->size(), fem::shape_string(values->shape()), mesh.source(), mesh.num_cells());
      return assembly::Coefficient::per_cell(values->vector(), fmt::format("{} (under '{}')", what, key));
    }
    case FEM_COEF_PER_TAG: {
      FEM_EXPECTS(c->ntags >= 0, "{}: ntags is {}", what, c->ntags);
      FEM_EXPECTS(c->ntags == 0 || (c->tags != nullptr && c->tag_values != nullptr),
                  "{}: tags or tag_values is a null pointer but ntags is {}", what, c->ntags);
      std::map<int, double> per_tag;
      for (int32_t i = 0; i < c->ntags; ++i) {
        const double v = c->tag_values[i];
        const auto [it, inserted] = per_tag.emplace(c->tags[i], v);
        FEM_EXPECTS(inserted || it->second == v, "{}: tag {} is given two values, {} and {}", what,
                    c->tags[i], it->second, v);
      }
      // NaN: no fallback, every cell tag must have a value (checked when assembling).
      return assembly::Coefficient::per_tag(
          std::move(per_tag), std::isnan(c->value) ? std::nullopt : std::optional(c->value), what);
    }
    case FEM_COEF_FUNCTION:
      FEM_EXPECTS(c->function.fn != nullptr, "{}: FEM_COEF_FUNCTION without a function (function.fn is NULL)",
                  what);
      return assembly::Coefficient::function(
          Callback::point(fem::capi::callback(&c->function, otherwise, what)));
    default:
      throw fem::InvalidArgument(
          fmt::format("{}: unknown coefficient kind {} (FEM_COEF_CONSTANT, _PER_CELL, _PER_TAG or _FUNCTION)",
                      what, c->kind));
  }
}

/// Assemble `form` on `space`, check the values and publish the matrix under `key`; with
/// `null_space`, the matrix carries the modes the unconstrained form cannot resist (the
/// library's rule, assembly::system_matrix without conditions; fem_apply_dirichlet decides again).
template <class Form>
int assemble_matrix(const fem_space* space, const char* matrix_key, uint64_t* version, bool null_space,
                    const char* name, const auto& make_form) {
  const std::string key = output_key(matrix_key, "matrix_key");
  const assembly::Assembler assembler(fem::capi::space_of(space));
  const Form form = make_form(assembler.space().mesh());
  std::vector<double> values = fem::prefaulted_vector<double>(assembler.pattern()->nnz());
  assembler.matrix_into(form, values);
  fem::capi::require_finite(values, fmt::format("{}: the matrix for '{}'", name, key));
  const fem::Version v =
      fem::store().put(key, null_space ? assembly::system_matrix(assembler, std::move(values), {})
                                       : fem::CsrMatrix(assembler.pattern(), std::move(values)));
  if (version) *version = v;
  return FEM_OK;
}

/// The vector a linear form is added to: the entry under `key` when accumulating into one,
/// else zeros.
std::vector<double> start_vector(const std::string& key, int32_t accumulate, fem::index_t n,
                                 const char* name) {
  if (!accumulate) return std::vector<double>(n, 0.0);
  const auto b = fem::store().find<fem::Array<double>>(key);
  if (!b) return std::vector<double>(n, 0.0);
  FEM_EXPECTS(b->ndim() == 1 && b->size() == static_cast<std::size_t>(n),
              "{}: accumulating into '{}' of shape {}, but the space has {} DOFs", name, key,
              fem::shape_string(b->shape()), n);
  return b->vector();
}

int publish_vector(const std::string& key, std::vector<double> b, uint64_t* version, const char* name) {
  fem::capi::require_finite(b, fmt::format("{}: the vector for '{}'", name, key));
  const fem::Version v = fem::store().put(key, fem::Array<double>(std::move(b)));
  if (version) *version = v;
  return FEM_OK;
}

}  // namespace

extern "C" {

int fem_assemble_diffusion(const fem_space* space, const fem_coefficient* k, const char* matrix_key,
                           uint64_t* version) {
  return guarded([&] {
    return assemble_matrix<assembly::Diffusion>(
        space, matrix_key, version, true, "fem_assemble_diffusion", [&](const fem::Mesh& mesh) {
          return assembly::Diffusion{coefficient_of(k, 1.0, mesh, "fem_assemble_diffusion: k")};
        });
  });
}

int fem_assemble_mass(const fem_space* space, const fem_coefficient* rho, const char* matrix_key,
                      uint64_t* version) {
  return guarded([&] {
    return assemble_matrix<assembly::Mass>(
        space, matrix_key, version, false, "fem_assemble_mass", [&](const fem::Mesh& mesh) {
          return assembly::Mass{coefficient_of(rho, 1.0, mesh, "fem_assemble_mass: rho")};
        });
  });
}

int fem_assemble_elasticity(const fem_space* space, const fem_coefficient* E, const fem_coefficient* nu,
                            int32_t plane_stress, const char* matrix_key, uint64_t* version) {
  return guarded([&] {
    return assemble_matrix<assembly::Elasticity>(
        space, matrix_key, version, true, "fem_assemble_elasticity", [&](const fem::Mesh& mesh) {
          assembly::Elasticity form;
          form.young = coefficient_of(E, 1.0, mesh, "fem_assemble_elasticity: E");
          form.poisson = coefficient_of(nu, 0.3, mesh, "fem_assemble_elasticity: nu");
          form.plane =
              plane_stress ? assembly::Elasticity::Plane::stress : assembly::Elasticity::Plane::strain;
          return form;
        });
  });
}

int fem_assemble_source(const fem_space* space, const fem_function* f, const char* vector_key,
                        int32_t accumulate, uint64_t* version) {
  return guarded([&] {
    const char* name = "fem_assemble_source";
    const std::string key = output_key(vector_key, "vector_key");
    const assembly::Assembler assembler(fem::capi::space_of(space));
    const auto c = fem::capi::callback(f, 0.0, "fem_assemble_source: f");
    std::vector<double> b = start_vector(key, accumulate, assembler.space().num_dofs(), name);
    if (!c->constant() || c->value() != 0.0)
      assembler.vector_into(assembly::Source{Callback::point(c), Callback::batched(c)}, b);
    return publish_vector(key, std::move(b), version, name);
  });
}

int fem_assemble_neumann(const fem_space* space, const int32_t* tags, int32_t ntags, const fem_function* g,
                         const char* vector_key, int32_t accumulate, uint64_t* version) {
  return guarded([&] {
    const char* name = "fem_assemble_neumann";
    const std::string key = output_key(vector_key, "vector_key");
    const assembly::FacetSet facets = fem::capi::facets_of(tags, ntags, /*allow_all=*/true, name);
    const assembly::Assembler assembler(fem::capi::space_of(space));
    FEM_EXPECTS(assembler.space().components() == 1, "{}: a scalar flux on the vector space {}", name,
                assembler.space().name());
    const auto c = fem::capi::callback(g, 0.0, "fem_assemble_neumann: g");
    std::vector<double> b = start_vector(key, accumulate, assembler.space().num_dofs(), name);
    assembler.vector_into(assembly::Neumann::scalar(facets, Callback::point(c)), b);
    return publish_vector(key, std::move(b), version, name);
  });
}

int fem_apply_dirichlet(const fem_space* space, const int32_t* tags, int32_t ntags, const fem_function* value,
                        int32_t component, const char* matrix_key, const char* vector_key) {
  return guarded([&] {
    const char* name = "fem_apply_dirichlet";
    const std::string mkey(key_arg(matrix_key, "matrix_key")), vkey(key_arg(vector_key, "vector_key"));
    auto& store = fem::store();
    const auto A = store.get<fem::CsrMatrix>(mkey);
    const auto b = store.get<fem::Array<double>>(vkey);
    const assembly::FunctionSpace V = fem::capi::space_of(space);
    const fem::index_t n = V.num_dofs();
    FEM_EXPECTS(A->rows() == n && A->cols() == n,
                "{}: the matrix under '{}' is {} x {}, the space {} has {} DOFs", name, mkey, A->rows(),
                A->cols(), V.name(), n);
    FEM_EXPECTS(b->ndim() == 1 && b->size() == static_cast<std::size_t>(n),
                "{}: the vector under '{}' has shape {}, the space {} has {} DOFs", name, vkey,
                fem::shape_string(b->shape()), V.name(), n);
    // A count of DOFs is no identity: the matrix must be one of this space.
    assembly::require_pattern_of(A->pattern(), V, fmt::format("{}: the matrix under '{}'", name, mkey));
    const assembly::DirichletValues bc = fem::capi::dirichlet_of(V, tags, ntags, value, component, name);
    std::vector<double> values(A->values().begin(), A->values().end());
    std::vector<double> rhs = b->vector();
    assembly::apply_dirichlet(bc, A->pattern(), values, rhs);
    // A null space the matrix carried is what the new conditions may leave free (the library's
    // rule, assembly::system_matrix): decided again; a matrix without one cannot gain one.
    store.put(mkey, assembly::constrained_matrix(*A, V, std::move(values), bc));
    store.put(vkey, fem::Array<double>(std::move(rhs)));
  });
}

int fem_interpolate(const fem_space* space, const fem_function* f, const char* vector_key,
                    uint64_t* version) {
  return guarded([&] {
    const char* name = "fem_interpolate";
    const std::string key = output_key(vector_key, "vector_key");
    const assembly::FunctionSpace V = fem::capi::space_of(space);
    FEM_EXPECTS(V.components() == 1, "{}: a scalar function on the vector space {}", name, V.name());
    const auto c = fem::capi::callback(f, 0.0, "fem_interpolate: f");
    const assembly::DofMap& d = V.dofmap();
    std::vector<double> u(static_cast<std::size_t>(V.num_dofs()));
    c->batch(u.size(), d.coordinates.data(), u.data());  // the DOF nodes' coordinates, point after point
    return publish_vector(key, std::move(u), version, name);
  });
}

int fem_space_dofs(const fem_space* space, int64_t* dofs) {
  return guarded([&] {
    FEM_EXPECTS(dofs != nullptr, "fem_space_dofs: dofs is a null pointer");
    *dofs = fem::capi::space_of(space).num_dofs();
  });
}

}  // extern "C"
