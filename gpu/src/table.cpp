// The table handle (table.hpp): run-time key and value types mapped onto the four HashTable
// instantiations, the caller's arrays converted at the boundary.
#include "fem/gpu/table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <initializer_list>
#include <numeric>
#include <variant>
#include <vector>

#include "fem/error.hpp"
#include "fem/gpu/detail/table_ops.hpp"
#include "fem/gpu/hash_table.hpp"

namespace fem::gpu {

struct Table::Impl {
  std::variant<HashTable64x32, HashTable64x64, HashTable128x32, HashTable128x64> table;
};

namespace {

template <class T>
T load(const void* p, std::size_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(p) + i * sizeof(T), sizeof(T));
  return v;
}
template <class T>
void store(void* p, std::size_t i, T v) {
  std::memcpy(static_cast<char*>(p) + i * sizeof(T), &v, sizeof(T));
}

// The error for a reserved key: the key -1, or a pair's high half of -1 or -2.
template <class K>
[[noreturn]] void reserved_key(std::size_t i, const K& k) {
  if constexpr (std::is_same_v<K, Key128>)
    throw InvalidArgument(fmt::format(
        "hash table: key {} has the high half {}, which is reserved (-1 and -2 mark empty and claimed slots)",
        i, static_cast<std::int64_t>(k.hi)));
  else
    throw InvalidArgument(fmt::format("hash table: key {} is the reserved key -1", i));
}

// The caller's host keys as the table's, refused (naming the first) where reserved. int64 keys
// and pairs have the table's own representation and are used in place (a scan, no copy); int32
// keys are sign-extended into `copy`.
template <class K>
std::span<const K> keys_view(Table::Key type, const void* keys, std::size_t n, std::vector<K>& copy) {
  if constexpr (std::is_same_v<K, Key128>) {
    const auto* k = static_cast<const Key128*>(keys);
    for (std::size_t i = 0; i < n; ++i)
      if (!detail::KeyTraits<Key128>::valid(k[i])) reserved_key(i, k[i]);
    return {k, n};
  } else {
    if (type == Table::Key::i64) {
      const auto* k = static_cast<const std::uint64_t*>(keys);
      for (std::size_t i = 0; i < n; ++i)
        if (k[i] == ~std::uint64_t{0}) reserved_key(i, k[i]);
      return {k, n};
    }
    copy.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      const std::int32_t k = load<std::int32_t>(keys, i);
      if (k == -1) reserved_key(i, k);
      copy[i] = static_cast<std::uint64_t>(static_cast<std::int64_t>(k));
    }
    return copy;
  }
}

// The same for keys in the table's executor memory: checked there (one pass on the device),
// int32 keys widened there into `copy`.
template <class T>
const typename T::key_type* resident_keys(const T& t, Table::Key type, const void* keys, std::size_t n,
                                          DeviceBuffer<typename T::key_type>& copy) {
  using K = typename T::key_type;
  const K* k = static_cast<const K*>(keys);
  if constexpr (std::is_same_v<K, std::uint64_t>) {
    if (type == Table::Key::i32) {
      copy = DeviceBuffer<K>(t.executor(), n);
      t.widen_keys_resident(static_cast<const std::int32_t*>(keys), n, copy.data());
      k = copy.data();
    }
  }
  const std::size_t i = t.first_invalid_resident(k, n);
  if (i < n) {
    K bad;
    t.executor().context().copy_to_host(&bad, k + i, sizeof(K));
    t.executor().context().synchronize();
    reserved_key(i, bad);
  }
  return k;
}

// Whether the arrays of one call are in the table's executor memory (taken in place) or on the
// host (copied over); one call's arrays are all in one place. A host table's are the host's.
bool in_executor_memory(const Executor& exec, const char* op,
                        std::initializer_list<std::pair<const void*, const char*>> arrays) {
  if (!exec.separate_memory()) return false;
  const std::pair<const void*, const char*>* first = nullptr;
  bool resident = false;
  for (const auto& a : arrays) {
    if (!a.first) continue;
    const bool here = exec.context().holds(a.first);
    if (!first) {
      first = &a;
      resident = here;
    } else if (here != resident) {
      const auto where = [](bool d) { return d ? "in the device's memory" : "in host memory"; };
      throw InvalidArgument(
          fmt::format("hash table {}: {} are {} but {} {}; give one call's arrays in one place", op,
                      first->second, where(resident), a.second, where(here)));
    }
  }
  return resident;
}

// f(table, its keys, values as the table's value type) for one batch of host arrays: what every
// op shares.
template <class Tables, class F>
void with_keys(Tables& tables, Table::Key type, const void* keys, std::size_t n, F&& f) {
  std::visit(
      [&](auto& t) {
        using T = std::remove_reference_t<decltype(t)>;
        std::vector<typename T::key_type> copy;
        f(t, keys_view(type, keys, n, copy), static_cast<typename T::value_type*>(nullptr));
      },
      tables);
}

// The same for arrays in the table's executor memory: keys as a pointer there.
template <class Tables, class F>
void with_resident_keys(Tables& tables, Table::Key type, const void* keys, std::size_t n, F&& f) {
  std::visit(
      [&](auto& t) {
        using T = std::remove_reference_t<decltype(t)>;
        DeviceBuffer<typename T::key_type> copy;
        f(t, resident_keys(t, type, keys, n, copy), static_cast<typename T::value_type*>(nullptr));
      },
      tables);
}

template <class V>
void write_value(Table::Value type, void* values, std::size_t i, V v) {
  if (type == Table::Value::i32)
    store(values, i, static_cast<std::int32_t>(static_cast<std::uint32_t>(v)));
  else if (type == Table::Value::i64)
    store(values, i, static_cast<std::int64_t>(v));
  else
    store(values, i, std::bit_cast<double>(static_cast<std::uint64_t>(v)));
}

template <class K>
void write_key(Table::Key type, void* keys, std::size_t i, const K& k) {
  if constexpr (std::is_same_v<K, Key128>) {
    store(keys, 2 * i, k.lo);
    store(keys, 2 * i + 1, k.hi);
  } else if (type == Table::Key::i32) {
    store(keys, i, static_cast<std::int32_t>(static_cast<std::int64_t>(k)));
  } else {
    store(keys, i, static_cast<std::int64_t>(k));
  }
}

// The order export_entries promises: by the caller's key value (signed), pairs by high then low.
template <class K>
bool key_less(const K& a, const K& b) {
  if constexpr (std::is_same_v<K, Key128>)
    return static_cast<std::int64_t>(a.hi) < static_cast<std::int64_t>(b.hi) ||
           (a.hi == b.hi && static_cast<std::int64_t>(a.lo) < static_cast<std::int64_t>(b.lo));
  else
    return static_cast<std::int64_t>(a) < static_cast<std::int64_t>(b);
}

}  // namespace

std::string Table::name(Key k) {
  switch (k) {
    case Key::i32:
      return "int32";
    case Key::i64:
      return "int64";
    case Key::pair:
      return "int64 pair";
  }
  return fmt::format("key type {}", static_cast<int>(k));
}

std::string Table::name(Value v) {
  switch (v) {
    case Value::f64:
      return "float64";
    case Value::i32:
      return "int32";
    case Value::i64:
      return "int64";
  }
  return fmt::format("value type {}", static_cast<int>(v));
}

namespace {

using Variant = std::variant<HashTable64x32, HashTable64x64, HashTable128x32, HashTable128x64>;

Variant make_table(const Executor& exec, Table::Key key, Table::Value value, std::size_t expected_size,
                   double load_factor) {
  FEM_EXPECTS(key == Table::Key::i32 || key == Table::Key::i64 || key == Table::Key::pair,
              "hash table: key type {} is none of int32 (1), int64 (2), int64 pair (16)",
              static_cast<int>(key));
  FEM_EXPECTS(value == Table::Value::i32 || value == Table::Value::i64 || value == Table::Value::f64,
              "hash table: value type {} is none of float64 (0), int32 (1), int64 (2)",
              static_cast<int>(value));
  FEM_EXPECTS(load_factor >= 0.05 && load_factor <= 0.9, "hash table: load factor {} is outside 0.05 .. 0.9",
              load_factor);
  const bool wide = value != Table::Value::i32;
  auto make = [&]<class T>() -> Variant {
    typename T::Options o;
    o.max_load = load_factor;
    return Variant(std::in_place_type<T>, exec, expected_size, o);
  };
  if (key == Table::Key::pair)
    return wide ? make.template operator()<HashTable128x64>() : make.template operator()<HashTable128x32>();
  return wide ? make.template operator()<HashTable64x64>() : make.template operator()<HashTable64x32>();
}

}  // namespace

Table::Table(Executor exec, Key key, Value value, std::size_t expected_size, double load_factor)
    : key_(key),
      value_(value),
      impl_(std::make_unique<Impl>(Impl{make_table(exec, key, value, expected_size, load_factor)})) {}

Table::~Table() = default;

void Table::insert(const void* keys, const void* values, std::size_t n) const {
  FEM_EXPECTS(n == 0 || (keys && values), "hash table insert: null keys or values for {} entries", n);
  std::lock_guard lock(mutex_);
  if (in_executor_memory(executor(), "insert", {{keys, "keys"}, {values, "values"}})) {
    with_resident_keys(impl_->table, key_, keys, n, [&]<class V>(auto& t, const auto* k, V*) {
      t.insert_resident(k, static_cast<const V*>(values), n);
    });
    return;
  }
  with_keys(impl_->table, key_, keys, n, [&]<class V>(auto& t, auto k, V*) {
    t.insert(k, std::span<const V>(static_cast<const V*>(values), n));  // the same bits
  });
}

void Table::insert_unique(const void* keys, void* ids, std::uint8_t* is_new, std::size_t n) const {
  FEM_EXPECTS(value_ != Value::f64,
              "hash table insert_unique: ids are integers, the table's values are float64");
  FEM_EXPECTS(n == 0 || (keys && ids), "hash table insert_unique: null keys or ids for {} entries", n);
  std::lock_guard lock(mutex_);
  if (in_executor_memory(executor(), "insert_unique", {{keys, "keys"}, {ids, "ids"}, {is_new, "is_new"}})) {
    with_resident_keys(impl_->table, key_, keys, n, [&]<class V>(auto& t, const auto* k, V*) {
      t.insert_unique_resident(k, static_cast<V*>(ids), is_new, n);
      t.executor().context().synchronize();
    });
    return;
  }
  with_keys(impl_->table, key_, keys, n, [&]<class V>(auto& t, auto k, V*) {
    t.insert_unique(k, std::span<V>(static_cast<V*>(ids), n),
                    is_new ? std::span<std::uint8_t>(is_new, n) : std::span<std::uint8_t>());
  });
}

void Table::find(const void* keys, void* values, std::uint8_t* found, std::size_t n) const {
  FEM_EXPECTS(n == 0 || (keys && values), "hash table find: null keys or values for {} entries", n);
  std::lock_guard lock(mutex_);
  if (in_executor_memory(executor(), "find", {{keys, "keys"}, {values, "values"}, {found, "found"}})) {
    with_resident_keys(impl_->table, key_, keys, n, [&]<class V>(auto& t, const auto* k, V*) {
      t.find_resident(k, static_cast<V*>(values), found, n);
    });
    return;
  }
  with_keys(impl_->table, key_, keys, n, [&]<class V>(auto& t, auto k, V*) {
    t.find(k, std::span<V>(static_cast<V*>(values), n),
           found ? std::span<std::uint8_t>(found, n) : std::span<std::uint8_t>());
  });
}

std::size_t Table::size() const {
  std::lock_guard lock(mutex_);
  return std::visit([](auto& t) { return t.size(); }, impl_->table);
}

std::size_t Table::export_entries(void* keys, void* values, std::size_t capacity) const {
  std::lock_guard lock(mutex_);
  return std::visit(
      [&](auto& t) -> std::size_t {
        using T = std::remove_reference_t<decltype(t)>;
        std::vector<typename T::key_type> k;
        std::vector<typename T::value_type> v;
        t.export_entries(k, v);
        if (k.size() > capacity) return k.size();
        FEM_EXPECTS(k.empty() || (keys && values), "hash table export: null keys or values for {} entries",
                    k.size());
        // Sorted on the host (export is not a hot path), then copied over to device arrays.
        const bool resident =
            in_executor_memory(t.executor(), "export", {{keys, "keys"}, {values, "values"}});
        std::vector<unsigned char> key_bytes, value_bytes;
        void* key_out = keys;
        void* value_out = values;
        if (resident) {
          key_bytes.resize(k.size() * Table::key_bytes(key_));
          value_bytes.resize(k.size() * Table::value_bytes(value_));
          key_out = key_bytes.data();
          value_out = value_bytes.data();
        }
        std::vector<std::size_t> order(k.size());
        std::iota(order.begin(), order.end(), std::size_t{0});
        std::sort(order.begin(), order.end(),
                  [&](std::size_t a, std::size_t b) { return key_less(k[a], k[b]); });
        for (std::size_t i = 0; i < order.size(); ++i) {
          write_key(key_, key_out, i, k[order[i]]);
          write_value(value_, value_out, i, v[order[i]]);
        }
        if (resident && !k.empty()) {
          t.executor().context().copy_to_device(keys, key_bytes.data(), key_bytes.size());
          t.executor().context().copy_to_device(values, value_bytes.data(), value_bytes.size());
          t.executor().context().synchronize();
        }
        return k.size();
      },
      impl_->table);
}

std::size_t Table::capacity() const {
  std::lock_guard lock(mutex_);
  return std::visit([](auto& t) { return t.capacity(); }, impl_->table);
}

std::size_t Table::bytes() const {
  std::lock_guard lock(mutex_);
  return sizeof(*this) + std::visit([](auto& t) { return t.bytes(); }, impl_->table);
}

Residency Table::residency() const {
  return std::visit([](auto& t) { return t.residency(); }, impl_->table);
}

const Executor& Table::executor() const noexcept {
  return std::visit([](auto& t) -> const Executor& { return t.executor(); }, impl_->table);
}

}  // namespace fem::gpu
