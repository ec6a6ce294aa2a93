#include "fem/dist/matrix.hpp"

#include <fmt/format.h>

#include "fem/dist/detail/petsc.hpp"
#include "fem/dist/session.hpp"

namespace fem::dist {

PetscMatrix::PetscMatrix(const CsrMatrix& A, std::shared_ptr<const IndexMap> map)
    : map_(std::move(map)), pattern_(A.pattern_ptr()) {
  const IndexMap& m = *map_;
  FEM_EXPECTS(A.rows() == m.local_dofs() && A.cols() == m.local_dofs(),
              "distributed matrix: the local matrix is {} x {}, the space has {} local DOFs", A.rows(),
              A.cols(), m.local_dofs());
  const CsrPattern& p = *pattern_;
  // COO of the local CSR in global numbers; PETSc may overwrite the index arrays.
  std::vector<PetscInt> i(p.nnz()), j(p.nnz());
  const auto offsets = p.row_offsets();
  const auto cols = p.col_indices();
  for (index_t r = 0; r < p.rows(); ++r) {
    const index_t gr = m.global_dof(r);
    for (index_t k = offsets[r]; k < offsets[r + 1]; ++k) i[k] = gr, j[k] = m.global_dof(cols[k]);
  }
  FEM_PETSC(MatCreate(m.comm(), &mat_));
  FEM_PETSC(MatSetSizes(mat_, m.owned_dofs(), m.owned_dofs(), m.global_dofs(), m.global_dofs()));
  FEM_PETSC(MatSetType(mat_, MATAIJ));
  FEM_PETSC(MatSetBlockSize(mat_, m.block()));
  FEM_PETSC(MatSetPreallocationCOO(mat_, static_cast<PetscCount>(p.nnz()), i.data(), j.data()));
  refill(A);
}

PetscMatrix::~PetscMatrix() { detail::delayed_destroy(reinterpret_cast<PetscObject*>(&mat_)); }

void PetscMatrix::refill(const CsrMatrix& A) {
  FEM_EXPECTS(A.pattern_ptr() == pattern_ || A.pattern().same_structure(*pattern_),
              "distributed matrix: refilled with values of another pattern");
  FEM_PETSC(MatSetValuesCOO(mat_, A.values().data(), INSERT_VALUES));
}

void PetscMatrix::multiply(std::span<const double> x, std::span<double> y) const {
  const IndexMap& m = *map_;
  collective(m.comm(), [&] {
    FEM_EXPECTS(x.size() == y.size() && x.size() == static_cast<std::size_t>(m.local_dofs()),
                "distributed y = A x: vectors of {} and {} entries, the space has {} local DOFs", x.size(),
                y.size(), m.local_dofs());
  });
  Vec gx = m.create_vector(), gy = m.create_vector();
  m.to_petsc(x, Sums::consistent, gx);
  FEM_PETSC(MatMult(mat_, gx, gy));
  m.from_petsc(gy, y);
  VecDestroy(&gx);
  VecDestroy(&gy);
}

Versioned<CsrMatrix> collective_input(MPI_Comm comm, const Store& store, const std::string& key,
                                      const IndexMap& map) {
  return collective(comm, [&] {
    const auto A = store.get_versioned<CsrMatrix>(key);
    FEM_EXPECTS(
        !store.info(key).evictable,
        "'{}' is a cache entry: a distributed matrix must not be evicted by one rank alone; publish it "
        "as user data",
        key);
    FEM_EXPECTS(A.value->rows() == map.local_dofs() && A.value->cols() == map.local_dofs(),
                "distributed matrix '{}': {} x {} here, the space has {} local DOFs", key, A.value->rows(),
                A.value->cols(), map.local_dofs());
    return A;
  });
}

std::size_t PetscMatrix::bytes() const noexcept {
  MatInfo info{};
  MatGetInfo(mat_, MAT_LOCAL, &info);
  return static_cast<std::size_t>(info.memory) + pattern_->nnz() * sizeof(PetscCount);
}

std::shared_ptr<const PetscMatrix> petsc_matrix(Store& store, const std::string& key,
                                                std::shared_ptr<const IndexMap> map,
                                                std::shared_ptr<const PetscMatrix> retired) {
  const MPI_Comm comm = map->comm();
  const auto A = collective_input(comm, store, key, *map);
  const std::string entry = key + "#petsc";
  return collective_get_or_compute<PetscMatrix>(comm, store, entry, {{key, A.version}}, [&] {
    register_collective(store, entry);
    detail::collect_garbage(comm);
    // The last holder gave it back: nobody else can see the values change.
    auto reclaimed = Store::reclaim(std::move(retired));
    const bool recyclable = reclaimed && reclaimed->map_ptr() == map &&
                            (reclaimed->pattern() == A.value->pattern_ptr() ||
                             reclaimed->pattern()->same_structure(A.value->pattern()));
    if (all(comm, recyclable)) {
      reclaimed->refill(*A.value);
      store.count("dist.coo_fills");
      return std::shared_ptr<const PetscMatrix>(std::move(reclaimed));
    }
    reclaimed.reset();
    auto m = std::make_shared<PetscMatrix>(*A.value, map);  // non-const: a later version may refill it
    store.count("dist.coo_preallocations");
    store.count("dist.coo_fills");
    return std::shared_ptr<const PetscMatrix>(std::move(m));
  });
}

}  // namespace fem::dist
