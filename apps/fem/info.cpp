// fem info: what a mesh holds (cells, nodes, tags, bounding box, memory) and what check() finds.
//   fem info meshes/square.msh
//   fem info gen:cube-tet4:8 --json -
//   fem info bracket.msh --json bracket.json
#include <fmt/core.h>

#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "fem/error.hpp"
#include "fem/mesh/check.hpp"
#include "load_mesh.hpp"
#include "solver_common.hpp"

namespace fem::app {
namespace {

/// The members of a physical group: `count` cells or facets, `shared` of them also in another group.
struct TagCount {
  int dim, tag;
  std::string name;
  std::size_t count, shared;
};

std::vector<TagCount> tag_counts(const Mesh& m) {
  std::vector<TagCount> out;
  auto add = [&](int dim, std::span<const int> tags) {
    std::map<int, std::size_t> carried;
    for (int t : tags) ++carried[t];
    std::map<int, std::pair<std::size_t, std::size_t>> n;  // group -> (members, shared)
    for (const auto& [t, c] : carried) {
      const auto groups = m.groups(dim, t);
      for (int g : groups) {
        n[g].first += c;
        if (groups.size() > 1) n[g].second += c;
      }
    }
    for (const auto& [t, c] : n) out.push_back({dim, t, std::string(m.name_of(dim, t)), c.first, c.second});
  };
  add(m.tdim(), m.cell_tags());
  add(m.tdim() - 1, m.facet_tags());
  return out;
}

std::string human_bytes(std::size_t b) {
  if (b < 1024) return fmt::format("{} B", b);
  if (b < (1u << 20)) return fmt::format("{:.1f} KiB", b / 1024.0);
  if (b < (1u << 30)) return fmt::format("{:.1f} MiB", b / 1048576.0);
  return fmt::format("{:.2f} GiB", b / 1073741824.0);
}

void run_info(const std::string& spec, const std::string& json_file, double tolerance) {
  const Mesh m = load_mesh(spec);
  mesh::CheckOptions opts;
  opts.duplicate_tolerance = tolerance;
  const auto report = mesh::check(m, opts);
  const auto tags = tag_counts(m);
  const auto [lo, hi] = m.bounding_box();

  if (!json_file.empty()) {
    nlohmann::json j;
    j["command"] = "info";
    j["source"] = m.source();
    j["nodes"] = m.num_nodes();
    j["cells"] = m.num_cells();
    j["cell_type"] = std::string(m.cell_info().name);
    j["gdim"] = m.gdim();
    j["tdim"] = m.tdim();
    j["boundary_facets"] = report.boundary_facets;
    j["tagged_facets"] = m.num_facets();
    j["tags"] = nlohmann::json::array();
    for (const auto& t : tags)
      j["tags"].push_back(
          {{"dim", t.dim}, {"tag", t.tag}, {"name", t.name}, {"count", t.count}, {"shared", t.shared}});
    j["bounding_box"] = {{"min", std::vector<double>(lo.begin(), lo.begin() + m.gdim())},
                         {"max", std::vector<double>(hi.begin(), hi.begin() + m.gdim())}};
    j["check"] = {{"ok", report.ok()},
                  {"inverted", report.inverted.size()},
                  {"degenerate", report.degenerate.size()},
                  {"tangled", report.tangled.size()},
                  {"duplicate_nodes", report.duplicate_nodes.size()},
                  {"unreferenced_nodes", report.unreferenced_nodes.size()},
                  {"untagged_boundary_facets", report.untagged_boundary_facets.size()},
                  {"tagged_interior_facets", report.tagged_interior_facets.size()},
                  {"stray_facets", report.stray_facets.size()}};
    j["bytes"] = m.bytes();
    write_json(json_file, j);  // all or nothing, as every fem output
    if (json_file == "-") return;
  }

  fmt::print("mesh          {}\n", m.source());
  fmt::print("cell type     {} (dimension {}, coordinates in {}D)\n", m.cell_info().name, m.tdim(), m.gdim());
  fmt::print("nodes         {}\n", m.num_nodes());
  fmt::print("cells         {}\n", m.num_cells());
  fmt::print("facets        {} tagged, {} on the boundary\n", m.num_facets(), report.boundary_facets);
  std::string box;
  for (int d = 0; d < m.gdim(); ++d) box += fmt::format("{}[{}, {}]", d ? " x " : "", lo[d], hi[d]);
  fmt::print("bounding box  {}\n", box);
  fmt::print("tags          {:>4} {:>6}  {:<20} {:>10}\n", "dim", "tag", "name", "count");
  for (const auto& t : tags)
    fmt::print("              {:>4} {:>6}  {:<20} {:>10} {}{}\n", t.dim, t.tag, t.name.empty() ? "-" : t.name,
               t.count, t.dim == m.tdim() ? "cells" : "facets",
               t.shared ? fmt::format(" ({} also in another group)", t.shared) : "");
  fmt::print("memory        {} ({} bytes)\n", human_bytes(m.bytes()), m.bytes());
  fmt::print("check         {}", report.summary());
}

}  // namespace

void add_info(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "print what a mesh holds and check it");
  auto spec = std::make_shared<std::string>();
  auto json = std::make_shared<std::string>();
  auto tol = std::make_shared<double>(mesh::CheckOptions{}.duplicate_tolerance);
  cmd->add_option("mesh", *spec, "mesh file, or gen:square-tri3:N, gen:cube-tet4:N, ...")->required();
  cmd->add_option("--json", *json,
                  "also write the facts as JSON to FILE ('-': standard output, instead of the text)");
  cmd->add_option("--duplicate-tolerance", *tol,
                  "nodes closer than this times the bounding-box diagonal are duplicates");
  cmd->callback([=] { run_info(*spec, *json, *tol); });
}

}  // namespace fem::app
