// Many threads putting, getting, replacing, erasing and deriving at once. Readers check that
// every value they see is whole (no torn reads) and that a key's versions never go back.
// Run under FEM_SANITIZE=thread as well (see docs/ARCHITECTURE.md).
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <random>
#include <thread>

#include "fem/array.hpp"
#include "fem/store.hpp"

namespace {

using Stamped = fem::Array<std::int64_t>;

Stamped stamped(std::int64_t stamp, std::size_t n) { return Stamped(std::vector<std::int64_t>(n, stamp)); }

TEST(StoreConcurrency, MixedOperationsStayConsistent) {
  fem::Store s(64 * 1024);  // small budget: evictions happen during the run too
  constexpr int kThreads = 8;
  constexpr int kOps = 4000;
  const std::vector<std::string> keys = {"k0", "k1", "k2", "k3", "k4", "k5"};
  std::atomic<std::int64_t> next_stamp{1};
  std::atomic<int> failures{0};

  auto worker = [&](int id) {
    std::mt19937 rng(1234 + id);
    std::map<std::string, fem::Version> last_seen;
    for (int op = 0; op < kOps; ++op) {
      const std::string& key = keys[rng() % keys.size()];
      switch (rng() % 6) {
        case 0:
        case 1: {  // put / replace
          const std::int64_t st = next_stamp++;
          s.put(key, stamped(st, 16 + st % 64), fem::PutOptions().cache(st % 3 == 0));
          break;
        }
        case 2: {  // typed read of value and version together
          try {
            auto got = s.get_versioned<Stamped>(key);
            if (got.version < last_seen[key]) ++failures;
            last_seen[key] = got.version;
            if (got.value->size() != 16 + static_cast<std::size_t>(got.value->data()[0] % 64)) ++failures;
          } catch (const fem::KeyError&) {  // raced an erase: fine
          }
          break;
        }
        case 3: {
          if (auto v = s.find<Stamped>(key)) {
            for (auto x : v->data())
              if (x != v->data()[0]) ++failures;  // torn value
          }
          break;
        }
        case 4: {  // derived entry from the current version
          try {
            auto in = s.get_versioned<Stamped>(key);
            auto d = s.get_or_compute<Stamped>(key + "#sum", {{key, in.version}}, [&] {
              std::int64_t sum = 0;
              for (auto x : in.value->data()) sum += x;
              return stamped(sum, 1);
            });
            std::int64_t expect = 0;
            for (auto x : in.value->data()) expect += x;
            if (d->data()[0] != expect) ++failures;  // a derived value from another version
          } catch (const fem::KeyError&) {
          }
          break;
        }
        default:
          s.erase(key);
          break;
      }
      // Versions of a key seen by one thread never decrease.
      try {
        const auto v = s.version(key);
        if (v < last_seen[key]) ++failures;
        last_seen[key] = v;
      } catch (const fem::KeyError&) {
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, t);
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);

  // Byte accounting adds up after the storm.
  std::size_t bytes = 0;
  for (const auto& e : s.list()) bytes += e.bytes;
  EXPECT_EQ(bytes, s.stats().bytes);
  // Every derived entry left is consistent with its input's current version.
  for (const auto& e : s.list())
    for (const auto& in : e.inputs) EXPECT_EQ(s.version(in.key), in.version) << e.key;
}

TEST(StoreConcurrency, ConcurrentReadersOfOneEntry) {
  fem::Store s;
  s.put("A", stamped(7, 1000));
  std::atomic<std::int64_t> total{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) total += s.get<Stamped>("A")->data()[999];
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(total.load(), 7 * 8 * 2000);
  EXPECT_EQ(s.stats().hits, 8u * 2000u);
}

}  // namespace
