// Mesh reading: read_gmsh on MSH 4.1 and 2.2 files, ASCII and binary, of a generated box of
// 6·n³ tetrahedra (n = 80 by default: 3.07M cells, 531k nodes; FEM_BENCH_MESH_N overrides),
// written to /tmp by write_gmsh before the cases run. Baseline in the same run: a plain
// `std::ifstream >>` parser of the MSH 4.1 ASCII file (no checks at all). Counters: MB/s of file,
// elements/s (cells + boundary facets), peak resident memory of the case (peak_MB).
//
//   build-meshio/bench/mesh/bench_mesh_read
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/peak_memory.hpp"
#include "fem/error.hpp"
#include "fem/mesh/mesh.hpp"

namespace {

using fem::CellType;
using fem::mesh::GmshVersion;

struct File {
  const char* label;
  GmshVersion version;
  bool binary;
  std::filesystem::path path;
  std::size_t bytes = 0;
  std::size_t elements = 0;
};

int mesh_n() {
  const char* e = std::getenv("FEM_BENCH_MESH_N");
  return e ? std::max(1, std::atoi(e)) : 80;
}

std::vector<File>& files() {
  static std::vector<File> f = [] {
    std::vector<File> v{{"MSH 4.1 ASCII", GmshVersion::msh41, false, {}},
                        {"MSH 4.1 binary", GmshVersion::msh41, true, {}},
                        {"MSH 2.2 ASCII", GmshVersion::msh22, false, {}},
                        {"MSH 2.2 binary", GmshVersion::msh22, true, {}}};
    const int n = mesh_n();
    const fem::Mesh m = fem::mesh::box(CellType::tet4, n, n, n);
    for (auto& x : v) {
      x.path = std::filesystem::temp_directory_path() /
               fmt::format("fem_bench_box{}_v{}{}.msh", n, x.version == GmshVersion::msh41 ? "41" : "22",
                           x.binary ? "_bin" : "");
      fem::mesh::write_gmsh(m, x.path, x.binary, x.version);
      x.bytes = std::filesystem::file_size(x.path);
      x.elements = static_cast<std::size_t>(m.num_cells() + m.num_facets());
    }
    return v;
  }();
  return f;
}

void rates(benchmark::State& state, const File& f) {
  state.SetLabel(f.label);
  state.counters["MB/s"] = benchmark::Counter(static_cast<double>(f.bytes) * state.iterations() / 1e6,
                                              benchmark::Counter::kIsRate);
  state.counters["elements/s"] =
      benchmark::Counter(static_cast<double>(f.elements) * state.iterations(), benchmark::Counter::kIsRate);
  state.counters["file_MB"] = static_cast<double>(f.bytes) / 1e6;
  fem::bench::report_peak_memory(state);
}

void BM_read_gmsh(benchmark::State& state) {
  const File& f = files()[state.range(0)];
  fem::bench::reset_peak_memory();
  for (auto _ : state) {
    const fem::Mesh m = fem::mesh::read_gmsh(f.path);
    benchmark::DoNotOptimize(m.cells().data());
  }
  rates(state, f);
}

// The plain baseline: iostream extraction of MSH 4.1 ASCII into the same arrays, no checks.
void BM_ifstream_baseline(benchmark::State& state) {
  const File& f = files()[0];
  fem::bench::reset_peak_memory();
  for (auto _ : state) {
    std::ifstream in(f.path);
    std::vector<double> xyz;
    std::vector<std::size_t> node_tags, cells, facets;
    std::string w;
    while (in >> w) {
      if (w == "$Nodes") {
        std::size_t blocks, n, lo, hi;
        in >> blocks >> n >> lo >> hi;
        xyz.reserve(3 * n);
        node_tags.reserve(n);
        for (std::size_t b = 0; b < blocks; ++b) {
          int dim, tag, param;
          std::size_t nb;
          in >> dim >> tag >> param >> nb;
          for (std::size_t i = 0; i < nb; ++i) {
            std::size_t t;
            in >> t;
            node_tags.push_back(t);
          }
          for (std::size_t i = 0; i < 3 * nb; ++i) {
            double x;
            in >> x;
            xyz.push_back(x);
          }
        }
      } else if (w == "$Elements") {
        std::size_t blocks, n, lo, hi;
        in >> blocks >> n >> lo >> hi;
        for (std::size_t b = 0; b < blocks; ++b) {
          int dim, tag, type;
          std::size_t nb;
          in >> dim >> tag >> type >> nb;
          const int k = fem::cell_info(*fem::cell_type_from_gmsh(type)).num_nodes;
          auto& out = dim == 3 ? cells : facets;
          for (std::size_t e = 0; e < nb; ++e) {
            std::size_t t;
            in >> t;
            for (int j = 0; j < k; ++j) {
              in >> t;
              out.push_back(t);
            }
          }
        }
      }
    }
    benchmark::DoNotOptimize(cells.data());
    benchmark::DoNotOptimize(xyz.data());
  }
  rates(state, f);
}

BENCHMARK(BM_read_gmsh)->DenseRange(0, 3)->Unit(benchmark::kMillisecond)->Iterations(2)->UseRealTime();
BENCHMARK(BM_ifstream_baseline)->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
