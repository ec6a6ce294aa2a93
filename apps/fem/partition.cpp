// fem partition: plan a distributed run on paper. Splits the mesh with METIS into N parts for every
// --parts N and prints one row per N: cells per part, imbalance, ghost nodes, neighbours, edge
// cut and the time the partition took.
//   fem partition gen:cube-tet4:32 --parts 2 --parts 4 --parts 8
//   fem partition meshes/annulus_v41.msh --parts 16 --json partition.json
//   fem partition gen:square-tri3:256 --parts 2,4,8,16 --json -
#include "fem/mesh/partition.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "commands.hpp"
#include "fem/atomic_file.hpp"
#include "fem/error.hpp"
#include "load_mesh.hpp"
#include "solver_common.hpp"

namespace fem::app {
namespace {

struct PartitionArgs {
  std::string mesh;
  std::vector<int> parts;
  std::string json;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

nlohmann::json row_json(const mesh::PartitionStats& s, double seconds) {
  const auto [cmin, cmax] = std::minmax_element(s.cells.begin(), s.cells.end());
  return {{"parts", s.parts},
          {"cells_min", *cmin},
          {"cells_max", *cmax},
          {"cell_imbalance", s.cell_imbalance},
          {"node_imbalance", s.node_imbalance},
          {"ghost_nodes_max", *std::max_element(s.ghost_nodes.begin(), s.ghost_nodes.end())},
          {"ghost_nodes_total", s.total_ghost_nodes},
          {"interface_nodes", s.interface_nodes},
          {"neighbours_max", *std::max_element(s.neighbours.begin(), s.neighbours.end())},
          {"edge_cut", s.edge_cut},
          {"seconds", seconds},
          {"cells", s.cells},
          {"owned_nodes", s.owned_nodes},
          {"ghost_nodes", s.ghost_nodes},
          {"neighbours", s.neighbours}};
}

/// --parts: a whole number of at least 1, said in the words of the other subcommands' checks.
CLI::Validator part_count() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        int v = 0;
        const char* end = text.data() + text.size();
        const auto [p, ec] = std::from_chars(text.data(), end, v);
        if (ec != std::errc() || p != end) return fmt::format("'{}' is not a whole number", text);
        if (v < 1) return fmt::format("{} must be at least 1", text);
        return {};
      },
      "", "");
}

void run_partition(const PartitionArgs& a) {
  if (!a.json.empty() && a.json != "-") check_writable(a.json);  // before any work
  // Text goes to standard error when the JSON goes to standard output.
  std::FILE* text = a.json == "-" ? stderr : stdout;
  const auto read_start = std::chrono::steady_clock::now();
  const Mesh m = load_mesh(a.mesh);
  for (const int n : a.parts)  // before the table: the error is then the only output
    if (n > 1 && n > m.num_cells())
      throw InvalidArgument(
          fmt::format("--parts {}: more parts than the {} cells of '{}'", n, m.num_cells(), m.source()));
  fmt::print(text, "mesh  {}: {} {} cells, {} nodes (read in {:.3f} s)\n", m.source(), m.num_cells(),
             m.cell_info().name, m.num_nodes(), seconds_since(read_start));
  fmt::print(text, "{:>6} {:>9} {:>9} {:>9} {:>9} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9}\n", "parts",
             "cells", "cells", "imbalance", "imbalance", "ghosts", "ghosts", "interface", "neighbours",
             "edge", "time");
  fmt::print(text, "{:>6} {:>9} {:>9} {:>9} {:>9} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9}\n", "", "min",
             "max", "cells", "nodes", "max/part", "total", "nodes", "max", "cut", "s");
  nlohmann::json rows = nlohmann::json::array();
  for (const int n : a.parts) {
    const auto start = std::chrono::steady_clock::now();
    const auto p = mesh::partition(m, n);
    const double seconds = seconds_since(start);
    const auto s = mesh::partition_stats(m, p);
    auto row = row_json(s, seconds);
    fmt::print(text, "{:>6} {:>9} {:>9} {:>9.3f} {:>9.3f} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9.3f}\n", n,
               row["cells_min"].get<index_t>(), row["cells_max"].get<index_t>(), s.cell_imbalance,
               s.node_imbalance, row["ghost_nodes_max"].get<index_t>(), s.total_ghost_nodes,
               s.interface_nodes, row["neighbours_max"].get<int>(), s.edge_cut, seconds);
    std::fflush(text);
    row["mesh"] = m.source();
    row["mesh_cells"] = m.num_cells();
    row["mesh_nodes"] = m.num_nodes();
    rows.push_back(std::move(row));
  }
  write_json(a.json, rows);
}

}  // namespace

void add_partition(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "partition", "split a mesh into parts (METIS) and print what each split costs in communication");
  auto a = std::make_shared<PartitionArgs>();
  cmd->add_option("mesh", a->mesh, "mesh file, or gen:square-tri3:N, gen:cube-tet4:N, ...")->required();
  cmd->add_option("--parts", a->parts, "number of parts; repeat it (or give N,M,...) for one row each")
      ->required()
      ->delimiter(',')
      ->allow_extra_args(false)
      ->check(part_count());
  cmd->add_option("--json", a->json,
                  "also write the rows as a JSON array to FILE ('-': standard output, the table going to "
                  "standard error)");
  cmd->callback([a] { run_partition(*a); });
}

}  // namespace fem::app
