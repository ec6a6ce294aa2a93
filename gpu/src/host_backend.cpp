// The host twin of the hash table: the shared probing bodies with std::atomic_ref, OpenMP over
// the keys, and software prefetching of the home slots (the table is far larger than the cache,
// so an insert is one DRAM round trip; prefetching keeps many in flight per core).
#include <omp.h>

#include <algorithm>
#include <vector>

#include "backend.hpp"
#include "fem/error.hpp"
#include "fem/memory.hpp"
#include "launch_host.hpp"

namespace fem::gpu::detail {
namespace {

constexpr std::int64_t kPrefetch = 16;

template <class K, class V>
void prefetch_home(const TableRef<K, V>& t, const K& key) {
  const std::uint64_t s = home_slot(t, key);
  __builtin_prefetch(&t.keys[s], 1, 0);
  __builtin_prefetch(&t.values[s], 1, 0);
}

// Exclusive prefix sum in place (the host launch policy's, which follows the OpenMP team).
void exclusive_scan(std::uint32_t* data, std::int64_t n) {
  HostLaunch::exclusive_scan(Executor::host(), data, static_cast<std::size_t>(n));
}

template <class K, class V>
class HostBackend final : public TableBackend<K, V> {
 public:
  explicit HostBackend(Executor exec) : exec_(std::move(exec)) {}

  void clear(TableRef<K, V> t, Counters* c) override {
    const std::size_t cap = t.mask + 1;
    std::fill_n(reinterpret_cast<unsigned char*>(t.keys), cap * sizeof(K), 0xff);
    std::fill_n(reinterpret_cast<unsigned char*>(t.values), cap * sizeof(V), 0xff);
    if (c) *c = Counters{};
  }

  void insert(TableRef<K, V> t, Counters* c, const K* keys, const V* values, std::size_t n) override {
    run(c, n, [&](std::int64_t i) {
      if (i + kPrefetch < static_cast<std::int64_t>(n)) prefetch_home(t, keys[i + kPrefetch]);
      return insert_one<HostAtomics>(t, keys[i], values[i]);
    });
  }

  // The device backend's algorithm, phase for phase: mark, flag, scan, resolve. On the debug
  // device its work arrays are poisoned executor buffers, as on a GPU, so that a phase reading
  // a slot nobody wrote indexes far out of the table and fails here first.
  void insert_unique(TableRef<K, V> t, Counters* c, const K* keys, std::size_t n, V* ids,
                     std::uint8_t* is_new) override {
    c->base = c->size;
    const auto nn = static_cast<std::int64_t>(n);
    DeviceBuffer<std::uint32_t> slot_buffer, flag_buffer;
    DeviceBuffer<std::uint8_t> fresh_buffer;
    std::uint32_t *slots, *flags;
    std::uint8_t* fresh = is_new;
    if (exec_.kind() == Executor::Kind::debug_device) {
      slot_buffer = DeviceBuffer<std::uint32_t>(exec_, n);
      flag_buffer = DeviceBuffer<std::uint32_t>(exec_, n);
      slots = slot_buffer.data();
      flags = flag_buffer.data();
      if (!fresh) {
        fresh_buffer = DeviceBuffer<std::uint8_t>(exec_, n);
        fresh = fresh_buffer.data();
      }
    } else {
      resize_prefaulted(slots_, n);
      resize_prefaulted(flags_, n);
      slots = slots_.data();
      flags = flags_.data();
      if (!fresh) {
        resize_prefaulted(fresh_, n);
        fresh = fresh_.data();
      }
    }
    run(c, n, [&](std::int64_t i) {
      if (i + kPrefetch < nn) prefetch_home(t, keys[i + kPrefetch]);
      return mark_one<HostAtomics>(t, keys[i], std::uint64_t(i), slots);
    });
    const int nt = HostLaunch::threads(n);
    if (c->full) {
      // As the device kernels: the later phases stop on a full table. The debug device still
      // reads every slot entry (through the guards), so an entry nobody wrote, poisoned, fails
      // here as it would on a GPU under compute-sanitizer.
      if (exec_.kind() == Executor::Kind::debug_device)
        for (std::int64_t i = 0; i < nn; ++i)
          flags[i] = first_occurrence_flag(t, std::uint64_t(i), slots, ids);
      return;
    }
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(dynamic, HostLaunch::chunk(n, nt))
    for (std::int64_t i = 0; i < nn; ++i) {
      if (i + kPrefetch < nn && slots[i + kPrefetch] != not_found)
        __builtin_prefetch(&t.values[slots[i + kPrefetch]], 0, 0);
      flags[i] = first_occurrence_flag(t, std::uint64_t(i), slots, ids);
    }
    exclusive_scan(flags, nn);
    const V base = static_cast<V>(c->base);
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(dynamic, HostLaunch::chunk(n, nt))
    for (std::int64_t i = 0; i < nn; ++i) {
      resolve_id(std::uint64_t(i), base, flags, ids, fresh);
      if (fresh[i]) t.values[slots[i]] = ids[i];
    }
  }

  void find(TableRef<K, V> t, const K* keys, std::size_t n, V* values, std::uint8_t* found) override {
    const auto nn = static_cast<std::int64_t>(n);
    const int nt = HostLaunch::threads(n);
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(dynamic, HostLaunch::chunk(n, nt))
    for (std::int64_t i = 0; i < nn; ++i) {
      if (i + kPrefetch < nn) prefetch_home(t, keys[i + kPrefetch]);
      const std::uint32_t s = find_key<HostAtomics>(t, keys[i]);
      values[i] = s == not_found ? empty_value<V> : t.values[s];
      if (found) found[i] = s != not_found;
    }
  }

  void export_entries(TableRef<K, V> t, std::size_t size, K* keys, V* values) override {
    const auto cap = static_cast<std::int64_t>(t.mask + 1);
    const int max_threads = HostLaunch::threads(static_cast<std::size_t>(cap));
    std::vector<std::int64_t> offset(max_threads + 1, 0);
#pragma omp parallel num_threads(max_threads) if (max_threads > 1)
    {
      const int nt = omp_get_num_threads(), th = omp_get_thread_num();  // the team OpenMP gave
      const std::int64_t b = cap * th / nt, e = cap * (th + 1) / nt;
      std::int64_t count = 0;
      for (std::int64_t s = b; s < e; ++s) count += slot_occupied(t.keys[s]);
      offset[th + 1] = count;
#pragma omp barrier
#pragma omp single
      for (int k = 0; k < nt; ++k) offset[k + 1] += offset[k];
      std::int64_t out = offset[th];
      for (std::int64_t s = b; s < e; ++s)
        if (slot_occupied(t.keys[s]) && out < static_cast<std::int64_t>(size)) {
          keys[out] = t.keys[s];
          values[out] = t.values[s];
          ++out;
        }
    }
  }

  void rehash(TableRef<K, V> from, TableRef<K, V> to, Counters* c) override {
    c->max_probe = 0;
    const auto cap = static_cast<std::int64_t>(from.mask + 1);
    unsigned max_probe = 0, full = 0;
    const auto n = static_cast<std::size_t>(cap);
    const int nt = HostLaunch::threads(n);
    const std::int64_t chunk = HostLaunch::chunk(n, nt);
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(dynamic, chunk) reduction(max : max_probe, full)
    for (std::int64_t s = 0; s < cap; ++s) {
      if (!slot_occupied(from.keys[s])) continue;
      const ProbeResult r = insert_one<HostAtomics>(to, from.keys[s], from.values[s]);
      max_probe = std::max(max_probe, r.probes);
      full = std::max(full, unsigned(r.full));
    }
    c->max_probe = max_probe;
    c->full |= full;  // an overflow stays reported until clear(), as on the device
  }

  std::size_t first_invalid(const K* keys, std::size_t n) override {
    for (std::size_t i = 0; i < n; ++i)
      if (!KeyTraits<K>::valid(keys[i])) return i;
    return n;
  }

  void widen(const std::int32_t* in, std::size_t n, K* out) override {
    if constexpr (std::is_same_v<K, std::uint64_t>) {
      for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<K>(static_cast<std::int64_t>(in[i]));
    } else {
      throw InvalidArgument("hash table: int32 keys widen to 64-bit keys only");
    }
  }

 private:
  // Run body(i) for i < n in parallel and fold its ProbeResults into the counters.
  template <class Body>
  void run(Counters* c, std::size_t n, Body&& body) {
    unsigned long long added = 0;
    unsigned max_probe = c->max_probe, full = c->full;
    const auto nn = static_cast<std::int64_t>(n);
    const int nt = HostLaunch::threads(n);
    if (nt == 1) {  // plain loads and stores instead of atomics
      HostAtomics::serial = true;
      for (std::int64_t i = 0; i < nn; ++i) {
        const ProbeResult r = body(i);
        added += r.inserted;
        max_probe = std::max(max_probe, r.probes);
        full = std::max(full, unsigned(r.full));
      }
      HostAtomics::serial = false;
    } else {
      const std::int64_t chunk = HostLaunch::chunk(n, nt);
#pragma omp parallel for num_threads(nt) schedule(dynamic, chunk) reduction(+ : added) \
    reduction(max : max_probe, full)
      for (std::int64_t i = 0; i < nn; ++i) {
        const ProbeResult r = body(i);
        added += r.inserted;
        max_probe = std::max(max_probe, r.probes);
        full = std::max(full, unsigned(r.full));
      }
    }
    c->size += added;
    c->max_probe = max_probe;
    c->full |= full;  // an overflow stays reported until clear(), as on the device
  }

  Executor exec_;
  std::vector<std::uint32_t> slots_, flags_;
  std::vector<std::uint8_t> fresh_;
};

}  // namespace

template <class K, class V>
std::unique_ptr<TableBackend<K, V>> make_host_backend(const Executor& exec) {
  return std::make_unique<HostBackend<K, V>>(exec);
}

template std::unique_ptr<TableBackend<std::uint64_t, std::uint32_t>> make_host_backend(const Executor&);
template std::unique_ptr<TableBackend<std::uint64_t, std::uint64_t>> make_host_backend(const Executor&);
template std::unique_ptr<TableBackend<Key128, std::uint32_t>> make_host_backend(const Executor&);
template std::unique_ptr<TableBackend<Key128, std::uint64_t>> make_host_backend(const Executor&);

}  // namespace fem::gpu::detail
