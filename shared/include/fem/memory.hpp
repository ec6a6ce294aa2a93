// Memory: how much this process can still use (so that a problem too large for the machine is
// refused before it is attempted, naming the bytes), and fresh memory for big arrays. Faulting
// pages in one at a time costs microseconds per 4 KB page on virtual machines (measured 2.5 ms
// per MB here, more than the kernels' own work); asking the kernel to populate the range in one
// call, in 2 MB pages, costs 0.09 ms per MB.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fem {

/// The memory this process can still use, and what limits it.
struct MemoryAvailable {
  std::uint64_t bytes = 0;
  /// What gave the figure, for messages: "MemAvailable", "cgroup memory.max",
  /// "cgroup memory.limit_in_bytes", "RLIMIT_AS", "RLIMIT_DATA" or "FEM_MEMORY_LIMIT".
  std::string source;
};

/// The memory this process can still allocate, measured now (a few small reads of /proc and
/// /sys, about 40 us; the cgroups are found once per process): the smallest of
///   - MemAvailable of /proc/meminfo (free memory plus what the kernel can reclaim),
///   - for every cgroup of this process up to the root of its hierarchy, its hard limit (v2
///     memory.max, v1 memory.limit_in_bytes) minus its usage (memory.current,
///     memory.usage_in_bytes) not counting inactive file pages, which are reclaimable (v2
///     memory.high is no limit: above it the kernel throttles the cgroup, it does not refuse),
///   - RLIMIT_AS minus the process' virtual size, RLIMIT_DATA minus its data size, when set.
/// The environment variable FEM_MEMORY_LIMIT (bytes, with an optional K, M, G or T suffix: powers
/// of 1024, e.g. "512M", "1.5G") replaces the measurement: the process then behaves as if it had
/// exactly that much left (tests simulate a small machine with it; a large value switches the
/// checks off in effect); empty counts as unset, a malformed value is an InvalidArgument naming
/// it. Where nothing can be read: the largest std::uint64_t, source "not measurable".
MemoryAvailable memory_available();
/// memory_available().bytes.
std::uint64_t available_memory();

namespace detail {
/// Tests only: what one cgroup directory `dir` (v2 when `v2`, else v1) leaves this process, as
/// memory_available() reads it: its hard limit minus its usage without inactive file pages, and
/// the file that set it; {the largest std::uint64_t, ""} when it sets no limit.
MemoryAvailable cgroup_memory_available(const std::string& dir, bool v2);
}  // namespace detail

/// Bytes from "1073741824", "512M", "1.5G", "64 KiB", "2GB" (K, M, G, T: powers of 1024; an
/// optional "B" or "iB" after the suffix; case-insensitive; surrounding blanks allowed).
/// Anything else (empty, negative, unknown suffix, not finite, beyond 2^64) is InvalidArgument
/// naming `what` and the text.
std::uint64_t parse_bytes(std::string_view text, std::string_view what = "size");

/// "812 B", "3.40 MiB", "21.3 GiB", "1.20 TiB": three significant digits, powers of 1024.
std::string format_bytes(double bytes);

/// Back [data, data + bytes) with memory now, in 2 MB pages where possible, in one system call
/// (MADV_HUGEPAGE + MADV_POPULATE_WRITE). A no-op for small ranges and where unsupported.
void prefault(void* data, std::size_t bytes) noexcept;

/// Resize `v` to n elements; when that needs new memory, prefault it before the elements are
/// written.
template <class T>
void resize_prefaulted(std::vector<T>& v, std::size_t n) {
  if (n > v.capacity()) {
    std::vector<T> fresh;
    fresh.reserve(n);
    prefault(fresh.data(), n * sizeof(T));
    fresh.assign(v.begin(), v.end());
    v.swap(fresh);
  }
  v.resize(n);
}

/// A vector of n value-initialised elements in prefaulted memory.
template <class T>
std::vector<T> prefaulted_vector(std::size_t n) {
  std::vector<T> v;
  resize_prefaulted(v, n);
  return v;
}

}  // namespace fem
