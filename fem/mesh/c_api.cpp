// The C ABI of libfem_mesh (fem/mesh/c_api.h): meshes into the store by key.
#include "fem/mesh/c_api.h"

#include <fmt/format.h>

#include <cstdio>
#include <string>

#include "fem/detail/c_api_guard.hpp"
#include "fem/mesh.hpp"
#include "fem/mesh/check.hpp"
#include "fem/mesh/generate.hpp"
#include "fem/mesh/read.hpp"
#include "fem/store.hpp"

namespace {

using fem::capi::fail;
using fem::capi::guarded;
using fem::capi::key_arg;

int publish(const char* key, fem::Mesh mesh, uint64_t* version) {
  const fem::Version v = fem::store().put(key_arg(key), std::move(mesh));
  if (version) *version = v;
  return FEM_OK;
}

}  // namespace

extern "C" {

int fem_mesh_read(const char* path, const char* key, uint64_t* version) {
  return guarded([&] {
    FEM_EXPECTS(path != nullptr, "fem_mesh_read: path is a null pointer");
    key_arg(key);
    return publish(key, fem::mesh::read(path), version);
  });
}

int fem_mesh_generate(const char* spec, const char* key, uint64_t* version) {
  return guarded([&] {
    FEM_EXPECTS(spec != nullptr, "fem_mesh_generate: spec is a null pointer");
    key_arg(key);
    return publish(key, fem::mesh::generate(spec), version);
  });
}

int fem_mesh_info(const char* key, fem_mesh_summary* out) {
  return guarded([&] {
    FEM_EXPECTS(out != nullptr, "fem_mesh_info: out is a null pointer");
    const auto mesh = fem::store().get<fem::Mesh>(key_arg(key));
    fem_mesh_summary r{};
    r.gdim = mesh->gdim();
    r.tdim = mesh->tdim();
    r.num_nodes = mesh->num_nodes();
    r.num_cells = mesh->num_cells();
    r.num_facets = mesh->num_facets();
    r.nodes_per_cell = mesh->nodes_per_cell();
    const std::string_view name = mesh->cell_info().name;
    std::snprintf(r.cell_type, sizeof r.cell_type, "%.*s", static_cast<int>(name.size()), name.data());
    *out = r;
  });
}

int fem_mesh_check(const char* key, fem_mesh_check_report* out) {
  return guarded([&] {
    FEM_EXPECTS(out != nullptr, "fem_mesh_check: out is a null pointer");
    const auto mesh = fem::store().get<fem::Mesh>(key_arg(key));
    const fem::mesh::CheckReport c = fem::mesh::check(*mesh);
    fem_mesh_check_report r{};
    r.inverted = static_cast<int64_t>(c.inverted.size());
    r.degenerate = static_cast<int64_t>(c.degenerate.size());
    r.tangled = static_cast<int64_t>(c.tangled.size());
    r.duplicate_nodes = static_cast<int64_t>(c.duplicate_nodes.size());
    r.unreferenced_nodes = static_cast<int64_t>(c.unreferenced_nodes.size());
    r.tagged_interior_facets = static_cast<int64_t>(c.tagged_interior_facets.size());
    r.stray_facets = static_cast<int64_t>(c.stray_facets.size());
    r.untagged_boundary_facets = static_cast<int64_t>(c.untagged_boundary_facets.size());
    r.boundary_facets = static_cast<int64_t>(c.boundary_facets);
    r.ok = c.ok() ? 1 : 0;
    *out = r;
  });
}

int fem_mesh_tag(const char* key, const char* name, int32_t dim, int32_t* tag) {
  return guarded([&] {
    FEM_EXPECTS(name != nullptr && tag != nullptr, "fem_mesh_tag: name and tag must not be null pointers");
    const std::string_view k = key_arg(key);
    const auto mesh = fem::store().get<fem::Mesh>(k);
    if (const auto t = mesh->tag_of(name, dim)) {  // a physical name, as documented
      *tag = *t;
      return static_cast<int>(FEM_OK);
    }
    return fail(FEM_ERR_NOT_FOUND, fmt::format("store key '{}': {}", k, mesh->unknown_tag(name, dim)));
  });
}

}  // extern "C"
