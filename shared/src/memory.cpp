// prefault(): see fem/memory.hpp.
#include "fem/memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older kernels answer EINVAL and nothing happens
#endif

namespace fem {

void prefault(void* data, std::size_t bytes) noexcept {
  constexpr std::size_t threshold = std::size_t{1} << 20;
  if (data == nullptr || bytes < threshold) return;
  constexpr std::uintptr_t huge = std::uintptr_t{2} << 20;
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  const auto end = begin + bytes;
  // 2 MB pages for the whole 2 MB-aligned interior of the range.
  const auto huge_begin = (begin + huge - 1) & ~(huge - 1), huge_end = end & ~(huge - 1);
  if (huge_end > huge_begin) madvise(reinterpret_cast<void*>(huge_begin), huge_end - huge_begin, MADV_HUGEPAGE);
  // Populate the pages that lie entirely inside the range (the partial ones at the ends may be
  // shared with other allocations; they fault in normally).
  const auto pop_begin = (begin + page - 1) & ~(page - 1), pop_end = end & ~(page - 1);
  if (pop_end > pop_begin) madvise(reinterpret_cast<void*>(pop_begin), pop_end - pop_begin, MADV_POPULATE_WRITE);
}

}  // namespace fem
