// The hash table's probing logic, written once over plain arrays and compiled for both the host
// twin (std::atomic_ref) and the device (atomicCAS): open addressing with linear probing and a
// murmur3 finalizer as the hash. Keys and values live in separate arrays.
#pragma once

#include <cstdint>
#include <type_traits>

#include "fem/gpu/detail/macros.hpp"
#include "fem/gpu/keys.hpp"

#if !defined(__CUDA_ARCH__)
#include <atomic>
#endif
#if defined(__CUDACC__)
#include <cuda/atomic>
#endif

namespace fem::gpu::detail {

/// murmur3's 64-bit finalizer: every input bit affects every output bit. Packed indices are
/// highly regular, so the identity hash would cluster them badly under linear probing.
FEM_HD_INLINE std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

template <class K>
struct KeyTraits;

template <>
struct KeyTraits<std::uint64_t> {
  static constexpr std::uint64_t empty = ~std::uint64_t{0};
  FEM_HD_INLINE static std::uint64_t hash(std::uint64_t k) { return mix64(k); }
  FEM_HD_INLINE static bool valid(std::uint64_t k) { return k != empty; }
};

template <>
struct KeyTraits<Key128> {
  static constexpr std::uint64_t empty_hi = ~std::uint64_t{0};
  static constexpr std::uint64_t locked_hi = ~std::uint64_t{0} - 1;  // claimed, lo being written
  FEM_HD_INLINE static std::uint64_t hash(const Key128& k) { return mix64(k.lo ^ mix64(k.hi)); }
  FEM_HD_INLINE static bool valid(const Key128& k) { return k.hi < locked_hi; }
};

/// Values of insert_unique carry this bit while a batch is in flight: the rest of the word is
/// the index of the key's first occurrence in the batch. Ids must stay below it.
template <class V>
inline constexpr V pending_bit = V{1} << (sizeof(V) * 8 - 1);
template <class V>
inline constexpr V empty_value = ~V{0};

/// A view of a table's arrays in the executor's memory (host or device), passed by value to
/// kernels: the trivially copyable "ref" of cuCollections.
template <class K, class V>
struct TableRef {
  K* keys = nullptr;
  V* values = nullptr;
  std::uint64_t mask = 0;  ///< capacity - 1, capacity a power of two
  /// 0: hashed home slots. Else (64-bit (row, col) keys only) row-local home slots: row r's
  /// window starts at slot (r · row_scale) >> 16 (rows spread evenly over the capacity) and a
  /// column picks one of its 2^window_shift slots, so the pairs of neighbouring rows (of
  /// neighbouring cells of a mesh) share cache lines instead of each costing a DRAM round trip.
  std::uint32_t window_shift = 0;
  std::uint64_t row_scale = 0;  ///< capacity · 2^16 / number of rows
  /// Inserts give up (report `full`) after this many probes; 0: the whole capacity. Bounds the
  /// cost of a degenerate input (a node shared by very many cells) under row-local home slots.
  std::uint32_t probe_limit = 0;
};

struct ProbeResult {
  std::uint32_t slot;
  std::uint32_t probes;  ///< slots inspected
  bool inserted;         ///< this call placed the key
  bool full;             ///< no free slot found: the table is full
};

inline constexpr std::uint32_t not_found = ~std::uint32_t{0};

#if !defined(__CUDA_ARCH__)
/// Host atomics: std::atomic_ref on the plain arrays.
struct HostAtomics {
  template <class T>
  static T load(const T* p) {
    return std::atomic_ref<T>(*const_cast<T*>(p)).load(std::memory_order_acquire);
  }
  template <class T>
  static T load_acquire(const T* p) {
    return load(p);
  }
  template <class T>
  static void store(T* p, T v) {
    std::atomic_ref<T>(*p).store(v, std::memory_order_release);
  }
  /// Returns the previous value.
  template <class T>
  static T cas(T* p, T expected, T desired) {
    if (serial) {  // one thread: a lock-prefixed cmpxchg costs as much as the probe itself
      const T old = *p;
      if (old == expected) *p = desired;
      return old;
    }
    std::atomic_ref<T>(*p).compare_exchange_strong(expected, desired, std::memory_order_acq_rel,
                                                   std::memory_order_acquire);
    return expected;
  }
  template <class T>
  static void fetch_min(T* p, T v) {
    if (serial) {
      if (v < *p) *p = v;
      return;
    }
    std::atomic_ref<T> r(*p);
    T cur = r.load(std::memory_order_relaxed);
    while (v < cur &&
           !r.compare_exchange_weak(cur, v, std::memory_order_acq_rel, std::memory_order_relaxed)) {
    }
  }
  /// Returns the previous value. Plain arithmetic while the host launcher runs a loop on one
  /// thread: an uncontended lock-prefixed add still costs ~10 ns, which dominates counting passes.
  template <class T>
  static T fetch_add(T* p, T v) {
    if (serial) {
      const T old = *p;
      *p = old + v;
      return old;
    }
    return std::atomic_ref<T>(*p).fetch_add(v, std::memory_order_relaxed);
  }
  /// Set by the host launcher for loops it runs on a single thread.
  // initial-exec: a plain %fs-relative load in the hot loops instead of a __tls_get_addr call.
#if defined(__NVCC__)
  static inline thread_local bool serial = false;
#else
  static inline thread_local bool serial [[gnu::tls_model("initial-exec")]] = false;
#endif
  static void fence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
  static void pause() { __builtin_ia32_pause(); }
};
#endif

#if defined(__CUDACC__)
/// Device atomics: the CUDA intrinsics on 32- and 64-bit words.
struct DeviceAtomics {
  template <class T>
  __device__ static T load(const T* p) {
    return *static_cast<const volatile T*>(p);
  }
  /// Acquire: the loads after it see what the writer stored before its fence and this value
  /// (the 128-bit keys' lo word after their hi word).
  template <class T>
  __device__ static T load_acquire(const T* p) {
    return cuda::atomic_ref<T, cuda::thread_scope_device>(*const_cast<T*>(p))
        .load(cuda::memory_order_acquire);
  }
  /// A plain (relaxed) store. No fence: within an insert kernel nobody reads the values, and the
  /// kernel boundary orders them for the next kernel; where an order is needed (a 128-bit key's
  /// lo word before its hi word) the caller fences explicitly.
  template <class T>
  __device__ static void store(T* p, T v) {
    *static_cast<volatile T*>(p) = v;
  }
  template <class T>
  __device__ static T cas(T* p, T expected, T desired) {
    if constexpr (sizeof(T) == 8)
      return static_cast<T>(atomicCAS(reinterpret_cast<unsigned long long*>(p),
                                      static_cast<unsigned long long>(expected),
                                      static_cast<unsigned long long>(desired)));
    else
      return static_cast<T>(atomicCAS(reinterpret_cast<unsigned int*>(p), static_cast<unsigned int>(expected),
                                      static_cast<unsigned int>(desired)));
  }
  template <class T>
  __device__ static void fetch_min(T* p, T v) {
    if constexpr (sizeof(T) == 8)
      atomicMin(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
    else
      atomicMin(reinterpret_cast<unsigned int*>(p), static_cast<unsigned int>(v));
  }
  template <class T>
  __device__ static T fetch_add(T* p, T v) {
    if constexpr (sizeof(T) == 8)
      return static_cast<T>(
          atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v)));
    else
      return static_cast<T>(atomicAdd(reinterpret_cast<unsigned int*>(p), static_cast<unsigned int>(v)));
  }
  __device__ static void fence() { __threadfence(); }
  __device__ static void pause() { __nanosleep(32); }
};
#endif

/// The slot where probing for `key` starts.
template <class K, class V>
FEM_HD_INLINE std::uint64_t home_slot(const TableRef<K, V>& t, const K& key) {
  if constexpr (std::is_same_v<K, std::uint64_t>) {
    if (t.window_shift) {
      // Fibonacci hashing of the column picks the slot inside the row's window.
      const std::uint32_t col = std::uint32_t(key) * 0x9E3779B1u;
      return ((((key >> 32) * t.row_scale) >> 16) + (col >> (32 - t.window_shift))) & t.mask;
    }
  }
  return KeyTraits<K>::hash(key) & t.mask;
}

/// Find `key`'s slot, probing from `slot`, claiming an empty one if it is absent. Lock-free for
/// 64-bit keys; 128-bit keys claim their slot by writing a "locked" marker into the hi word, then
/// lo, then hi. Every insert and find of a key must start from the same slot.
template <class A, class K, class V>
FEM_HD_INLINE ProbeResult insert_key_from(const TableRef<K, V>& t, const K& key, std::uint64_t slot) {
  const std::uint64_t limit = t.probe_limit && t.probe_limit < t.mask + 1 ? t.probe_limit : t.mask + 1;
  for (std::uint64_t probes = 1; probes <= limit; ++probes) {
    if constexpr (std::is_same_v<K, std::uint64_t>) {
      std::uint64_t cur = A::load(&t.keys[slot]);
      if (cur == key) return {std::uint32_t(slot), std::uint32_t(probes), false, false};
      if (cur == KeyTraits<K>::empty) {
        cur = A::cas(&t.keys[slot], KeyTraits<K>::empty, key);
        if (cur == KeyTraits<K>::empty) return {std::uint32_t(slot), std::uint32_t(probes), true, false};
        if (cur == key) return {std::uint32_t(slot), std::uint32_t(probes), false, false};
      }
    } else {
      using T = KeyTraits<Key128>;
      std::uint64_t* hi = &t.keys[slot].hi;
      std::uint64_t cur = A::load(hi);
      if (cur == T::empty_hi) {
        cur = A::cas(hi, T::empty_hi, T::locked_hi);
        if (cur == T::empty_hi) {
          t.keys[slot].lo = key.lo;
          A::fence();
          A::store(hi, key.hi);
          return {std::uint32_t(slot), std::uint32_t(probes), true, false};
        }
      }
      while (cur == T::locked_hi) {
        A::pause();
        cur = A::load(hi);
      }
      // The writer stored lo, fenced, then stored hi: read hi again with acquire before lo, or
      // (on the device's weak memory) lo may still read its old contents after hi reads new.
      if (cur != T::empty_hi) cur = A::load_acquire(hi);
      if (cur == key.hi && A::load(&t.keys[slot].lo) == key.lo)
        return {std::uint32_t(slot), std::uint32_t(probes), false, false};
    }
    slot = (slot + 1) & t.mask;
  }
  return {0, std::uint32_t(limit), false, true};
}

/// insert_key_from() the key's home slot.
template <class A, class K, class V>
FEM_HD_INLINE ProbeResult insert_key(const TableRef<K, V>& t, const K& key) {
  return insert_key_from<A>(t, key, home_slot(t, key));
}

/// The slot holding `key`, or not_found. Only valid when no insert runs concurrently.
template <class A, class K, class V>
FEM_HD_INLINE std::uint32_t find_key(const TableRef<K, V>& t, const K& key) {
  std::uint64_t slot = home_slot(t, key);
  for (std::uint64_t probes = 0; probes <= t.mask; ++probes) {
    if constexpr (std::is_same_v<K, std::uint64_t>) {
      const std::uint64_t cur = t.keys[slot];
      if (cur == key) return std::uint32_t(slot);
      if (cur == KeyTraits<K>::empty) return not_found;
    } else {
      const Key128 cur = t.keys[slot];
      if (cur == key) return std::uint32_t(slot);
      if (cur.hi == KeyTraits<Key128>::empty_hi) return not_found;
    }
    slot = (slot + 1) & t.mask;
  }
  return not_found;
}

template <class K>
FEM_HD_INLINE bool slot_occupied(const K& k) {
  if constexpr (std::is_same_v<K, std::uint64_t>)
    return k != KeyTraits<K>::empty;
  else
    return k.hi != KeyTraits<Key128>::empty_hi;
}

// --- per-index bodies of the bulk operations, shared by the host and device launchers ---------

/// insert-or-assign of keys[i] -> values[i].
template <class A, class K, class V>
FEM_HD_INLINE ProbeResult insert_one(const TableRef<K, V>& t, const K& key, V value) {
  const ProbeResult r = insert_key<A>(t, key);
  if (!r.full) A::store(&t.values[r.slot], value);
  return r;
}

/// Phase 1 of insert_unique: place the key and keep, in its value, the smallest batch index at
/// which it occurs (marked pending). Keys already numbered keep their id (ids < pending_bit).
/// A key that found no room gets slot not_found: every slots[i] is written, so the later phases
/// never index the table with an unwritten slot (the batch is then reported full).
template <class A, class K, class V>
FEM_HD_INLINE ProbeResult mark_one(const TableRef<K, V>& t, const K& key, std::uint64_t i,
                                   std::uint32_t* slots) {
  const ProbeResult r = insert_key<A>(t, key);
  if (!r.full) A::fetch_min(&t.values[r.slot], V(pending_bit<V> | V(i)));
  slots[i] = r.full ? not_found : r.slot;
  return r;
}

/// Phase 2: read back the value: 1 when occurrence i is its key's first occurrence in the
/// batch of a key that was not numbered before. The raw value is kept in ids[i] for phase 3
/// (empty_value for a key that found no room).
template <class K, class V>
FEM_HD_INLINE std::uint32_t first_occurrence_flag(const TableRef<K, V>& t, std::uint64_t i,
                                                  const std::uint32_t* slots, V* ids) {
  if (slots[i] == not_found) {
    ids[i] = empty_value<V>;
    return 0u;
  }
  const V v = t.values[slots[i]];
  ids[i] = v;
  return (v & pending_bit<V>)&&V(v & ~pending_bit<V>) == V(i) ? 1u : 0u;
}

/// Phase 3: the id of occurrence i: its old id, or base + the rank of its key's first occurrence
/// among first occurrences (ranks = exclusive scan of the flags). Deterministic: ids follow
/// first occurrence order whatever the thread count or the device. A key that found no room
/// keeps empty_value (never a pending value: batches hold fewer than 2^31 keys).
template <class V>
FEM_HD_INLINE void resolve_id(std::uint64_t i, V base, const std::uint32_t* ranks, V* ids,
                              std::uint8_t* is_new) {
  const V v = ids[i];
  if (v == empty_value<V>) {
    if (is_new) is_new[i] = 0;
  } else if (v & pending_bit<V>) {
    const std::uint64_t first = v & ~pending_bit<V>;
    ids[i] = V(base + ranks[first]);
    if (is_new) is_new[i] = first == i ? 1 : 0;
  } else if (is_new) {
    is_new[i] = 0;
  }
}

}  // namespace fem::gpu::detail
