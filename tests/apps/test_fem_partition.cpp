// fem partition as a user runs it: the --json rows add up (cells per part to the mesh's cells,
// owned nodes to its nodes, ghosts to their total) and bad part counts are one-line errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <vector>

#include "cli.hpp"
#include "fem/mesh/generate.hpp"

namespace {

using fem::testing::CliResult;
using fem::testing::expect_one_line_naming;
using fem::testing::fem_run;
using fem::testing::slurp;
using fem::testing::temp_dir;

std::int64_t sum(const nlohmann::json& array) {
  std::int64_t s = 0;
  for (const auto& v : array) s += v.get<std::int64_t>();
  return s;
}

bool without_metis(const CliResult& r) {
  return r.status != 0 && r.err.find("compiled without") != std::string::npos;
}

TEST(FemPartition, JsonRowsAddUp) {
  const auto dir = temp_dir();
  const std::string spec = "gen:square-tri3:16";
  const auto file = dir / "partition.json";
  const CliResult r =
      fem_run("partition " + spec + " --parts 2 --parts 4 --json '" + file.string() + "'", dir);
  if (without_metis(r)) GTEST_SKIP() << r.err;
  ASSERT_EQ(r.status, 0) << r.err;
  const fem::Mesh mesh = fem::mesh::generate(spec);
  const auto rows = nlohmann::json::parse(slurp(file));
  ASSERT_TRUE(rows.is_array());
  ASSERT_EQ(rows.size(), 2u);
  const int expected_parts[] = {2, 4};
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& row = rows[i];
    const int parts = row.at("parts").get<int>();
    SCOPED_TRACE(std::to_string(parts) + " parts");
    EXPECT_EQ(parts, expected_parts[i]);
    EXPECT_EQ(row.at("mesh_cells").get<std::int64_t>(), mesh.num_cells());
    EXPECT_EQ(row.at("mesh_nodes").get<std::int64_t>(), mesh.num_nodes());

    const auto& cells = row.at("cells");
    ASSERT_EQ(cells.size(), static_cast<std::size_t>(parts));
    EXPECT_EQ(sum(cells), mesh.num_cells());
    const auto cell_counts = cells.get<std::vector<std::int64_t>>();
    const auto [lo, hi] = std::minmax_element(cell_counts.begin(), cell_counts.end());
    EXPECT_EQ(row.at("cells_min").get<std::int64_t>(), *lo);
    EXPECT_EQ(row.at("cells_max").get<std::int64_t>(), *hi);
    EXPECT_GE(row.at("cell_imbalance").get<double>(), 1.0);
    EXPECT_NEAR(row.at("cell_imbalance").get<double>(), *hi / (double(mesh.num_cells()) / parts), 1e-12);
    EXPECT_GE(row.at("node_imbalance").get<double>(), 1.0);

    // Every node of a generated mesh is in a cell, so it has exactly one owner.
    EXPECT_EQ(sum(row.at("owned_nodes")), mesh.num_nodes());
    const auto& ghosts = row.at("ghost_nodes");
    ASSERT_EQ(ghosts.size(), static_cast<std::size_t>(parts));
    EXPECT_EQ(sum(ghosts), row.at("ghost_nodes_total").get<std::int64_t>());
    const auto ghost_counts = ghosts.get<std::vector<std::int64_t>>();
    EXPECT_EQ(row.at("ghost_nodes_max").get<std::int64_t>(),
              *std::max_element(ghost_counts.begin(), ghost_counts.end()));
    // Each interface node is a ghost in at least one part and at most in parts - 1.
    const auto interface = row.at("interface_nodes").get<std::int64_t>();
    EXPECT_GT(interface, 0);
    EXPECT_GE(row.at("ghost_nodes_total").get<std::int64_t>(), interface);
    EXPECT_LE(row.at("ghost_nodes_total").get<std::int64_t>(), (parts - 1) * interface);
    const auto neighbours = row.at("neighbours").get<std::vector<int>>();
    EXPECT_EQ(row.at("neighbours_max").get<int>(), *std::max_element(neighbours.begin(), neighbours.end()));
    for (const int n : neighbours) {
      EXPECT_GE(n, 1);
      EXPECT_LT(n, parts);
    }
    EXPECT_GT(row.at("edge_cut").get<std::int64_t>(), 0);
    EXPECT_GE(row.at("seconds").get<double>(), 0.0);
  }
  // The table on standard output: a row per part count, beginning with it.
  for (const int parts : expected_parts)
    EXPECT_NE(
        r.out.find("\n" + std::string(6 - std::to_string(parts).size(), ' ') + std::to_string(parts) + " "),
        std::string::npos)
        << r.out;
}

TEST(FemPartition, BadPartCountsAreOneLineErrors) {
  const auto dir = temp_dir();
  // gen:square-tri3:2 has 8 cells.
  const CliResult more = fem_run("partition gen:square-tri3:2 --parts 2 --parts 9", dir);
  if (without_metis(more)) GTEST_SKIP() << more.err;
  expect_one_line_naming(more, "--parts 9");
  EXPECT_EQ(more.out, "");  // checked before anything is printed
  expect_one_line_naming(fem_run("partition gen:square-tri3:2 --parts 0", dir), "--parts");
  expect_one_line_naming(fem_run("partition gen:square-tri3:2 --parts two", dir), "--parts");
  expect_one_line_naming(fem_run("partition gen:square-tri3:2", dir), "--parts");
  expect_one_line_naming(fem_run("partition no-such-mesh.msh --parts 2", dir), "no-such-mesh.msh");
}

}  // namespace
