// A rank's local CsrMatrix (its cells' contributions, partial sums at shared rows) as one PETSc
// MPIAIJ matrix: the pattern once (MatSetPreallocationCOO with the local pattern's global
// indices; rows owned elsewhere are summed into their owner by PETSc), the values per
// re-assembly (MatSetValuesCOO, one pass over the local nonzeros, no copy of the CSR).
//
//   auto A = fem::dist::petsc_matrix(store, "A", map);                 // "A#petsc", collective
//   store.put("A", assembler.matrix(form));                            // new values
//   A = fem::dist::petsc_matrix(store, "A", map, std::move(A));        // refilled in place
#pragma once

#include <memory>
#include <span>
#include <string>

#include "fem/csr.hpp"
#include "fem/dist/handles.hpp"
#include "fem/dist/index_map.hpp"
#include "fem/store.hpp"

namespace fem::dist {

class PetscMatrix {
 public:
  /// Collective: the matrix of `A` (local pattern and values) in `map`'s global numbering.
  PetscMatrix(const CsrMatrix& A, std::shared_ptr<const IndexMap> map);
  ~PetscMatrix();
  PetscMatrix(const PetscMatrix&) = delete;
  PetscMatrix& operator=(const PetscMatrix&) = delete;

  /// The PETSc matrix, for PETSc calls of the user's own; it belongs to this object.
  Mat mat() const noexcept { return mat_; }
  const IndexMap& map() const noexcept { return *map_; }
  const std::shared_ptr<const IndexMap>& map_ptr() const noexcept { return map_; }
  const std::shared_ptr<const CsrPattern>& pattern() const noexcept { return pattern_; }
  /// Collective: y = A x for consistent local vectors (y consistent).
  void multiply(std::span<const double> x, std::span<double> y) const;
  /// Collective: new values of the same local pattern, in place (MatSetValuesCOO).
  void refill(const CsrMatrix& A);
  /// Bytes: PETSc's own count of the local matrix plus the COO maps (8 bytes per local nonzero).
  std::size_t bytes() const noexcept;

 private:
  Mat mat_ = nullptr;
  std::shared_ptr<const IndexMap> map_;
  std::shared_ptr<const CsrPattern> pattern_;
};

/// Collective: the PETSc matrix of the CsrMatrix under `key` at its current version, cached as
/// `<key>#petsc`. A new version refills `retired` (the PetscMatrix of an older version, given
/// back by its last holder) when it has the same pattern and map: one MatSetValuesCOO, no new
/// preallocation (counters dist.coo_fills, dist.coo_preallocations).
std::shared_ptr<const PetscMatrix> petsc_matrix(Store& store, const std::string& key,
                                                std::shared_ptr<const IndexMap> map,
                                                std::shared_ptr<const PetscMatrix> retired = nullptr);

/// Collective: the CsrMatrix under `key` with its version, agreed: absent on one rank, a cache
/// entry (one rank could evict it), or of the wrong size is an error on every rank.
Versioned<CsrMatrix> collective_input(MPI_Comm comm, const Store& store, const std::string& key,
                                      const IndexMap& map);

}  // namespace fem::dist

FEM_TYPE_NAME(fem::dist::PetscMatrix, "fem::dist::PetscMatrix");
