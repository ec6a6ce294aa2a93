// The store's contract: typed immutable entries, versions, errors that name keys and types,
// LRU eviction of caches only, derived entries that are never stale, and failure atomicity.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "fem/array.hpp"
#include "fem/c_api.h"
#include "fem/store.hpp"

namespace {

using fem::Array;
using fem::Store;

struct Blob {
  std::size_t size = 0;
  int stamp = 0;
  std::size_t bytes() const { return size; }
};

struct DeviceBlob {
  std::size_t bytes() const { return 1000; }
  fem::Residency residency() const { return fem::Residency::device; }
};

}  // namespace

FEM_TYPE_NAME(Blob, "test::Blob");
FEM_TYPE_NAME(DeviceBlob, "test::DeviceBlob");

namespace {

Array<double> vec(std::initializer_list<double> v) { return Array<double>(std::vector<double>(v)); }

TEST(Store, PutGetTypedAndImmutable) {
  Store s;
  const auto v = s.put("A", vec({1, 2, 3}));
  auto a = s.get<Array<double>>("A");
  ASSERT_EQ(a->size(), 3u);
  EXPECT_EQ((*a)[2], 3.0);
  EXPECT_EQ(s.version("A"), v);
  EXPECT_EQ(s.type_of("A"), "fem::Array<f64>");
  // The same object is shared, never copied.
  EXPECT_EQ(s.get<Array<double>>("A").get(), a.get());
  static_assert(std::is_same_v<decltype(a), std::shared_ptr<const Array<double>>>);
}

TEST(Store, VersionsGrowOnEveryReplaceAndAreNeverReused) {
  Store s;
  const auto v1 = s.put("A", vec({1}));
  const auto v2 = s.put("A", vec({2}));
  EXPECT_GT(v2, v1);
  EXPECT_TRUE(s.erase("A"));
  const auto v3 = s.put("A", vec({3}));
  EXPECT_GT(v3, v2);
  const auto got = s.get_versioned<Array<double>>("A");
  EXPECT_EQ(got.version, v3);
  EXPECT_EQ((*got.value)[0], 3.0);
  EXPECT_EQ(s.stats().replacements, 1u);
}

TEST(Store, ReplacedValueStaysAliveForItsHolder) {
  Store s;
  s.put("A", vec({1, 2}));
  auto held = s.get<Array<double>>("A");
  s.put("A", vec({7}));
  s.erase("A");
  EXPECT_EQ(held->size(), 2u);
  EXPECT_EQ((*held)[1], 2.0);
}

TEST(Store, MissingKeyNamesTheKeyAndSimilarKeys) {
  Store s;
  s.put("mesh/bracket", vec({1}));
  s.put("mesh/square", vec({1}));
  try {
    s.get<Array<double>>("mesh/braket");
    FAIL() << "expected KeyError";
  } catch (const fem::KeyError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'mesh/braket'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("mesh/bracket"), std::string::npos) << msg;
    EXPECT_EQ(e.key(), "mesh/braket");
    ASSERT_FALSE(e.nearest().empty());
    EXPECT_EQ(e.nearest().front(), "mesh/bracket");
  }
  EXPECT_EQ(s.find<Array<double>>("nothing"), nullptr);
  EXPECT_THROW(s.version("nothing"), fem::KeyError);
  EXPECT_FALSE(s.erase("nothing"));
}

TEST(Store, WrongTypeNamesBothTypes) {
  Store s;
  s.put("A", vec({1}));
  try {
    s.get<Array<int>>("A");
    FAIL() << "expected TypeError";
  } catch (const fem::TypeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("fem::Array<f64>"), std::string::npos) << msg;
    EXPECT_NE(msg.find("fem::Array<i32>"), std::string::npos) << msg;
    EXPECT_EQ(e.expected(), "fem::Array<i32>");
    EXPECT_EQ(e.actual(), "fem::Array<f64>");
  }
  EXPECT_THROW(s.find<Blob>("A"), fem::TypeError);
}

TEST(Store, MalformedKeysAreRejectedAndChangeNothing) {
  Store s;
  s.put("ok", vec({1}));
  const auto before = s.stats();
  for (std::string bad : {std::string(), std::string(" A"), std::string("A B"), std::string("A\n"),
                          std::string("tab\there"), std::string(600, 'x'), std::string("caf\xc3\xa9")}) {
    EXPECT_THROW(s.put(bad, vec({1})), fem::InvalidKey) << bad;
    EXPECT_THROW(s.get<Array<double>>(bad), fem::InvalidKey) << bad;
    EXPECT_THROW(s.erase(bad), fem::InvalidKey) << bad;
  }
  try {
    s.put("a b", vec({1}));
  } catch (const fem::InvalidKey& e) {
    EXPECT_NE(std::string(e.what()).find("position 1"), std::string::npos) << e.what();
  }
  const auto after = s.stats();
  EXPECT_EQ(after.entries, before.entries);
  EXPECT_EQ(after.bytes, before.bytes);
  EXPECT_EQ(after.puts, before.puts);
  ASSERT_EQ(s.list().size(), 1u);
  EXPECT_EQ(s.version("ok"), s.list()[0].version);
}

TEST(Store, NullValueIsRejected) {
  Store s;
  EXPECT_THROW(s.put("A", std::shared_ptr<const Array<double>>()), fem::InvalidArgument);
  EXPECT_FALSE(s.contains("A"));
}

TEST(Store, ListAndStatsAccountEntriesAndBytes) {
  Store s;
  s.put("b", Blob{100});
  s.put("a", Blob{50});
  s.put("a/x", Blob{7}, fem::PutOptions().cache());
  const auto all = s.list();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].key, "a");
  EXPECT_EQ(all[1].key, "a/x");
  EXPECT_EQ(all[2].key, "b");
  EXPECT_EQ(all[0].bytes, 50u);
  EXPECT_EQ(s.list("a").size(), 2u);
  const auto st = s.stats();
  EXPECT_EQ(st.entries, 3u);
  EXPECT_EQ(st.bytes, 157u);
  EXPECT_EQ(st.evictable_entries, 1u);
  EXPECT_EQ(st.evictable_bytes, 7u);
  s.get<Blob>("a");
  s.get<Blob>("a");
  EXPECT_EQ(s.info("a").hits, 2u);
  EXPECT_EQ(s.stats().hits, 2u);
  EXPECT_THROW(s.get<Blob>("c"), fem::KeyError);
  EXPECT_EQ(s.stats().misses, 1u);
  s.erase("b");
  EXPECT_EQ(s.stats().bytes, 57u);
  EXPECT_EQ(s.stats().erases, 1u);
}

TEST(Store, ExplicitByteCountOverridesTheValuesOwn) {
  Store s;
  s.put("a", Blob{10}, fem::PutOptions().byte_count(4096));
  EXPECT_EQ(s.info("a").bytes, 4096u);
}

TEST(Store, DeviceResidentEntriesAreFlaggedAndCounted) {
  Store s;
  s.put("gpu/table", DeviceBlob{});
  s.put("host", Blob{10});
  EXPECT_EQ(s.info("gpu/table").residency, fem::Residency::device);
  EXPECT_EQ(s.info("host").residency, fem::Residency::host);
  EXPECT_EQ(s.stats().device_bytes, 1000u);
  EXPECT_EQ(s.stats().bytes, 1010u);
}

TEST(Eviction, LeastRecentlyUsedCacheEntriesGoFirst) {
  Store s(1000);
  s.put("a", Blob{400}, fem::PutOptions().cache());
  s.put("b", Blob{400}, fem::PutOptions().cache());
  s.get<Blob>("a");  // b is now the least recently used
  s.put("c", Blob{400}, fem::PutOptions().cache());
  EXPECT_TRUE(s.contains("a"));
  EXPECT_FALSE(s.contains("b"));
  EXPECT_TRUE(s.contains("c"));
  EXPECT_EQ(s.stats().evictions, 1u);
  EXPECT_LE(s.stats().bytes, 1000u);
}

TEST(Eviction, UserEntriesAreNeverEvicted) {
  Store s(1000);
  s.put("cache", Blob{300}, fem::PutOptions().cache());
  s.put("mesh", Blob{5000});
  EXPECT_TRUE(s.contains("mesh"));
  EXPECT_FALSE(s.contains("cache"));
  s.put("user2", Blob{5000});
  EXPECT_TRUE(s.contains("mesh"));
  EXPECT_TRUE(s.contains("user2"));
  EXPECT_EQ(s.stats().evictions, 1u);
}

TEST(Eviction, HeldValueSurvivesEviction) {
  Store s(1000);
  s.put("a", Blob{600, 42}, fem::PutOptions().cache());
  auto held = s.get<Blob>("a");
  s.put("b", Blob{600}, fem::PutOptions().cache());
  EXPECT_FALSE(s.contains("a"));
  EXPECT_EQ(held->stamp, 42);
}

TEST(Eviction, NewEntryIsKeptEvenAboveBudgetAndLoweringTheBudgetEvicts) {
  Store s(100);
  s.put("big", Blob{500}, fem::PutOptions().cache());
  EXPECT_TRUE(s.contains("big"));  // the entry just published is never the victim
  s.put("small", Blob{10}, fem::PutOptions().cache());
  EXPECT_FALSE(s.contains("big"));
  EXPECT_TRUE(s.contains("small"));
  s.set_byte_budget(5);
  EXPECT_FALSE(s.contains("small"));
  EXPECT_EQ(s.stats().bytes, 0u);
}

TEST(Eviction, EvictingAnInputDropsWhatWasDerivedFromIt) {
  Store s(1000);
  s.put("p", Blob{500}, fem::PutOptions().cache());
  const auto vp = s.version("p");
  s.get_or_compute<Blob>("p#f", {{"p", vp}}, [] { return Blob{100}; });
  s.get<Blob>("p#f");  // p#f more recent than p, but goes with p
  s.put("q", Blob{600}, fem::PutOptions().cache());
  EXPECT_FALSE(s.contains("p"));
  EXPECT_FALSE(s.contains("p#f"));
}

TEST(Eviction, DerivedEntriesThatAreNotEvictableStayUntilTheirInputChanges) {
  // What fem::dist needs for values whose release is collective (a distributed factorization).
  Store s(1000);
  const auto v = s.put("A", Blob{100});
  s.get_or_compute<Blob>(
      "A#factor", {{"A", v}}, [] { return Blob{800}; }, /*evictable=*/false);
  s.put("cache", Blob{600}, fem::PutOptions().cache());
  s.set_byte_budget(1);
  EXPECT_TRUE(s.contains("A#factor"));
  EXPECT_FALSE(s.contains("cache"));
  EXPECT_FALSE(s.info("A#factor").evictable);
  s.put("A", Blob{100});  // a new version drops it as usual
  EXPECT_FALSE(s.contains("A#factor"));
}

TEST(Derived, HoldsSaysWhetherGetOrComputeWouldHit) {
  Store s;
  const auto v = s.put("A", Blob{10});
  EXPECT_FALSE(s.holds("A#f", {{"A", v}}));
  s.get_or_compute<Blob>("A#f", {{"A", v}}, [] { return Blob{10}; });
  const auto before = s.stats();
  EXPECT_TRUE(s.holds("A#f", {{"A", v}}));
  EXPECT_FALSE(s.holds("A#f", {{"A", v + 1}}));
  EXPECT_FALSE(s.holds("A#f", {}));
  EXPECT_EQ(s.stats().hits, before.hits);  // a query, not a read
  EXPECT_EQ(s.stats().misses, before.misses);
}

TEST(Derived, ComputedOnceThenHit) {
  Store s;
  const auto v = s.put("mesh", Blob{10, 1});
  int computes = 0;
  auto make = [&] {
    ++computes;
    return Blob{5, s.get<Blob>("mesh")->stamp * 10};
  };
  auto p1 = s.get_or_compute<Blob>("mesh#pattern", {{"mesh", v}}, make);
  auto p2 = s.get_or_compute<Blob>("mesh#pattern", {{"mesh", v}}, make);
  EXPECT_EQ(computes, 1);
  EXPECT_EQ(p1.get(), p2.get());
  EXPECT_EQ(p2->stamp, 10);
  EXPECT_TRUE(s.info("mesh#pattern").evictable);
  EXPECT_EQ(s.info("mesh#pattern").inputs, (std::vector<fem::Input>{{"mesh", v}}));
  EXPECT_EQ(s.stats().computes, 1u);
}

TEST(Derived, NewInputVersionRecomputesAndNeverReturnsStale) {
  Store s;
  auto v = s.put("mesh", Blob{10, 1});
  auto make = [&] { return Blob{5, s.get<Blob>("mesh")->stamp * 10}; };
  EXPECT_EQ(s.get_or_compute<Blob>("mesh#pattern", {{"mesh", v}}, make)->stamp, 10);
  v = s.put("mesh", Blob{10, 2});
  // Replacing the input dropped the derived entry at once.
  EXPECT_FALSE(s.contains("mesh#pattern"));
  EXPECT_EQ(s.stats().invalidations, 1u);
  EXPECT_EQ(s.get_or_compute<Blob>("mesh#pattern", {{"mesh", v}}, make)->stamp, 20);
  EXPECT_EQ(s.stats().computes, 2u);
}

TEST(Derived, ChainsAreInvalidatedTransitively) {
  Store s;
  auto vm = s.put("mesh", Blob{1});
  s.get_or_compute<Blob>("mesh#pattern", {{"mesh", vm}}, [] { return Blob{1}; });
  const auto vp = s.version("mesh#pattern");
  s.get_or_compute<Blob>("mesh#pattern#symbolic", {{"mesh#pattern", vp}}, [] { return Blob{1}; });
  EXPECT_EQ(s.stats().entries, 3u);
  s.erase("mesh");
  EXPECT_EQ(s.stats().entries, 0u);
  EXPECT_EQ(s.stats().invalidations, 2u);
}

TEST(Derived, InputReplacedDuringComputeIsNotPublished) {
  Store s;
  const auto v = s.put("A", Blob{1, 1});
  auto value = s.get_or_compute<Blob>("A#factor", {{"A", v}}, [&] {
    s.put("A", Blob{1, 2});  // another writer replaces the input meanwhile
    return Blob{1, 100};
  });
  EXPECT_EQ(value->stamp, 100);          // the caller gets what it asked for
  EXPECT_FALSE(s.contains("A#factor"));  // but the store never holds a stale derivation
}

TEST(Derived, PutWithStaleInputIsRefusedAndChangesNothing) {
  Store s;
  const auto v = s.put("A", Blob{1});
  s.put("A", Blob{2});
  EXPECT_THROW(s.put("A#f", Blob{1}, fem::PutOptions().derived_from({{"A", v}})), fem::InvalidArgument);
  EXPECT_THROW(s.put("A#f", Blob{1}, fem::PutOptions().derived_from({{"missing", 1}})), fem::KeyError);
  EXPECT_THROW(s.put("A#f", Blob{1}, fem::PutOptions().derived_from({{"A#f", 1}})), fem::InvalidArgument);
  EXPECT_FALSE(s.contains("A#f"));
  EXPECT_EQ(s.stats().entries, 1u);
}

TEST(Derived, FailedComputeLeavesTheStoreAsItWas) {
  Store s;
  const auto v = s.put("A", Blob{1});
  EXPECT_THROW(s.get_or_compute<Blob>("A#f", {{"A", v}}, []() -> Blob { throw std::runtime_error("boom"); }),
               std::runtime_error);
  EXPECT_FALSE(s.contains("A#f"));
  EXPECT_EQ(s.stats().entries, 1u);
  // And nothing is left in flight: the next call computes normally.
  EXPECT_EQ(s.get_or_compute<Blob>("A#f", {{"A", v}}, [] { return Blob{1, 5}; })->stamp, 5);
}

TEST(Derived, WrongTypeOnCachedKeyIsAnError) {
  Store s;
  s.put("A", vec({1}));
  EXPECT_THROW(s.get_or_compute<Blob>("A", {}, [] { return Blob{}; }), fem::TypeError);
  EXPECT_EQ(s.type_of("A"), "fem::Array<f64>");
}

TEST(Derived, ConcurrentRequestsShareOneComputation) {
  Store s;
  const auto v = s.put("A", Blob{1});
  std::atomic<int> computes{0};
  std::vector<std::thread> threads;
  std::vector<std::shared_ptr<const Blob>> got(8);
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      got[t] = s.get_or_compute<Blob>("A#factor", {{"A", v}}, [&] {
        ++computes;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        return Blob{1, 7};
      });
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(computes.load(), 1);
  for (const auto& g : got) EXPECT_EQ(g.get(), got[0].get());
}

// What a failed operation must leave untouched: every entry's key, version and inputs.
std::vector<std::pair<std::string, fem::Version>> snapshot(const Store& s) {
  std::vector<std::pair<std::string, fem::Version>> out;
  for (const auto& e : s.list()) {
    out.emplace_back(e.key, e.version);
    for (const auto& in : e.inputs) out.emplace_back(e.key + "<-" + in.key, in.version);
  }
  return out;
}

// The keys of a CycleError, and its message naming them as "'a' -> 'b' -> 'a'".
void expect_cycle(const fem::CycleError& e, const std::vector<std::string>& keys) {
  EXPECT_EQ(e.cycle(), keys);
  std::string chain;
  for (const auto& k : keys) chain += (chain.empty() ? "'" : " -> '") + k + "'";
  EXPECT_NE(std::string(e.what()).find(chain), std::string::npos) << e.what();
}

// A computation that asks for its own key used to wait forever on its own in-flight future. It
// is a CycleError naming the cycle; nothing is left in flight or stored, and the next call
// computes normally.
TEST(Cycles, ComputeAskingForItsOwnKeyIsAnError) {
  Store s;
  s.put("x", Blob{1, 1});
  const auto before = snapshot(s);
  int computes = 0;
  try {
    s.get_or_compute<Blob>("a", {}, [&] {
      ++computes;
      return s.get_or_compute<Blob>("a", {}, [] { return Blob{1, 2}; });
    });
    ADD_FAILURE() << "no CycleError";
  } catch (const fem::CycleError& e) {
    expect_cycle(e, {"a", "a"});
  }
  EXPECT_EQ(computes, 1);
  EXPECT_EQ(snapshot(s), before);
  EXPECT_EQ(s.get_or_compute<Blob>("a", {}, [] { return Blob{1, 3}; })->stamp, 3);
  EXPECT_TRUE(s.contains("a"));
}

// The same through a chain: a's computation asks for b, b's for c, c's for a. Every computation
// of the chain fails with the same error; none is left in flight or stored.
TEST(Cycles, ComputeCycleThroughAChainIsAnError) {
  Store s;
  const auto vx = s.put("x", Blob{1, 1});
  const auto before = snapshot(s);
  std::function<std::shared_ptr<const Blob>(const std::string&)> ask = [&](const std::string& key) {
    const std::string next = key == "a" ? "b" : key == "b" ? "c" : "a";
    return s.get_or_compute<Blob>(key, {{"x", vx}}, [&] { return Blob{1, ask(next)->stamp}; });
  };
  try {
    ask("a");
    ADD_FAILURE() << "no CycleError";
  } catch (const fem::CycleError& e) {
    expect_cycle(e, {"a", "b", "c", "a"});
    EXPECT_NE(std::string(e.what()).find("'a'"), std::string::npos);
  }
  EXPECT_EQ(snapshot(s), before);
  // Entered from b, the cycle starts at b.
  try {
    ask("b");
    ADD_FAILURE() << "no CycleError";
  } catch (const fem::CycleError& e) {
    expect_cycle(e, {"b", "c", "a", "b"});
  }
  // Nothing in flight: each key computes normally now.
  for (const char* k : {"a", "b", "c"})
    EXPECT_EQ(s.get_or_compute<Blob>(k, {{"x", vx}}, [] { return Blob{1, 9}; })->stamp, 9) << k;
  EXPECT_EQ(s.list().size(), 4u);
}

// The same key in another store is no cycle.
TEST(Cycles, SameKeyInAnotherStoreIsNoCycle) {
  Store s, t;
  auto v = s.get_or_compute<Blob>("a", {}, [&] {
    return Blob{1, t.get_or_compute<Blob>("a", {}, [] { return Blob{1, 4}; })->stamp};
  });
  EXPECT_EQ(v->stamp, 4);
}

// Another thread asking for a key that this thread is computing is no cycle: it waits for the
// computation and gets its value, also when it asks from inside a computation of its own.
TEST(Cycles, WaitingForAnotherThreadsComputationIsNoCycle) {
  Store s;
  std::atomic<bool> started{false}, waiting{false};
  std::atomic<int> computes{0};
  auto slow = [&] {
    ++computes;
    started = true;
    while (!waiting) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the other thread is now waiting
    return Blob{1, 11};
  };
  std::shared_ptr<const Blob> first, second;
  std::thread owner([&] { first = s.get_or_compute<Blob>("a", {}, slow); });
  while (!started) std::this_thread::yield();
  std::thread other([&] {
    second = s.get_or_compute<Blob>("b", {}, [&] {
      waiting = true;
      return Blob{1, s.get_or_compute<Blob>("a", {}, slow)->stamp + 1};
    });
  });
  owner.join();
  other.join();
  EXPECT_EQ(computes.load(), 1);
  EXPECT_EQ(first->stamp, 11);
  EXPECT_EQ(second->stamp, 12);
}

// Publishing an entry with an input that is derived from it would make the dependency graph
// cyclic (and the put used to drop that input at once, leaving an entry derived from nothing).
// A CycleError naming the cycle; the store is unchanged. Direct and transitive, by put and by
// get_or_compute.
TEST(Cycles, PublishingWithAnInputDerivedFromTheKeyIsAnError) {
  Store s;
  const auto va = s.put("a", Blob{1, 1});
  const auto vb = s.put("b", Blob{1, 2}, fem::PutOptions().derived_from({{"a", va}}));
  const auto vc = s.put("c", Blob{1, 3}, fem::PutOptions().derived_from({{"b", vb}}));
  s.put("u", Blob{1, 4});
  const auto before = snapshot(s);
  const auto stats = s.stats();
  try {
    s.put("a", Blob{1, 5}, fem::PutOptions().derived_from({{"b", vb}}));
    ADD_FAILURE() << "no CycleError";
  } catch (const fem::CycleError& e) {
    expect_cycle(e, {"a", "b", "a"});
  }
  try {
    s.put("a", Blob{1, 5}, fem::PutOptions().derived_from({{"u", s.version("u")}, {"c", vc}}));
    ADD_FAILURE() << "no CycleError";
  } catch (const fem::CycleError& e) {
    expect_cycle(e, {"a", "c", "b", "a"});
  }
  try {
    s.put("b", Blob{1, 5}, fem::PutOptions().derived_from({{"c", vc}}));
    ADD_FAILURE() << "no CycleError";
  } catch (const fem::CycleError& e) {
    expect_cycle(e, {"b", "c", "b"});
  }
  bool computed = false;
  try {
    s.get_or_compute<Blob>("a", {{"c", vc}}, [&] {
      computed = true;
      return Blob{1, 6};
    });
    ADD_FAILURE() << "no CycleError";
  } catch (const fem::CycleError& e) {
    expect_cycle(e, {"a", "c", "b", "a"});
  }
  EXPECT_FALSE(computed);
  EXPECT_EQ(snapshot(s), before);
  EXPECT_EQ(s.stats().puts, stats.puts);
  EXPECT_EQ(s.stats().invalidations, stats.invalidations);
  // Not cycles: an unrelated input, and a new entry derived from the chain's end.
  s.put("a", Blob{1, 7}, fem::PutOptions().derived_from({{"u", s.version("u")}}));
  EXPECT_FALSE(s.contains("b"));  // the new a dropped what was derived from the old one
  const auto va2 = s.version("a");
  const auto vb2 = s.put("b", Blob{1, 8}, fem::PutOptions().derived_from({{"a", va2}}));
  EXPECT_EQ(s.get_or_compute<Blob>("d", {{"b", vb2}}, [] { return Blob{1, 9}; })->stamp, 9);
}

TEST(Counters, NamedCountersAccumulateAndReset) {
  Store s;
  s.count("solve.factorizations");
  s.count("solve.factorizations", 2);
  EXPECT_EQ(s.counter("solve.factorizations"), 3);
  EXPECT_EQ(s.counter("never"), 0);
  EXPECT_EQ(s.counters().size(), 1u);
  s.reset_stats();
  EXPECT_EQ(s.counter("solve.factorizations"), 0);
}

// The process-wide store is the one the C ABI (what ctypes, Python and plug-ins use) reads and
// writes: an entry put from C++ is found through C and the other way round, and fem_clear
// empties the store C++ sees.
TEST(GlobalStore, IsTheStoreOfTheCApi) {
  fem::store().put("global/cpp", fem::Array<double>(std::vector<double>{1.0, 2.0}));
  int32_t present = 0;
  ASSERT_EQ(fem_contains("global/cpp", &present), FEM_OK);
  EXPECT_EQ(present, 1);
  const double values[] = {3.0};
  const int64_t shape[] = {1};
  ASSERT_EQ(fem_put_f64("global/c", values, 1, shape, nullptr), FEM_OK);
  EXPECT_EQ(fem::store().get<fem::Array<double>>("global/c")->vector(), std::vector<double>{3.0});
  fem::store().count("global.counter");
  ASSERT_EQ(fem_clear(), FEM_OK);
  EXPECT_FALSE(fem::store().contains("global/cpp"));
  EXPECT_FALSE(fem::store().contains("global/c"));
  EXPECT_EQ(fem::store().counter("global.counter"), 0);
}

}  // namespace
