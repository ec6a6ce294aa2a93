// HashTable: sizing and growth, chunking, and the staging copies for executors with separate
// memory. The kernels themselves are in the backends.
#include "fem/gpu/hash_table.hpp"

#include <algorithm>
#include <cmath>

#include "backend.hpp"
#include "fem/error.hpp"

namespace fem::gpu {

using detail::Counters;
using detail::TableRef;

template <class K, class V>
struct HashTable<K, V>::Impl {
  static constexpr double hard_load = 0.9;                // never fill beyond this within a chunk
  static constexpr std::size_t staging_chunk = 1u << 22;  // keys per copy for separate memory
  static constexpr std::uint64_t max_capacity = std::uint64_t{1} << 31;

  Executor exec;
  Options options;
  std::unique_ptr<detail::TableBackend<K, V>> backend;
  DeviceBuffer<K> keys;
  DeviceBuffer<V> values;
  DeviceBuffer<Counters> counters;
  std::uint64_t capacity = 0;
  std::uint32_t rebuilds = 0;

  Impl(Executor e, std::size_t expected, Options o) : exec(std::move(e)), options(o) {
    FEM_EXPECTS(o.max_load > 0.0 && o.max_load <= 0.9, "hash table max_load {} is outside (0, 0.9]",
                o.max_load);
    FEM_EXPECTS(o.max_probe >= 1, "hash table max_probe must be at least 1");
    backend = exec.kind() == Executor::Kind::cuda ? detail::make_cuda_backend<K, V>(exec)
                                                  : detail::make_host_backend<K, V>(exec);
    counters = DeviceBuffer<Counters>(exec, 1);
    capacity = capacity_for(expected);
    keys = DeviceBuffer<K>(exec, capacity);
    values = DeviceBuffer<V>(exec, capacity);
    backend->clear(ref(), counters.data());
  }

  std::uint64_t capacity_for(std::size_t n) const {
    std::uint64_t cap = 1024;
    while (static_cast<double>(cap) * options.max_load < static_cast<double>(n)) cap *= 2;
    FEM_EXPECTS(cap <= max_capacity, "hash table for {} keys would need {} slots; at most {} are supported",
                n, cap, max_capacity);
    return cap;
  }

  TableRef<K, V> ref() const { return {keys.data(), values.data(), capacity - 1}; }
  /// For the _async inserts, which cannot grow the table first: a bounded probe (hash_table.hpp).
  TableRef<K, V> ref_async() const {
    TableRef<K, V> r = ref();
    r.probe_limit = HashTable<K, V>::async_probe_limit;
    return r;
  }

  Counters read() const {
    Counters c;
    counters.download({&c, 1});
    exec.context().synchronize();
    if (c.full)
      throw Error(
          "hash table overflow: an _async insert found the table full; reserve() enough capacity first");
    return c;
  }

  void rebuild(std::uint64_t new_capacity) {
    FEM_EXPECTS(new_capacity <= max_capacity, "hash table cannot grow beyond {} slots", max_capacity);
    DeviceBuffer<K> new_keys(exec, new_capacity);
    DeviceBuffer<V> new_values(exec, new_capacity);
    const TableRef<K, V> to{new_keys.data(), new_values.data(), new_capacity - 1};
    backend->clear(to, nullptr);
    backend->rehash(ref(), to, counters.data());
    keys = std::move(new_keys);
    values = std::move(new_values);
    capacity = new_capacity;
    ++rebuilds;
  }

  // Grow when the load or the probe length bound is passed.
  void maybe_grow(const Counters& c) {
    const double load = static_cast<double>(c.size) / static_cast<double>(capacity);
    std::uint64_t cap = capacity;
    while (static_cast<double>(c.size) > options.max_load * static_cast<double>(cap)) cap *= 2;
    // A long probe at a low load means bad luck, not a full table: double once, no more.
    if (cap == capacity && c.max_probe > options.max_probe && load > options.max_load / 4) cap *= 2;
    if (cap != capacity) rebuild(cap);
  }

  // Call fn(offset, count) on chunks of n keys, each small enough to fit without growing.
  template <class Fn>
  void for_chunks(std::size_t n, Fn&& fn, bool staged = false) {
    std::size_t done = 0;
    while (done < n) {
      const Counters c = read();
      const auto limit = static_cast<std::size_t>(hard_load * static_cast<double>(capacity));
      const std::size_t room = limit > c.size ? limit - c.size : 0;
      std::size_t m = std::min(n - done, room);
      if (exec.separate_memory() && staged) m = std::min(m, staging_chunk);
      if (m < std::min<std::size_t>(n - done, 1u << 16)) {
        rebuild(capacity * 2);
        continue;
      }
      fn(done, m);
      done += m;
      maybe_grow(read());
    }
  }

  static void check_keys(std::span<const K> keys) {
    for (std::size_t i = 0; i < keys.size(); ++i)
      FEM_EXPECTS(detail::KeyTraits<K>::valid(keys[i]), "hash table key {} uses a reserved (all-ones) value",
                  i);
  }
};

template <class K, class V>
HashTable<K, V>::HashTable(Executor exec, std::size_t expected_size)
    : HashTable(std::move(exec), expected_size, Options{}) {}

template <class K, class V>
HashTable<K, V>::HashTable(Executor exec, std::size_t expected_size, Options options)
    : impl_(std::make_unique<Impl>(std::move(exec), expected_size, options)) {}

template <class K, class V>
HashTable<K, V>::~HashTable() = default;
template <class K, class V>
HashTable<K, V>::HashTable(HashTable&&) noexcept = default;
template <class K, class V>
HashTable<K, V>& HashTable<K, V>::operator=(HashTable&&) noexcept = default;

template <class K, class V>
void HashTable<K, V>::insert(std::span<const K> keys, std::span<const V> values) {
  FEM_EXPECTS(keys.size() == values.size(), "hash table insert: {} keys but {} values", keys.size(),
              values.size());
  Impl& s = *impl_;
  Impl::check_keys(keys);
  DeviceBuffer<K> k_stage;
  DeviceBuffer<V> v_stage;
  if (s.exec.separate_memory()) {
    k_stage = DeviceBuffer<K>(s.exec, std::min(keys.size(), Impl::staging_chunk));
    v_stage = DeviceBuffer<V>(s.exec, k_stage.size());
  }
  s.for_chunks(
      keys.size(),
      [&](std::size_t off, std::size_t m) {
        const K* kp = keys.data() + off;
        const V* vp = values.data() + off;
        if (s.exec.separate_memory()) {
          k_stage.upload(keys.subspan(off, m));
          v_stage.upload(values.subspan(off, m));
          kp = k_stage.data();
          vp = v_stage.data();
        }
        s.backend->insert(s.ref(), s.counters.data(), kp, vp, m);
      },
      /*staged=*/true);
}

template <class K, class V>
void HashTable<K, V>::insert_unique(std::span<const K> keys, std::span<V> ids,
                                    std::span<std::uint8_t> is_new) {
  FEM_EXPECTS(ids.size() == keys.size(), "hash table insert_unique: {} keys but room for {} ids", keys.size(),
              ids.size());
  FEM_EXPECTS(is_new.empty() || is_new.size() == keys.size(),
              "hash table insert_unique: {} keys but room for {} is_new flags", keys.size(), is_new.size());
  FEM_EXPECTS(keys.size() < (std::size_t{1} << 31), "insert_unique takes at most 2^31 keys per call");
  Impl& s = *impl_;
  Impl::check_keys(keys);
  const bool staged = s.exec.separate_memory();
  DeviceBuffer<K> k_stage;
  DeviceBuffer<V> id_stage;
  DeviceBuffer<std::uint8_t> new_stage;
  if (staged) {
    const std::size_t m = std::min(keys.size(), Impl::staging_chunk);
    k_stage = DeviceBuffer<K>(s.exec, m);
    id_stage = DeviceBuffer<V>(s.exec, m);
    if (!is_new.empty()) new_stage = DeviceBuffer<std::uint8_t>(s.exec, m);
  }
  s.for_chunks(
      keys.size(),
      [&](std::size_t off, std::size_t m) {
        if (staged) {
          k_stage.upload(keys.subspan(off, m));
          s.backend->insert_unique(s.ref(), s.counters.data(), k_stage.data(), m, id_stage.data(),
                                   is_new.empty() ? nullptr : new_stage.data());
          id_stage.download(ids.subspan(off, m));
          if (!is_new.empty()) new_stage.download(is_new.subspan(off, m));
        } else {
          s.backend->insert_unique(s.ref(), s.counters.data(), keys.data() + off, m, ids.data() + off,
                                   is_new.empty() ? nullptr : is_new.data() + off);
        }
      },
      /*staged=*/true);
  s.exec.context().synchronize();
}

template <class K, class V>
void HashTable<K, V>::find(std::span<const K> keys, std::span<V> values,
                           std::span<std::uint8_t> found) const {
  FEM_EXPECTS(values.size() == keys.size(), "hash table find: {} keys but room for {} values", keys.size(),
              values.size());
  FEM_EXPECTS(found.empty() || found.size() == keys.size(), "hash table find: {} keys but room for {} flags",
              keys.size(), found.size());
  const Impl& s = *impl_;
  if (!s.exec.separate_memory()) {
    s.backend->find(s.ref(), keys.data(), keys.size(), values.data(), found.empty() ? nullptr : found.data());
    return;
  }
  const std::size_t m_max = std::min(keys.size(), Impl::staging_chunk);
  DeviceBuffer<K> k_stage(s.exec, m_max);
  DeviceBuffer<V> v_stage(s.exec, m_max);
  DeviceBuffer<std::uint8_t> f_stage(s.exec, found.empty() ? 0 : m_max);
  for (std::size_t off = 0; off < keys.size(); off += m_max) {
    const std::size_t m = std::min(m_max, keys.size() - off);
    k_stage.upload(keys.subspan(off, m));
    s.backend->find(s.ref(), k_stage.data(), m, v_stage.data(), found.empty() ? nullptr : f_stage.data());
    v_stage.download(values.subspan(off, m));
    if (!found.empty()) f_stage.download(found.subspan(off, m));
  }
  s.exec.context().synchronize();
}

template <class K, class V>
void HashTable<K, V>::export_entries(std::vector<K>& keys, std::vector<V>& values) const {
  const Impl& s = *impl_;
  const std::size_t n = s.read().size;
  keys.resize(n);
  values.resize(n);
  if (!s.exec.separate_memory()) {
    s.backend->export_entries(s.ref(), n, keys.data(), values.data());
    return;
  }
  DeviceBuffer<K> k_out(s.exec, n);
  DeviceBuffer<V> v_out(s.exec, n);
  s.backend->export_entries(s.ref(), n, k_out.data(), v_out.data());
  k_out.download(keys);
  v_out.download(values);
  s.exec.context().synchronize();
}

template <class K, class V>
std::size_t HashTable<K, V>::size() const {
  return impl_->read().size;
}

template <class K, class V>
void HashTable<K, V>::clear() {
  impl_->backend->clear(impl_->ref(), impl_->counters.data());
}

template <class K, class V>
void HashTable<K, V>::reserve(std::size_t n) {
  const std::uint64_t cap = impl_->capacity_for(n);
  if (cap > impl_->capacity) impl_->rebuild(cap);
}

template <class K, class V>
void HashTable<K, V>::insert_async(const K* keys, const V* values, std::size_t n) {
  impl_->backend->insert(impl_->ref_async(), impl_->counters.data(), keys, values, n);
}

template <class K, class V>
void HashTable<K, V>::insert_unique_async(const K* keys, V* ids, std::uint8_t* is_new, std::size_t n) {
  FEM_EXPECTS(n < (std::size_t{1} << 31), "insert_unique takes at most 2^31 keys per call");
  impl_->backend->insert_unique(impl_->ref_async(), impl_->counters.data(), keys, n, ids, is_new);
}

template <class K, class V>
void HashTable<K, V>::insert_resident(const K* keys, const V* values, std::size_t n) {
  Impl& s = *impl_;
  s.for_chunks(n, [&](std::size_t off, std::size_t m) {
    s.backend->insert(s.ref(), s.counters.data(), keys + off, values + off, m);
  });
}

template <class K, class V>
void HashTable<K, V>::insert_unique_resident(const K* keys, V* ids, std::uint8_t* is_new, std::size_t n) {
  FEM_EXPECTS(n < (std::size_t{1} << 31), "insert_unique takes at most 2^31 keys per call");
  Impl& s = *impl_;
  s.for_chunks(n, [&](std::size_t off, std::size_t m) {
    s.backend->insert_unique(s.ref(), s.counters.data(), keys + off, m, ids + off,
                             is_new ? is_new + off : nullptr);
  });
}

template <class K, class V>
void HashTable<K, V>::find_resident(const K* keys, V* values, std::uint8_t* found, std::size_t n) const {
  const Impl& s = *impl_;
  s.backend->find(s.ref(), keys, n, values, found);
  s.exec.context().synchronize();
}

template <class K, class V>
std::size_t HashTable<K, V>::first_invalid_resident(const K* keys, std::size_t n) const {
  return impl_->backend->first_invalid(keys, n);
}

template <class K, class V>
void HashTable<K, V>::widen_keys_resident(const std::int32_t* in, std::size_t n, K* out) const {
  impl_->backend->widen(in, n, out);
}

template <class K, class V>
void HashTable<K, V>::find_async(const K* keys, V* values, std::uint8_t* found, std::size_t n) const {
  impl_->backend->find(impl_->ref(), keys, n, values, found);
}

template <class K, class V>
void HashTable<K, V>::export_async(K* keys, V* values) const {
  impl_->backend->export_entries(impl_->ref(), impl_->capacity, keys, values);
}

template <class K, class V>
std::size_t HashTable<K, V>::capacity() const noexcept {
  return impl_->capacity;
}

template <class K, class V>
std::uint32_t HashTable<K, V>::max_probe_length() const {
  return impl_->read().max_probe;
}

template <class K, class V>
std::uint32_t HashTable<K, V>::rebuilds() const noexcept {
  return impl_->rebuilds;
}

template <class K, class V>
std::size_t HashTable<K, V>::bytes() const noexcept {
  return sizeof(*this) + sizeof(Impl) + impl_->keys.bytes() + impl_->values.bytes() + impl_->counters.bytes();
}

template <class K, class V>
Residency HashTable<K, V>::residency() const noexcept {
  return impl_->exec.kind() == Executor::Kind::cuda ? Residency::device : Residency::host;
}

template <class K, class V>
const Executor& HashTable<K, V>::executor() const noexcept {
  return impl_->exec;
}

template class HashTable<std::uint64_t, std::uint32_t>;
template class HashTable<std::uint64_t, std::uint64_t>;
template class HashTable<Key128, std::uint32_t>;
template class HashTable<Key128, std::uint64_t>;

}  // namespace fem::gpu
