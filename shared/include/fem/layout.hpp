// The processes a computation runs on, and how a process's local vectors make up the global
// vector of a problem: what the library's problem layer, Newton and the front ends need to run a
// problem on one process or many without naming MPI. One process is the identity (serial());
// fem::dist (MPI + PETSc) implements both for distributed meshes. Every function of a layout or
// a process group of several processes is collective: every process calls it, in the same order.
#pragma once

#include <cstdint>
#include <exception>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "fem/csr.hpp"
#include "fem/error.hpp"

namespace fem {

/// What a local vector holds at the entries several processes share: each process's own
/// contributions (an assembled vector: the true value is the sum over processes), or the value
/// itself on every process (a solution, an iterate). On one process the two are the same.
enum class Sums { partial, consistent };

class Processes {
 public:
  virtual ~Processes() = default;
  virtual int size() const noexcept { return 1; }
  virtual int rank() const noexcept { return 0; }
  bool root() const noexcept { return rank() == 0; }

  /// Every process passes its own outcome (nullptr: success). When any failed, the one that
  /// failed rethrows its exception and every other one throws an Error with the message of the
  /// lowest failing rank; nobody is left waiting in a collective call the others never make.
  virtual void agree(std::exception_ptr failure) const {
    if (failure) std::rethrow_exception(failure);
  }
  /// f() on every process, its failure agreed (see agree()); returns f's result.
  template <class F>
  auto collective(F&& f) const -> std::invoke_result_t<F> {
    return agreed(std::forward<F>(f), [this](std::exception_ptr failure) { agree(failure); });
  }

  virtual double sum(double v) const { return v; }
  virtual std::int64_t sum(std::int64_t v) const { return v; }
  virtual double max(double v) const { return v; }
  double min(double v) const { return -max(-v); }
  /// Rank 0's string on every process.
  virtual void broadcast(std::string&) const {}
  /// The union over the processes of a set of integers (sorted, without duplicates).
  virtual std::vector<int> merge(std::vector<int> set) const;

  /// One process.
  static const Processes& one();
};

class Layout {
 public:
  virtual ~Layout() = default;
  virtual const Processes& processes() const noexcept { return Processes::one(); }
  /// Whether the local vectors are parts of a distributed vector (also on one process, as
  /// fem::dist runs a PETSc solver there).
  virtual bool distributed() const noexcept { return false; }
  /// Entries of the global vector, given this process's local size.
  virtual std::int64_t global_size(std::size_t local_size) const {
    return static_cast<std::int64_t>(local_size);
  }
  /// Whether this process owns local entry `i` (counts it in global sums).
  virtual bool owns(index_t) const noexcept { return true; }
  /// Σ aᵢbᵢ over the global vector, for consistent vectors.
  virtual double dot(std::span<const double> a, std::span<const double> b) const;
  /// Partial sums → consistent values: the contributions of every process summed into every copy.
  virtual void accumulate(std::span<double>) const {}
  /// Every copy of an entry replaced by the largest of its copies.
  virtual void maximize(std::span<double>) const {}

  /// Entries of `entries` (local indices) this process owns, summed over processes.
  std::int64_t count_owned(std::span<const index_t> entries) const;
  /// The smallest and largest entry of a consistent vector over all processes ({0, 0} when the
  /// global vector is empty).
  std::pair<double, double> range(std::span<const double> v) const;

  /// The layout of one process.
  static const Layout& serial();
};

}  // namespace fem
