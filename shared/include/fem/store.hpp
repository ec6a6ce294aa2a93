// The process-wide store through which kernel libraries share meshes, patterns, matrices and
// factorizations by name. Defined once, in libfem_shared; every kernel links it, so two kernel
// libraries (even dlopen'ed with RTLD_LOCAL) see the same entries.
//
// Every entry holds an immutable value (shared_ptr<const T>), a stable type tag, a version that
// changes on every replace, its size in bytes, and whether it is a cache entry that may be
// evicted. Derived entries record the versions of their inputs; a derived entry whose input
// changed is never returned (see get_or_compute).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "fem/error.hpp"
#include "fem/type_name.hpp"

namespace fem {

/// Version of a stored value. Drawn from one store-wide counter, so a key's versions only grow,
/// and a version is never reused, even after an erase and a new put of the same key.
using Version = std::uint64_t;

/// An input of a derived entry: the key and the version the entry was computed from.
struct Input {
  std::string key;
  Version version = 0;
  friend bool operator==(const Input&, const Input&) = default;
};

/// A value together with the version it was read at, read atomically.
template <class T>
struct Versioned {
  std::shared_ptr<const T> value;
  Version version = 0;
};

/// How a value is published.
struct PutOptions {
  /// Cache entries (patterns, factorizations) may be evicted under the byte budget; user data
  /// (meshes, matrices) never is.
  bool evictable = false;
  /// Bytes the value holds; by default bytes_of(value).
  std::optional<std::size_t> bytes;
  /// Where they live; by default residency_of(value).
  std::optional<Residency> residency;
  /// Inputs this entry was derived from. When one of them is replaced, erased or evicted, this
  /// entry is dropped with it.
  std::vector<Input> inputs;

  PutOptions& cache(bool evictable_entry = true) {
    evictable = evictable_entry;
    return *this;
  }
  PutOptions& byte_count(std::size_t b) {
    bytes = b;
    return *this;
  }
  PutOptions& derived_from(std::vector<Input> in) {
    inputs = std::move(in);
    return *this;
  }
};

/// One row of Store::list().
struct EntryInfo {
  std::string key;
  std::string type;
  Version version = 0;
  std::size_t bytes = 0;
  bool evictable = false;
  std::vector<Input> inputs;
  std::uint64_t hits = 0;
  Residency residency = Residency::host;
};

/// Store-wide counters; `entries` and `bytes` are current, the rest count since reset_stats().
struct StoreStats {
  std::size_t entries = 0;
  std::size_t bytes = 0;
  std::size_t evictable_entries = 0;
  std::size_t evictable_bytes = 0;
  std::size_t device_bytes = 0;  ///< bytes of entries that live on a device
  std::size_t byte_budget = 0;
  std::uint64_t hits = 0;           ///< a get or get_or_compute found its entry
  std::uint64_t misses = 0;         ///< a get found nothing, or get_or_compute had to compute
  std::uint64_t puts = 0;           ///< values published (new keys and replacements)
  std::uint64_t replacements = 0;   ///< puts that replaced an existing key
  std::uint64_t erases = 0;         ///< entries removed by erase()
  std::uint64_t evictions = 0;      ///< cache entries removed to respect the byte budget
  std::uint64_t invalidations = 0;  ///< derived entries dropped because an input changed
  std::uint64_t computes = 0;       ///< values computed by get_or_compute
};

class Store {
 public:
  static constexpr std::size_t unlimited = static_cast<std::size_t>(-1);

  /// A store with a byte budget for its evictable entries (user entries count towards the
  /// total but are never evicted).
  explicit Store(std::size_t byte_budget = unlimited);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // --- typed access ----------------------------------------------------------------------

  /// Publish `value` under `key`, replacing any previous value (whose holders keep it alive).
  /// Returns the new version.
  template <Storable T>
  Version put(std::string_view key, std::shared_ptr<const T> value, PutOptions options = {}) {
    FEM_EXPECTS(value != nullptr, "store key '{}': cannot put a null value", key);
    if (!options.bytes) options.bytes = bytes_of(*value);
    if (!options.residency) options.residency = residency_of(*value);
    return put_erased(key, std::static_pointer_cast<const void>(std::move(value)), type_name<T>::value,
                      std::move(options));
  }

  /// Publish a value by moving it into a new immutable object.
  template <Storable T>
  Version put(std::string_view key, T value, PutOptions options = {}) {
    return put<T>(key, std::make_shared<const T>(std::move(value)), std::move(options));
  }

  /// The value under `key`. Throws KeyError (naming the nearest keys) or TypeError.
  template <Storable T>
  std::shared_ptr<const T> get(std::string_view key) const {
    return get_versioned<T>(key).value;
  }

  /// The value and its version, read together.
  template <Storable T>
  Versioned<T> get_versioned(std::string_view key) const {
    auto [value, version] = get_erased(key, type_name<T>::value, /*required=*/true);
    return {std::static_pointer_cast<const T>(std::move(value)), version};
  }

  /// Like get, but nullptr when the key is absent (still TypeError on the wrong type).
  template <Storable T>
  std::shared_ptr<const T> find(std::string_view key) const {
    return std::static_pointer_cast<const T>(get_erased(key, type_name<T>::value, /*required=*/false).first);
  }

  /// The cached value derived from `inputs` under `key`, or, when it is absent or was derived
  /// from other input versions, `compute()`'s result, published as an evictable entry.
  ///
  /// `compute` returns shared_ptr<const T> (or T). It runs without any store lock held, so it
  /// may use the store. Concurrent callers asking for the same key and inputs wait for one
  /// computation instead of repeating it. When an input was replaced while computing, the
  /// result is returned to the caller but not published: a stale entry is never stored.
  /// Derived entries are caches, evictable unless `evictable` is false: a value whose release
  /// must happen on every process together (a distributed factorization, fem::dist) is kept out
  /// of the per-process LRU eviction; it still goes when an input changes or on erase().
  template <Storable T, class Compute>
  std::shared_ptr<const T> get_or_compute(std::string_view key, std::vector<Input> inputs, Compute&& compute,
                                          bool evictable = true) {
    auto value =
        get_or_compute_erased(key, type_name<T>::value, std::move(inputs), evictable, [&]() -> Computed {
          std::shared_ptr<const T> v;
          if constexpr (std::is_convertible_v<decltype(compute()), std::shared_ptr<const T>>)
            v = compute();
          else
            v = std::make_shared<const T>(compute());
          FEM_EXPECTS(v != nullptr, "store key '{}': compute returned null", key);
          return {std::static_pointer_cast<const void>(v), bytes_of(*v), residency_of(*v)};
        });
    return std::static_pointer_cast<const T>(std::move(value));
  }

  // --- untyped queries -------------------------------------------------------------------

  bool contains(std::string_view key) const;
  /// Whether `key` holds an entry derived from exactly `inputs` (get_or_compute would return it
  /// without computing). Counts no hit or miss.
  bool holds(std::string_view key, const std::vector<Input>& inputs) const;
  /// Current version of `key`; KeyError when absent.
  Version version(std::string_view key) const;
  /// Type tag of `key`; KeyError when absent.
  std::string type_of(std::string_view key) const;
  /// Everything known about `key` but its value; KeyError when absent.
  EntryInfo info(std::string_view key) const;
  /// Remove `key` (and the entries derived from it). Returns false when it was absent.
  bool erase(std::string_view key);
  /// Remove every entry. Counters are kept.
  void clear();

  /// All entries, sorted by key; with a prefix, only the keys that start with it.
  std::vector<EntryInfo> list(std::string_view prefix = {}) const;
  StoreStats stats() const;
  /// Zero the hit/miss/put/... counters and the named counters.
  void reset_stats();

  /// Budget for the whole store in bytes; evictable entries go, least recently used first,
  /// while the total exceeds it. The entry just published is never the one evicted.
  void set_byte_budget(std::size_t bytes);
  std::size_t byte_budget() const;

  // --- named counters shared by the kernels (e.g. "assembly.pattern_builds") -------------

  void count(std::string_view name, std::int64_t delta = 1);
  std::int64_t counter(std::string_view name) const;
  std::map<std::string, std::int64_t> counters() const;

  /// The last-holder rule of the kernels that refill a value in place (a refactorization into
  /// the same memory, a PETSc matrix refilled): `held`, a value the caller got from a store, as
  /// a mutable object when the caller holds its last reference (every store dropped it: a new
  /// version replaced it, or it was erased or evicted, and nobody else kept it), so that nobody
  /// can see it change; nullptr otherwise. `held` is released either way. Only for values the
  /// reclaiming kernel made itself (non-const, then published as const: the cast back is sound).
  template <class T>
  static std::shared_ptr<T> reclaim(std::shared_ptr<const T>&& held) {
    std::shared_ptr<const T> last = std::move(held);
    if (!last || last.use_count() != 1) return nullptr;
    // The other holders' last uses happen before their releases; order them before ours.
    std::atomic_thread_fence(std::memory_order_acquire);
    return std::const_pointer_cast<T>(std::move(last));
  }

  /// Throws InvalidKey unless `key` is 1..512 printable ASCII characters without spaces.

  static void validate_key(std::string_view key);

 private:
  struct Computed {
    std::shared_ptr<const void> value;
    std::size_t bytes = 0;
    Residency residency = Residency::host;
  };
  struct Impl;

  Version put_erased(std::string_view key, std::shared_ptr<const void> value, std::string_view type,
                     PutOptions options);
  std::pair<std::shared_ptr<const void>, Version> get_erased(std::string_view key, std::string_view type,
                                                             bool required) const;
  std::shared_ptr<const void> get_or_compute_erased(std::string_view key, std::string_view type,
                                                    std::vector<Input> inputs, bool evictable,
                                                    const std::function<Computed()>& compute);

  std::unique_ptr<Impl> impl_;
};

/// The process-wide store, defined in libfem_shared only.
Store& store();

}  // namespace fem
