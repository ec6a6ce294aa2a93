// Keys of the connectivity hash table: 64-bit packed index pairs and triples, and a 128-bit key
// for vertex triples that do not fit in 64 bits.
#pragma once

#include <cstdint>

#include "fem/csr.hpp"
#include "fem/gpu/detail/macros.hpp"

namespace fem::gpu {

/// A 128-bit key (two words). The all-ones hi word is reserved (empty slot), as is all-ones
/// minus one (a slot being written).
struct Key128 {
  std::uint64_t lo = ~std::uint64_t{0};
  std::uint64_t hi = ~std::uint64_t{0};
  FEM_HD friend bool operator==(const Key128& a, const Key128& b) { return a.lo == b.lo && a.hi == b.hi; }
  FEM_HD friend bool operator!=(const Key128& a, const Key128& b) { return !(a == b); }
  FEM_HD friend bool operator<(const Key128& a, const Key128& b) {
    return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo);
  }
};

/// (a, b) in one word, a in the high half. Used for (row, col) matrix entries.
FEM_HD_INLINE std::uint64_t pack_pair(index_t a, index_t b) {
  return (std::uint64_t(std::uint32_t(a)) << 32) | std::uint32_t(b);
}
FEM_HD_INLINE index_t pair_first(std::uint64_t k) { return static_cast<index_t>(k >> 32); }
FEM_HD_INLINE index_t pair_second(std::uint64_t k) { return static_cast<index_t>(k & 0xffffffffu); }

/// An unordered pair (an edge) as a key: the smaller index first.
FEM_HD_INLINE std::uint64_t pack_sorted_pair(index_t a, index_t b) {
  return a < b ? pack_pair(a, b) : pack_pair(b, a);
}

/// Vertex triples (faces) pack into 64 bits when every index is below this bound (21 bits).
inline constexpr index_t packed_triple_limit = index_t{1} << 21;

FEM_HD_INLINE void sort3(index_t& a, index_t& b, index_t& c) {
  if (a > b) {
    index_t t = a;
    a = b;
    b = t;
  }
  if (b > c) {
    index_t t = b;
    b = c;
    c = t;
  }
  if (a > b) {
    index_t t = a;
    a = b;
    b = t;
  }
}

/// Sorted triple in 63 bits; indices must be below packed_triple_limit.
FEM_HD_INLINE std::uint64_t pack_sorted_triple(index_t a, index_t b, index_t c) {
  sort3(a, b, c);
  return (std::uint64_t(a) << 42) | (std::uint64_t(b) << 21) | std::uint64_t(c);
}

/// Sorted triple in 128 bits, any indices.
FEM_HD_INLINE Key128 pack_sorted_triple_128(index_t a, index_t b, index_t c) {
  sort3(a, b, c);
  return Key128{(std::uint64_t(std::uint32_t(b)) << 32) | std::uint32_t(c), std::uint64_t(std::uint32_t(a))};
}

}  // namespace fem::gpu
