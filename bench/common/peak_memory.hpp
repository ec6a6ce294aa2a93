// Peak memory for benchmarks: the process's resident set high-water mark (VmHWM), reset before a
// case so each big case reports its own peak. Linux only.
#pragma once

#include <benchmark/benchmark.h>

#include <fstream>
#include <string>

namespace fem::bench {

/// Reset the kernel's resident-set high-water mark to the current resident set.
inline void reset_peak_memory() { std::ofstream("/proc/self/clear_refs") << "5"; }

/// The resident-set high-water mark in bytes.
inline double peak_memory_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) * 1024.0;
  return 0.0;
}

/// Add a peak_MB counter to a benchmark's report.
inline void report_peak_memory(benchmark::State& state) {
  state.counters["peak_MB"] = benchmark::Counter(peak_memory_bytes() / 1e6);
}

}  // namespace fem::bench
