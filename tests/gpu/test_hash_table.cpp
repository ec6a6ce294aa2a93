// The hash table on every executor: exactly the unique keys of a real mesh's (row, col) stream,
// insert_unique ids that are a bijection in first-occurrence order, find, growth, contention,
// 128-bit keys, and the same results on every executor.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <set>

#include "../support/parallel_paths.hpp"
#include "executors.hpp"
#include "fem/gpu/detail/table_ops.hpp"
#include "fem/gpu/hash_table.hpp"
#include "fem/mesh/generate.hpp"
#include "fem/store.hpp"

namespace {

using namespace fem::gpu;
using fem::gpu::testing::Target;

// Every (row, col) pair of the P1 element matrices of a mesh: the stream a pattern build inserts.
std::vector<std::uint64_t> pair_stream(const fem::Mesh& m) {
  std::vector<std::uint64_t> keys;
  for (fem::index_t c = 0; c < m.num_cells(); ++c)
    for (auto a : m.cell(c))
      for (auto b : m.cell(c)) keys.push_back(pack_pair(a, b));
  return keys;
}

template <class K>
std::vector<K> sorted_unique(std::vector<K> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

// The host twin's parallel paths even for small tables, on every thread asked for however busy
// the machine is (fem/threads.hpp would otherwise use fewer).
class HashTableTest : public ::testing::TestWithParam<Target> {
  fem::testing::ParallelPaths parallel_;
};

TEST_P(HashTableTest, InsertGivesExactlyTheUniquePairsOfAMesh) {
  FEM_TEST_EXECUTOR(GetParam(), exec);
  for (const auto& mesh :
       {fem::mesh::unit_cube(fem::CellType::tet4, 6), fem::mesh::unit_square(fem::CellType::quad4, 20)}) {
    const auto keys = pair_stream(mesh);
    HashTable64x32 table(exec, keys.size() / 4);
    std::vector<std::uint32_t> values(keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i) values[i] = static_cast<std::uint32_t>(keys[i] % 1000003);
    table.insert(keys, values);
    std::vector<std::uint64_t> out_keys;
    std::vector<std::uint32_t> out_values;
    table.export_entries(out_keys, out_values);
    const auto expected = sorted_unique(keys);
    EXPECT_EQ(table.size(), expected.size());
    std::vector<std::pair<std::uint64_t, std::uint32_t>> got;
    for (std::size_t i = 0; i < out_keys.size(); ++i) got.emplace_back(out_keys[i], out_values[i]);
    std::sort(got.begin(), got.end());
    ASSERT_EQ(got.size(), expected.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].first, expected[i]);
      EXPECT_EQ(got[i].second, expected[i] % 1000003);  // the value that went with the key
    }
    EXPECT_LE(table.load_factor(), 0.5);
  }
}

TEST_P(HashTableTest, InsertUniqueNumbersInFirstOccurrenceOrder) {
  FEM_TEST_EXECUTOR(GetParam(), exec);
  const auto keys = pair_stream(fem::mesh::unit_cube(fem::CellType::hex8, 5));
  HashTable64x32 table(exec, 1000);  // small on purpose: it must grow on the way
  std::vector<std::uint32_t> ids(keys.size());
  std::vector<std::uint8_t> is_new(keys.size());
  table.insert_unique(keys, ids, is_new);
  const auto unique = sorted_unique(keys);
  ASSERT_EQ(table.size(), unique.size());
  EXPECT_GT(table.rebuilds(), 0u);
  // Reference numbering: a key's id is the number of distinct keys first seen before it.
  std::map<std::uint64_t, std::uint32_t> reference;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    auto [it, inserted] = reference.emplace(keys[i], static_cast<std::uint32_t>(reference.size()));
    EXPECT_EQ(ids[i], it->second) << "occurrence " << i;
    EXPECT_EQ(is_new[i], inserted ? 1 : 0) << "occurrence " << i;
  }
  // The table now maps every key to its id.
  std::vector<std::uint32_t> found_ids(unique.size());
  std::vector<std::uint8_t> found(unique.size());
  table.find(unique, found_ids, found);
  for (std::size_t i = 0; i < unique.size(); ++i) {
    EXPECT_TRUE(found[i]);
    EXPECT_EQ(found_ids[i], reference[unique[i]]);
  }
  // A second batch continues the numbering; known keys keep their ids.
  std::vector<std::uint64_t> more{unique[3], pack_pair(1 << 20, 7), unique[3], pack_pair(1 << 20, 8)};
  std::vector<std::uint32_t> more_ids(more.size());
  table.insert_unique(more, more_ids);
  const auto n = static_cast<std::uint32_t>(unique.size());
  EXPECT_EQ(more_ids, (std::vector<std::uint32_t>{reference[unique[3]], n, reference[unique[3]], n + 1}));
}

TEST_P(HashTableTest, FindsEverythingInsertedAndNothingElse) {
  FEM_TEST_EXECUTOR(GetParam(), exec);
  std::mt19937_64 rng(7);
  std::vector<std::uint64_t> keys(200000), absent(50000);
  std::set<std::uint64_t> present;
  for (auto& k : keys) present.insert(k = rng() >> 1);
  for (auto& k : absent) do
      k = rng() >> 1;
    while (present.count(k));
  HashTable64x64 table(exec, keys.size());
  std::vector<std::uint64_t> values(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) values[i] = keys[i] ^ 0x5555;
  table.insert(keys, values);
  std::vector<std::uint64_t> got(keys.size());
  std::vector<std::uint8_t> found(keys.size());
  table.find(keys, got, found);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    ASSERT_TRUE(found[i]) << i;
    EXPECT_EQ(got[i], keys[i] ^ 0x5555);
  }
  std::vector<std::uint64_t> none(absent.size());
  std::vector<std::uint8_t> none_found(absent.size());
  table.find(absent, none, none_found);
  EXPECT_EQ(std::count(none_found.begin(), none_found.end(), 1), 0);
}

TEST_P(HashTableTest, GrowthPreservesContents) {
  FEM_TEST_EXECUTOR(GetParam(), exec);
  HashTable64x32::Options opt;
  opt.max_load = 0.5;
  HashTable64x32 table(exec, 0, opt);
  const std::size_t cap0 = table.capacity();
  std::vector<std::uint64_t> keys(300000);
  std::vector<std::uint32_t> values(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    keys[i] = pack_pair(static_cast<fem::index_t>(i), static_cast<fem::index_t>(i * 7));
    values[i] = static_cast<std::uint32_t>(i);
  }
  // In pieces, so the table grows between calls as well as within one.
  for (std::size_t off = 0; off < keys.size(); off += 100000)
    table.insert(std::span(keys).subspan(off, 100000),
                 std::span<const std::uint32_t>(values).subspan(off, 100000));
  EXPECT_GT(table.capacity(), cap0);
  EXPECT_LE(table.load_factor(), 0.5);
  EXPECT_EQ(table.size(), keys.size());
  std::vector<std::uint32_t> got(keys.size());
  std::vector<std::uint8_t> found(keys.size());
  table.find(keys, got, found);
  for (std::size_t i = 0; i < keys.size(); ++i) ASSERT_TRUE(found[i] && got[i] == i) << i;
  table.clear();
  EXPECT_EQ(table.size(), 0u);
  table.find(keys, got, found);
  EXPECT_EQ(std::count(found.begin(), found.end(), 1), 0);
}

TEST_P(HashTableTest, HeavyContentionLosesNothing) {
  FEM_TEST_EXECUTOR(GetParam(), exec);
  const int threads_before = omp_get_max_threads();
  omp_set_num_threads(8);  // more threads than cores: maximal interleaving on the host
  std::mt19937 rng(3);
  std::vector<std::uint64_t> keys(1 << 20);
  for (auto& k : keys) k = pack_pair(static_cast<fem::index_t>(rng() % 997), 1);
  HashTable64x32 table(exec, 2000);
  std::vector<std::uint32_t> ids(keys.size());
  table.insert_unique(keys, ids);
  omp_set_num_threads(threads_before);
  EXPECT_EQ(table.size(), sorted_unique(keys).size());
  // Equal keys got equal ids, distinct keys distinct ids.
  std::map<std::uint64_t, std::uint32_t> id_of;
  std::set<std::uint32_t> used;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    auto [it, inserted] = id_of.emplace(keys[i], ids[i]);
    EXPECT_EQ(it->second, ids[i]);
    if (inserted) {
      EXPECT_TRUE(used.insert(ids[i]).second);
    }
  }
  EXPECT_EQ(*used.rbegin(), used.size() - 1);  // ids are exactly 0..size-1
}

TEST_P(HashTableTest, Keys128ForLargeVertexTriples) {
  FEM_TEST_EXECUTOR(GetParam(), exec);
  std::mt19937 rng(11);
  std::vector<Key128> keys;
  for (int i = 0; i < 50000; ++i) {
    const fem::index_t a = rng() % 100 + (1 << 28), b = rng() % 100, c = rng() % 50 + (1 << 22);
    keys.push_back(pack_sorted_triple_128(a, b, c));
    keys.push_back(pack_sorted_triple_128(c, a, b));  // the same face, seen from a neighbour
  }
  HashTable128x32 table(exec, 1000);
  std::vector<std::uint32_t> ids(keys.size());
  table.insert_unique(keys, ids);
  for (std::size_t i = 0; i < keys.size(); i += 2) EXPECT_EQ(ids[i], ids[i + 1]);
  EXPECT_EQ(table.size(), sorted_unique(keys).size());
  std::vector<Key128> out;
  std::vector<std::uint32_t> vals;
  table.export_entries(out, vals);
  std::sort(out.begin(), out.end());
  EXPECT_EQ(out, sorted_unique(keys));
}

TEST_P(HashTableTest, ReservedKeyIsRejected) {
  FEM_TEST_EXECUTOR(GetParam(), exec);
  HashTable64x32 table(exec);
  std::vector<std::uint64_t> keys{1, ~std::uint64_t{0}};
  std::vector<std::uint32_t> values{1, 2};
  EXPECT_THROW(table.insert(keys, values), fem::InvalidArgument);
  EXPECT_EQ(table.size(), 0u);
  std::vector<std::uint32_t> short_values{1};
  EXPECT_THROW(table.insert(keys, short_values), fem::InvalidArgument);
}

TEST_P(HashTableTest, SameResultsAsTheHostTwin) {
  FEM_TEST_EXECUTOR(GetParam(), exec);
  const auto keys = pair_stream(fem::mesh::unit_cube(fem::CellType::tet4, 5));
  HashTable64x32 here(exec, 100), host(Executor::host(), 100);
  std::vector<std::uint32_t> ids_here(keys.size()), ids_host(keys.size());
  here.insert_unique(keys, ids_here);
  host.insert_unique(keys, ids_host);
  EXPECT_EQ(ids_here, ids_host);  // the numbering does not depend on the executor
  std::vector<std::uint64_t> k1, k2;
  std::vector<std::uint32_t> v1, v2;
  here.export_entries(k1, v1);
  host.export_entries(k2, v2);
  std::vector<std::pair<std::uint64_t, std::uint32_t>> a, b;
  for (std::size_t i = 0; i < k1.size(); ++i) a.emplace_back(k1[i], v1[i]);
  for (std::size_t i = 0; i < k2.size(); ++i) b.emplace_back(k2[i], v2[i]);
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  EXPECT_EQ(a, b);
}

// More distinct keys than the table has slots, through the _async form that cannot grow it.
// The inserts that find no room give up after async_probe_limit probes (not the whole capacity
// each), the phases after the marking stop without reading a slot nobody wrote (on CUDA an
// unwritten slot is an out-of-bounds access; the debug device poisons its buffers so that it is
// one there too), and the next blocking call reports the overflow. clear() recovers the table.
TEST_P(HashTableTest, AsyncInsertUniqueIntoAFullTableReportsTheOverflow) {
  FEM_TEST_EXECUTOR(GetParam(), exec);
  HashTable64x32 table(exec, 100);
  const std::size_t n = table.capacity() + 4096;
  std::vector<std::uint64_t> keys(n);
  for (std::size_t i = 0; i < n; ++i) keys[i] = fem::gpu::detail::mix64(i + 1) >> 1;  // distinct, valid
  DeviceBuffer<std::uint64_t> device_keys(exec, n);
  device_keys.upload(keys);
  DeviceBuffer<std::uint32_t> ids(exec, n);
  DeviceBuffer<std::uint8_t> is_new(exec, n);
  table.insert_unique_async(device_keys.data(), ids.data(), is_new.data(), n);
  EXPECT_THROW(table.size(), fem::Error);
  // Growing the table does not make the overflow go away: the batch's ids are lost, and keys it
  // left half-numbered would give duplicate ids later.
  table.reserve(2 * n);
  EXPECT_THROW(table.size(), fem::Error);
  // The plain async insert too, into a table of the first one's size.
  HashTable64x32 small(exec, 100);
  ASSERT_LT(small.capacity(), n);
  DeviceBuffer<std::uint32_t> v(exec, n);
  v.upload(std::vector<std::uint32_t>(n, 7));
  small.insert_async(device_keys.data(), v.data(), n);
  EXPECT_THROW(small.size(), fem::Error);
  table.clear();
  EXPECT_EQ(table.size(), 0u);
  std::vector<std::uint32_t> fresh_ids(100);
  table.insert_unique(std::span<const std::uint64_t>(keys).first(100), fresh_ids);
  EXPECT_EQ(table.size(), 100u);
  EXPECT_EQ(fresh_ids[99], 99u);
}

// A table of 2^31 slots, the most there can be: its export scans 2^31 slot flags, one more than
// a 32-bit item count holds (CUB's scans once took static_cast<int>(n)). The table alone takes
// 26 GB, so the test runs only with FEM_TEST_HUGE=1 (scripts/gpu-check.sh sets it on the GPU).
TEST_P(HashTableTest, ExportOfATableOfTwoTo31Slots) {
  if (!std::getenv("FEM_TEST_HUGE")) GTEST_SKIP() << "needs 26 GB of table memory: set FEM_TEST_HUGE=1";
  FEM_TEST_EXECUTOR(GetParam(), exec);
  HashTable64x32 table(exec, std::size_t{1} << 30);
  ASSERT_EQ(table.capacity(), std::size_t{1} << 31);
  std::vector<std::uint64_t> keys(std::size_t{1} << 20);
  for (std::size_t i = 0; i < keys.size(); ++i) keys[i] = fem::gpu::detail::mix64(i + 1) >> 1;
  std::vector<std::uint32_t> ids(keys.size());
  table.insert_unique(keys, ids);
  std::vector<std::uint64_t> out;
  std::vector<std::uint32_t> values;
  table.export_entries(out, values);
  std::sort(out.begin(), out.end());
  EXPECT_EQ(out, sorted_unique(keys));
}

INSTANTIATE_TEST_SUITE_P(Executors, HashTableTest, fem::gpu::testing::all_targets,
                         fem::gpu::testing::target_name);

TEST(HashTable, NumberingDoesNotDependOnTheThreadCount) {
  const fem::testing::ParallelPaths parallel;
  const auto keys = pair_stream(fem::mesh::unit_cube(fem::CellType::tet4, 6));
  std::vector<std::vector<std::uint32_t>> runs;
  const int before = omp_get_max_threads();
  for (int t : {1, 2, 5}) {
    omp_set_num_threads(t);
    HashTable64x32 table(Executor::host(), 10);
    runs.emplace_back(keys.size());
    table.insert_unique(keys, runs.back());
  }
  omp_set_num_threads(before);
  EXPECT_EQ(runs[0], runs[1]);
  EXPECT_EQ(runs[0], runs[2]);
}

TEST(HashTable, AsyncFormsOnTheHost) {
  HashTable64x32 table(Executor::host(), 100);
  std::vector<std::uint64_t> keys{5, 6, 5, 7};
  std::vector<std::uint32_t> ids(4);
  table.insert_unique_async(keys.data(), ids.data(), nullptr, keys.size());
  EXPECT_EQ(table.size(), 3u);
  EXPECT_EQ(ids, (std::vector<std::uint32_t>{0, 1, 0, 2}));
}

TEST(HashTable, LivesInTheStoreWithItsBytesAndResidency) {
  fem::Store s;
  auto table = std::make_shared<HashTable64x32>(Executor::host(), 1000);
  s.put("mesh/x#edges", std::shared_ptr<const HashTable64x32>(table));
  const auto info = s.info("mesh/x#edges");
  EXPECT_EQ(info.type, "fem::gpu::HashTable<u64,u32>");
  EXPECT_GE(info.bytes, table->capacity() * 12);
  EXPECT_EQ(info.residency, fem::Residency::host);
  EXPECT_EQ(s.stats().device_bytes, 0u);
}

TEST(HashTable, CudaExecutorFailsClearlyWithoutAGpu) {
  std::string reason;
  if (cuda_available(&reason)) GTEST_SKIP() << "a GPU is present";
  EXPECT_FALSE(reason.empty());
  try {
    Executor::cuda();
    FAIL() << "expected an error";
  } catch (const fem::Error& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA"), std::string::npos) << e.what();
  }
}

}  // namespace
