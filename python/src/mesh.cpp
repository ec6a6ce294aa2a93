// fem.Mesh and the mesh kernel: read, generate, check.
#include "fem/mesh.hpp"

#include <pybind11/stl.h>

#include <limits>

#include "common.hpp"
#include "fem/mesh/check.hpp"
#include "fem/mesh/generate.hpp"
#include "fem/mesh/read.hpp"
#include "fem/store.hpp"

namespace fem::python {
namespace {

std::vector<std::int32_t> optional_int32(py::handle a, const char* what) {
  return a.is_none() ? std::vector<std::int32_t>{} : checked_int32(a, what);
}

std::shared_ptr<Mesh> publish(std::shared_ptr<const Mesh> mesh, const std::string& key) {
  fem::store().put<Mesh>(key, mesh);
  return held(std::move(mesh));
}

template <class T>
py::array_t<T> indices(const std::vector<T>& v) {
  return to_numpy(std::vector<T>(v));
}

}  // namespace

int resolve_tag(const Mesh& mesh, py::handle tag, int dim, const char* what) {
  if (!py::isinstance<py::str>(tag)) {
    // A tag number is an integer (Python's or numpy's), not 1.5 truncated nor a bare RuntimeError.
    if (py::isinstance<py::bool_>(tag) || !PyIndex_Check(tag.ptr()))
      throw InvalidArgument(fmt::format(
          "{}: tag {} ({}) is neither a tag number (an integer) nor a physical name", what,
          std::string(py::repr(tag)), std::string(py::str(py::type::handle_of(tag).attr("__name__")))));
    const auto number = py::reinterpret_steal<py::object>(PyNumber_Index(tag.ptr()));
    if (!number) throw py::error_already_set();
    int overflow = 0;
    const long long value = PyLong_AsLongLongAndOverflow(number.ptr(), &overflow);
    if (overflow != 0 || value < std::numeric_limits<int>::min() || value > std::numeric_limits<int>::max())
      throw InvalidArgument(fmt::format("{}: tag {} is beyond the tag numbers (32-bit integers)", what,
                                        std::string(py::repr(tag))));
    return static_cast<int>(value);
  }
  try {
    return mesh.resolve_tag(tag.cast<std::string>(), dim);  // the library's one resolver
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(fmt::format("{}: {}", what, e.what()));
  }
}

void bind_mesh(py::module_& m) {
  py::class_<Mesh, std::shared_ptr<Mesh>>(m, "Mesh", "An immutable mesh; its arrays are read-only views.")
      .def(py::init([](const std::string& cell_type, py::handle coordinates, py::handle cells,
                       py::handle cell_tags, py::handle facets, py::handle facet_tags,
                       const std::map<std::string, std::pair<int, int>>& names, const std::string& source) {
             const auto type = cell_type_from_name(cell_type);
             FEM_EXPECTS(type, "unknown cell type '{}' (tri3, quad4, tet4, hex8, tri6, ...)", cell_type);
             auto coords =
                 py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(coordinates);
             FEM_EXPECTS(coords && coords.ndim() == 2, "coordinates: an array of shape (nodes, gdim)");
             Mesh::Data d;
             d.cell_type = *type;
             d.gdim = static_cast<int>(coords.shape(1));
             d.coords.assign(coords.data(), coords.data() + coords.size());
             d.cells = checked_int32(cells, "cells");
             d.cell_tags = optional_int32(cell_tags, "cell_tags");
             d.facets = optional_int32(facets, "facets");
             d.facet_tags = optional_int32(facet_tags, "facet_tags");
             for (const auto& [name, dim_tag] : names)
               d.names.push_back({dim_tag.first, dim_tag.second, name});
             d.source = source;
             return std::make_shared<Mesh>(std::move(d));
           }),
           py::arg("cell_type"), py::arg("coordinates"), py::arg("cells"), py::arg("cell_tags") = py::none(),
           py::arg("facets") = py::none(), py::arg("facet_tags") = py::none(),
           py::arg("names") = std::map<std::string, std::pair<int, int>>{}, py::arg("source") = "python",
           "A mesh from arrays (checked: sizes, node references, finite coordinates). names: {name: (dim, "
           "tag)}.")
      .def_property_readonly("gdim", &Mesh::gdim)
      .def_property_readonly("tdim", &Mesh::tdim)
      .def_property_readonly("cell_type", [](const Mesh& mesh) { return std::string(mesh.cell_info().name); })
      .def_property_readonly("num_nodes", &Mesh::num_nodes)
      .def_property_readonly("num_cells", &Mesh::num_cells)
      .def_property_readonly("num_facets", &Mesh::num_facets)
      .def_property_readonly(
          "coordinates",
          [](std::shared_ptr<Mesh> mesh) {
            return readonly_view(mesh->coords().data(), {mesh->num_nodes(), mesh->gdim()}, mesh);
          })
      .def_property_readonly(
          "cells",
          [](std::shared_ptr<Mesh> mesh) {
            return readonly_view(mesh->cells().data(), {mesh->num_cells(), mesh->nodes_per_cell()}, mesh);
          })
      .def_property_readonly(
          "cell_tags", [](std::shared_ptr<Mesh> mesh) { return readonly_view(mesh->cell_tags(), mesh); },
          "The tag of each cell: its physical group, or for a cell in several groups a negative tag that "
          "stands for the set (Mesh.groups).")
      .def_property_readonly(
          "facets",
          [](std::shared_ptr<Mesh> mesh) {
            return readonly_view(mesh->facets().data(), {mesh->num_facets(), mesh->nodes_per_facet()}, mesh);
          })
      .def_property_readonly(
          "facet_tags", [](std::shared_ptr<Mesh> mesh) { return readonly_view(mesh->facet_tags(), mesh); })
      .def(
          "groups", [](const Mesh& mesh, int dim, int tag) { return mesh.groups(dim, tag); }, py::arg("dim"),
          py::arg("tag"),
          "The physical groups of an entity of dimension `dim` whose tag (cell_tags, facet_tags) is `tag`: "
          "[tag], or the members of its set when it is in several.")
      .def(
          "tags", [](const Mesh& mesh, int dim) { return mesh.tags(dim); }, py::arg("dim"),
          "The physical groups the cells (dim = tdim) or facets (dim = tdim - 1) are in, sorted.")
      .def_property_readonly(
          "names",
          [](const Mesh& mesh) {
            std::map<std::string, std::pair<int, int>> names;
            for (const auto& n : mesh.names()) names[n.name] = {n.dim, n.tag};
            return names;
          },
          "{name: (dim, tag)} of the physical names.")
      .def(
          "tag",
          [](const Mesh& mesh, const std::string& name, int dim) {
            return resolve_tag(mesh, py::str(name), dim, "Mesh.tag");
          },
          py::arg("name"), py::arg("dim") = -1)
      .def_property_readonly("source", &Mesh::source)
      .def_property_readonly("bytes", &Mesh::bytes)
      .def("__repr__", [](const Mesh& mesh) {
        return fmt::format("<fem.Mesh {}: {} nodes, {} {} cells>", mesh.source(), mesh.num_nodes(),
                           mesh.num_cells(), mesh.cell_info().name);
      });

  m.def(
      "read_mesh",
      [](const std::string& path, std::optional<std::string> key) {
        Store::validate_key(key.value_or(path));  // before the work
        auto mesh = without_gil([&] { return std::make_shared<const Mesh>(mesh::read(path)); });
        return publish(std::move(mesh), key.value_or(path));
      },
      py::arg("path"), py::arg("key") = py::none(),
      "Read a Gmsh (.msh 2.2/4.1) or MEDIT (.mesh) file and publish it under key (default: the path).");
  m.def(
      "generate_mesh",
      [](const std::string& spec, std::optional<std::string> key) {
        Store::validate_key(key.value_or(spec));  // before the work
        auto mesh = without_gil([&] { return std::make_shared<const Mesh>(mesh::generate(spec)); });
        return publish(std::move(mesh), key.value_or(spec));
      },
      py::arg("spec"), py::arg("key") = py::none(),
      "Generate gen:<shape>:<n> (interval, square-tri3, square-quad4, cube-tet4, cube-hex8) and publish it "
      "under key (default: the spec).");
  m.def(
      "check_mesh",
      [](py::handle mesh_or_key, double duplicate_tolerance, double degenerate_tolerance) {
        std::shared_ptr<const Mesh> mesh =
            py::isinstance<py::str>(mesh_or_key)
                ? fem::store().get<Mesh>(mesh_or_key.cast<std::string>())
                : std::shared_ptr<const Mesh>(mesh_or_key.cast<std::shared_ptr<Mesh>>());
        const mesh::CheckReport r = without_gil([&] {
          return mesh::check(*mesh, mesh::CheckOptions{duplicate_tolerance, degenerate_tolerance});
        });
        py::dict d;
        d["ok"] = r.ok();
        d["inverted"] = indices(r.inverted);
        d["degenerate"] = indices(r.degenerate);
        d["tangled"] = indices(r.tangled);
        py::list dup;
        for (const auto& [node, first] : r.duplicate_nodes) dup.append(py::make_tuple(node, first));
        d["duplicate_nodes"] = dup;
        d["unreferenced_nodes"] = indices(r.unreferenced_nodes);
        d["tagged_interior_facets"] = indices(r.tagged_interior_facets);
        d["stray_facets"] = indices(r.stray_facets);
        d["untagged_boundary_facets"] = r.untagged_boundary_facets.size();
        d["boundary_facets"] = r.boundary_facets;
        d["summary"] = r.summary();
        return d;
      },
      py::arg("mesh"), py::arg("duplicate_tolerance") = 1e-10, py::arg("degenerate_tolerance") = 1e-10,
      "Check a mesh (a fem.Mesh or a key): inverted, degenerate or tangled cells, duplicate and "
      "unreferenced nodes, misplaced tagged facets.");
}

}  // namespace fem::python
