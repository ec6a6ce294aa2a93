// Internal: what the SuiteSparse backends (cholmod.cpp, umfpack.cpp, klu.cpp) share: the views
// of our const arrays as the non-const ones of their C APIs, per-thread solve scratch, and the
// bookkeeping every one of their Factorization and Symbolic classes repeats.
//
// The backends call the C APIs directly: Eigen's wrappers lose klu_refactor, symbolic reuse
// across objects and UMFPACK's refinement switch. A CsrPattern's arrays read as compressed
// columns are the CSC form of Aᵀ, so UMFPACK and KLU factorize M = Aᵀ without a copy and solve
// A x = b as Mᵀ x = b (and Aᵀ x = b as M x = b). CHOLMOD needs no such care: A is symmetric,
// and stype = 1 reads one triangle.
#pragma once

#include <cstddef>
#include <cstdint>
#include <fem/solve/detail/backends.hpp>
#include <fem/solve/solve.hpp>
#include <memory>
#include <utility>
#include <vector>

namespace fem::solve::detail {

// The C APIs take non-const pointers to arrays they only read.
inline int* mut(const index_t* p) { return const_cast<int*>(p); }
inline double* mut(const double* p) { return const_cast<double*>(p); }

// Per-thread scratch for solves, grown as needed and reused: one buffer per Slot.
template <class T, int Slot>
T* scratch(std::size_t n) {
  thread_local std::vector<T> buffer;
  if (buffer.size() < n) buffer.resize(n);
  return buffer.data();
}

// A backend's symbolic analysis: its ordering and the bytes it holds.
template <Backend kBackend>
class SuiteSparseSymbolic : public Symbolic {
 public:
  Backend backend() const noexcept override { return kBackend; }
  Ordering ordering() const noexcept override { return ordering_; }
  std::size_t bytes() const noexcept override { return bytes_; }

 protected:
  SuiteSparseSymbolic(std::shared_ptr<const CsrPattern> p, Ordering ordering)
      : Symbolic(std::move(p)), ordering_(ordering) {}
  Ordering ordering_;
  std::size_t bytes_ = 0;
};

// A backend's numeric factorization: the analysis it makes (SymbolicT), the nonzeros and the
// bytes of its factors, those bytes counted live (add_live_factor_bytes). release() frees the
// factors; the derived class calls it from its destructor.
template <class SymbolicT, Backend kBackend>
class SuiteSparseFactorization : public Factorization {
 public:
  explicit SuiteSparseFactorization(const Options& o) : Factorization(o) {}
  Backend backend() const noexcept override { return kBackend; }
  std::size_t factor_nonzeros() const noexcept override { return nnz_; }
  std::size_t bytes() const noexcept override { return bytes_; }

 protected:
  std::shared_ptr<const Symbolic> do_analyze(std::shared_ptr<const CsrPattern> p,
                                             Ordering ordering) override {
    release();
    return std::make_shared<SymbolicT>(std::move(p), ordering);
  }
  virtual void release() = 0;
  const SymbolicT& analysis() const { return static_cast<const SymbolicT&>(*symbolic()); }
  void set_bytes(std::size_t b) {
    add_live_factor_bytes(static_cast<std::int64_t>(b) - static_cast<std::int64_t>(bytes_));
    bytes_ = b;
  }
  std::size_t nnz_ = 0;

 private:
  std::size_t bytes_ = 0;
};

}  // namespace fem::solve::detail
