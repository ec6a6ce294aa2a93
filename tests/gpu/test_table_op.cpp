// The hash table as an op (fem/gpu/c_api.h): every op through the C ABI, on the host twin, the
// debug device and CUDA, for every key and value type, with the caller's arrays on the host and
// (device tables) in the device's memory, against std::map on random batches with repeated and
// missing keys; the handle's lifetime in the store; the errors, each leaving the table as it was.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "fem/c_api.h"
#include "fem/gpu/c_api.h"
#include "fem/gpu/connectivity.hpp"
#include "fem/gpu/executor.hpp"
#include "fem/gpu/keys.hpp"
#include "fem/gpu/table.hpp"
#include "fem/mesh/generate.hpp"
#include "fem/reference_cell.hpp"
#include "fem/store.hpp"

namespace {

std::string last() { return fem_last_error(); }

struct Case {
  int32_t key, value, device;
  bool resident = false;  ///< the caller's arrays in the table's executor memory
};

std::string name_of(const Case& c) {
  const char* k = c.key == FEM_I32 ? "i32" : c.key == FEM_I64 ? "i64" : "pair";
  const char* v = c.value == FEM_I32 ? "i32" : c.value == FEM_I64 ? "i64" : "f64";
  return std::string(k) + "_" + v +
         (c.device == FEM_DEVICE_HOST    ? "_host"
          : c.device == FEM_DEVICE_DEBUG ? "_debug"
                                         : "_cuda") +
         (c.resident ? "_resident" : "");
}

class TableOp : public ::testing::TestWithParam<Case> {
 protected:
  // A key as the test's map holds it: (high, low); one-word keys have high 0.
  using Key = std::pair<int64_t, int64_t>;
  std::size_t key_words() const { return GetParam().key == FEM_TABLE_KEY_PAIR ? 2 : 1; }
  std::size_t key_bytes() const { return GetParam().key == FEM_I32 ? 4 : GetParam().key == FEM_I64 ? 8 : 16; }
  std::size_t value_bytes() const { return GetParam().value == FEM_I32 ? 4 : 8; }
  // Caller arrays of keys drawn from `universe` distinct ones (repeats certain).
  std::vector<char> pack_keys(const std::vector<Key>& keys) const {
    std::vector<char> out(keys.size() * key_bytes());
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (GetParam().key == FEM_I32) {
        const auto k = static_cast<int32_t>(keys[i].second);
        std::memcpy(&out[i * 4], &k, 4);
      } else if (GetParam().key == FEM_I64) {
        std::memcpy(&out[i * 8], &keys[i].second, 8);
      } else {
        std::memcpy(&out[i * 16], &keys[i].second, 8);  // low, then high
        std::memcpy(&out[i * 16 + 8], &keys[i].first, 8);
      }
    }
    return out;
  }
  double value_at(const std::vector<char>& values, std::size_t i) const {
    if (GetParam().value == FEM_I32) {
      int32_t v;
      std::memcpy(&v, &values[i * 4], 4);
      return v;
    }
    if (GetParam().value == FEM_I64) {
      int64_t v;
      std::memcpy(&v, &values[i * 8], 8);
      return static_cast<double>(v);
    }
    double v;
    std::memcpy(&v, &values[i * 8], 8);
    return v;
  }
  std::vector<char> pack_values(const std::vector<double>& values) const {
    std::vector<char> out(values.size() * value_bytes());
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (GetParam().value == FEM_I32) {
        const auto v = static_cast<int32_t>(values[i]);
        std::memcpy(&out[i * 4], &v, 4);
      } else if (GetParam().value == FEM_I64) {
        const auto v = static_cast<int64_t>(values[i]);
        std::memcpy(&out[i * 8], &v, 8);
      } else {
        std::memcpy(&out[i * 8], &values[i], 8);
      }
    }
    return out;
  }
  Key random_key(std::mt19937_64& rng, int universe) const {
    const int64_t k = static_cast<int64_t>(rng() % universe) - universe / 2;  // negative keys too
    if (key_words() == 2) return {k * 7 + 3, k == -1 ? 5 : k};
    return {0, k == -1 ? -2 : k};  // -1 is reserved
  }
  // The caller's array where the case puts it: on the host, or copied into the table's
  // executor memory (as a CUDA tensor's or a device buffer's), the ops taking it in place.
  template <class T>
  T* at(const char* table, std::vector<T>& host) {
    if (!GetParam().resident || host.empty()) return host.data();
    const auto exec = fem::store().get<fem::gpu::Table>(table)->executor();
    auto& b = buffers_.emplace_back(exec, host.size() * sizeof(T));
    b.upload({reinterpret_cast<const unsigned char*>(host.data()), b.size()});
    exec.context().synchronize();
    return reinterpret_cast<T*>(b.data());
  }
  // An output array's values back on the host.
  template <class T>
  void back(const T* where, std::vector<T>& host) {
    if (static_cast<const void*>(where) == static_cast<const void*>(host.data())) return;
    for (auto& b : buffers_)
      if (static_cast<const void*>(b.data()) == static_cast<const void*>(where)) {
        b.download({reinterpret_cast<unsigned char*>(host.data()), b.size()});
        fem::store().get<fem::gpu::Table>("t")->executor().context().synchronize();
      }
  }
  std::vector<fem::gpu::DeviceBuffer<unsigned char>> buffers_;

  void SetUp() override {
    if (GetParam().device == FEM_DEVICE_CUDA && !fem::gpu::cuda_available())
      GTEST_SKIP() << "no CUDA device (scripts/gpu-check.sh runs these)";
    ASSERT_EQ(fem_clear(), FEM_OK);
  }
};

TEST_P(TableOp, EveryOpAgreesWithAMap) {
  const Case c = GetParam();
  ASSERT_EQ(fem_table_create("t", c.key, c.value, 64, 0.5, c.device), FEM_OK) << last();
  std::mt19937_64 rng(7);
  std::map<Key, double> expected;
  for (int batch = 0; batch < 4; ++batch) {  // grows past its 64 expected keys
    std::vector<Key> keys(500);
    std::vector<double> values(keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i) {
      keys[i] = random_key(rng, 600);
      values[i] =
          c.value == FEM_F64 ? 0.25 * static_cast<double>(rng() % 1000) : static_cast<double>(rng() % 100000);
    }
    auto k = pack_keys(keys);
    auto v = pack_values(values);
    ASSERT_EQ(fem_table_insert("t", at("t", k), at("t", v), static_cast<int64_t>(keys.size())), FEM_OK)
        << last();
    for (std::size_t i = 0; i < keys.size(); ++i) expected[keys[i]] = values[i];  // the later assignment wins
    int64_t size = -1;
    ASSERT_EQ(fem_table_size("t", &size), FEM_OK);
    EXPECT_EQ(size, static_cast<int64_t>(expected.size()));
  }
  // Finds of present and missing keys.
  std::vector<Key> queries(800);
  for (auto& q : queries) q = random_key(rng, 1500);
  auto qk = pack_keys(queries);
  std::vector<char> got(queries.size() * value_bytes(), 0);
  std::vector<uint8_t> found(queries.size(), 9);
  char* got_at = at("t", got);
  uint8_t* found_at = at("t", found);
  ASSERT_EQ(fem_table_find("t", at("t", qk), got_at, found_at, static_cast<int64_t>(queries.size())), FEM_OK)
      << last();
  back(got_at, got);
  back(found_at, found);
  int missing = 0;
  for (std::size_t i = 0; i < queries.size(); ++i) {
    const auto it = expected.find(queries[i]);
    ASSERT_EQ(found[i], it != expected.end() ? 1 : 0) << i;
    if (it != expected.end())
      EXPECT_EQ(value_at(got, i), it->second) << i;
    else {
      ++missing;
      if (c.value == FEM_F64)
        EXPECT_TRUE(std::isnan(value_at(got, i)));
      else
        EXPECT_EQ(value_at(got, i), -1.0);  // all ones
    }
  }
  EXPECT_GT(missing, 0);
  // Export: every entry, sorted by key.
  int64_t n = 0;
  EXPECT_EQ(fem_table_export("t", nullptr, nullptr, 0, &n), FEM_ERR_BUFFER_TOO_SMALL);
  ASSERT_EQ(n, static_cast<int64_t>(expected.size()));
  std::vector<char> ek(static_cast<std::size_t>(n) * key_bytes()),
      ev(static_cast<std::size_t>(n) * value_bytes());
  char* ek_at = at("t", ek);
  char* ev_at = at("t", ev);
  ASSERT_EQ(fem_table_export("t", ek_at, ev_at, n, &n), FEM_OK) << last();
  back(ek_at, ek);
  back(ev_at, ev);
  std::size_t i = 0;
  for (const auto& [key, value] : expected) {  // std::map: the same order (high, then low)
    EXPECT_EQ(std::vector<char>(ek.begin() + i * key_bytes(), ek.begin() + (i + 1) * key_bytes()),
              pack_keys({key}))
        << i;
    EXPECT_EQ(value_at(ev, i), value) << i;
    ++i;
  }
}

TEST_P(TableOp, InsertUniqueNumbersInFirstOccurrenceOrder) {
  const Case c = GetParam();
  if (c.value == FEM_F64) {
    ASSERT_EQ(fem_table_create("t", c.key, c.value, 0, 0, c.device), FEM_OK);
    const auto k = pack_keys({{0, 1}});
    double id = 0;
    EXPECT_EQ(fem_table_insert_unique("t", k.data(), &id, nullptr, 1), FEM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(last().find("float64"), std::string::npos) << last();
    return;
  }
  ASSERT_EQ(fem_table_create("t", c.key, c.value, 16, 0.5, c.device), FEM_OK) << last();
  std::mt19937_64 rng(11);
  std::map<Key, int64_t> ids;
  for (int batch = 0; batch < 3; ++batch) {
    std::vector<Key> keys(400);
    for (auto& k : keys) k = random_key(rng, 500);
    auto packed = pack_keys(keys);
    std::vector<char> out(keys.size() * value_bytes());
    std::vector<uint8_t> is_new(keys.size());
    char* out_at = at("t", out);
    uint8_t* is_new_at = at("t", is_new);
    ASSERT_EQ(
        fem_table_insert_unique("t", at("t", packed), out_at, is_new_at, static_cast<int64_t>(keys.size())),
        FEM_OK)
        << last();
    back(out_at, out);
    back(is_new_at, is_new);
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const bool fresh = ids.emplace(keys[i], static_cast<int64_t>(ids.size())).second;
      EXPECT_EQ(is_new[i], fresh ? 1 : 0) << i;
      EXPECT_EQ(value_at(out, i), static_cast<double>(ids[keys[i]])) << i;
    }
  }
}

std::vector<Case> all_cases() {
  std::vector<Case> out;
  for (int32_t device : {FEM_DEVICE_HOST, FEM_DEVICE_DEBUG, FEM_DEVICE_CUDA})
    for (int32_t key : {int32_t{FEM_I32}, int32_t{FEM_I64}, int32_t{FEM_TABLE_KEY_PAIR}})
      for (int32_t value : {FEM_I32, FEM_I64, FEM_F64}) {
        out.push_back({key, value, device});
        if (device != FEM_DEVICE_HOST) out.push_back({key, value, device, true});
      }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Types, TableOp, ::testing::ValuesIn(all_cases()),
                         [](const auto& info) { return name_of(info.param); });

TEST(TableOpErrors, EachIsOneMessageAndChangesNothing) {
  ASSERT_EQ(fem_clear(), FEM_OK);
  EXPECT_EQ(fem_table_create("e", 7, FEM_I32, 0, 0, FEM_DEVICE_HOST), FEM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last().find("key dtype 7"), std::string::npos) << last();
  EXPECT_EQ(fem_table_create("e", FEM_I64, FEM_OPAQUE, 0, 0, FEM_DEVICE_HOST), FEM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(fem_table_create("e", FEM_I64, FEM_I32, 0, 0.99, FEM_DEVICE_HOST), FEM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(fem_table_create("e", FEM_I64, FEM_I32, 0, 0, 9), FEM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(fem_table_size("e", nullptr), FEM_ERR_INVALID_ARGUMENT);
  int64_t size = 0;
  EXPECT_EQ(fem_table_size("e", &size), FEM_ERR_NOT_FOUND);  // no failed create published anything
  ASSERT_EQ(fem_table_create("e", FEM_I64, FEM_I32, 0, 0, FEM_DEVICE_HOST), FEM_OK);
  // The reserved key in a batch: refused, naming it, and no key of the batch inserted.
  const int64_t keys[3] = {5, -1, 6};
  const int32_t values[3] = {1, 2, 3};
  EXPECT_EQ(fem_table_insert("e", keys, values, 3), FEM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last().find("reserved"), std::string::npos) << last();
  ASSERT_EQ(fem_table_size("e", &size), FEM_OK);
  EXPECT_EQ(size, 0);
  // A pair whose high half marks an empty or claimed slot.
  ASSERT_EQ(fem_table_create("p", FEM_TABLE_KEY_PAIR, FEM_I32, 0, 0, FEM_DEVICE_HOST), FEM_OK);
  for (int64_t hi : {int64_t{-1}, int64_t{-2}}) {
    const int64_t pair[2] = {3, hi};
    EXPECT_EQ(fem_table_insert("p", pair, values, 1), FEM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(last().find("reserved"), std::string::npos) << last();
  }
  EXPECT_EQ(fem_table_insert("e", keys, nullptr, 3), FEM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(fem_table_insert("e", keys, values, -1), FEM_ERR_INVALID_ARGUMENT);
  // Another entry's type under the key.
  const double x = 1;
  const int64_t one = 1;
  ASSERT_EQ(fem_put_f64("array", &x, 1, &one, nullptr), FEM_OK);
  EXPECT_EQ(fem_table_insert("array", keys, values, 1), FEM_ERR_WRONG_TYPE);
}

// Arrays in the debug device's memory: a reserved key is found there and refused, and one
// call's arrays are all in one place.
TEST(TableOpErrors, DeviceArraysAreCheckedWhereTheyAre) {
  ASSERT_EQ(fem_clear(), FEM_OK);
  for (int32_t key_type : {int32_t{FEM_I32}, int32_t{FEM_I64}}) {
    ASSERT_EQ(fem_table_create("d", key_type, FEM_I64, 0, 0, FEM_DEVICE_DEBUG), FEM_OK);
    const auto exec = fem::store().get<fem::gpu::Table>("d")->executor();
    const std::size_t kb = key_type == FEM_I32 ? 4 : 8;
    fem::gpu::DeviceBuffer<unsigned char> keys(exec, 3 * kb), values(exec, 3 * 8);
    std::vector<unsigned char> k(3 * kb, 0);
    for (int i = 0; i < 3; ++i) {
      const int64_t key = i == 1 ? -1 : 10 + i;
      std::memcpy(&k[i * kb], &key, kb);  // little-endian: the low bytes
    }
    keys.upload(k);
    const int64_t host_values[3] = {1, 2, 3};
    values.upload({reinterpret_cast<const unsigned char*>(host_values), 24});
    EXPECT_EQ(fem_table_insert("d", keys.data(), values.data(), 3), FEM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(last().find("key 1 is the reserved key -1"), std::string::npos) << last();
    int64_t size = -1;
    ASSERT_EQ(fem_table_size("d", &size), FEM_OK);
    EXPECT_EQ(size, 0);
    EXPECT_EQ(fem_table_insert("d", keys.data(), host_values, 1), FEM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(last().find("keys are in the device's memory but values in host memory"), std::string::npos)
        << last();
    EXPECT_EQ(fem_table_insert("d", keys.data(), values.data(), 1), FEM_OK) << last();
    int64_t got = 0;
    uint8_t found = 0;
    EXPECT_EQ(fem_table_find("d", keys.data(), &got, &found, 1), FEM_ERR_INVALID_ARGUMENT);
    ASSERT_EQ(fem_table_find("d", k.data(), &got, &found, 1), FEM_OK) << last();  // host keys: copied
    EXPECT_EQ(found, 1);
    EXPECT_EQ(got, 1);
  }
}

TEST(TableOpLifetime, AHolderKeepsItsTableAndAReplacementServesLaterOps) {
  ASSERT_EQ(fem_clear(), FEM_OK);
  ASSERT_EQ(fem_table_create("life", FEM_I64, FEM_I64, 0, 0, FEM_DEVICE_HOST), FEM_OK);
  const int64_t k = 42, v = 7;
  ASSERT_EQ(fem_table_insert("life", &k, &v, 1), FEM_OK);
  const auto held = fem::store().get<fem::gpu::Table>("life");  // a holder, as Python's handle
  ASSERT_EQ(fem_erase("life"), FEM_OK);
  int64_t got = 0;
  uint8_t found = 0;
  held->find(&k, &got, &found, 1);
  EXPECT_EQ(found, 1);
  EXPECT_EQ(got, 7);
  EXPECT_EQ(fem_table_find("life", &k, &got, &found, 1), FEM_ERR_NOT_FOUND);
  // Replaced under the same key: later ops see the new, empty table; the holder its own.
  ASSERT_EQ(fem_table_create("life", FEM_I64, FEM_I64, 0, 0, FEM_DEVICE_HOST), FEM_OK);
  ASSERT_EQ(fem_table_find("life", &k, &got, &found, 1), FEM_OK);
  EXPECT_EQ(found, 0);
  EXPECT_EQ(held->size(), 1u);
  fem_entry_info info{};
  ASSERT_EQ(fem_info("life", &info), FEM_OK);
  EXPECT_STREQ(info.type, "fem::gpu::Table");
  EXPECT_GT(info.bytes, 0u);  // the table's bytes are accounted
}

TEST(TableOpConnectivity, InsertUniqueNumbersEdgesAsTheConnectivityDoes) {
  // The mesh's edges as keys (the connectivity's packed sorted vertex pairs, cell by cell in
  // local_edges() order) through the op: the ids are the connectivity's edge numbers.
  ASSERT_EQ(fem_clear(), FEM_OK);
  const fem::Mesh mesh = fem::mesh::generate("gen:cube-tet4:6");
  const auto numbering = fem::gpu::number_edges(fem::gpu::Executor::host(), mesh);
  const auto local = fem::local_edges(mesh.cell_type());
  std::vector<int64_t> keys;
  for (fem::index_t c = 0; c < mesh.num_cells(); ++c) {
    const auto cell = mesh.cell(c);
    for (const auto& e : local)
      keys.push_back(static_cast<int64_t>(fem::gpu::pack_sorted_pair(cell[e[0]], cell[e[1]])));
  }
  for (int32_t device : {FEM_DEVICE_HOST, FEM_DEVICE_DEBUG, FEM_DEVICE_CUDA}) {
    if (device == FEM_DEVICE_CUDA && !fem::gpu::cuda_available()) continue;  // gpu-check.sh runs it
    ASSERT_EQ(fem_table_create("edges", FEM_I64, FEM_I32, 0, 0, device), FEM_OK) << last();
    std::vector<int32_t> ids(keys.size());
    ASSERT_EQ(
        fem_table_insert_unique("edges", keys.data(), ids.data(), nullptr, static_cast<int64_t>(keys.size())),
        FEM_OK)
        << last();
    ASSERT_EQ(ids.size(), numbering.cell_edges.size());
    for (std::size_t i = 0; i < ids.size(); ++i) ASSERT_EQ(ids[i], numbering.cell_edges[i]) << i;
    int64_t n = 0;
    ASSERT_EQ(fem_table_size("edges", &n), FEM_OK);
    EXPECT_EQ(n, numbering.num_edges);
  }
}

}  // namespace
