// The distributed mesh and numbering: parts cover the mesh, ownership is one rank per node and
// contiguous, the PETSc matrix of the local parts is the serial matrix.
#include <gtest/gtest.h>

#include <numeric>
#include <set>

#include "problems.hpp"
#include "support.hpp"

namespace fem::test {
namespace {

const MPI_Comm comm = MPI_COMM_WORLD;

class Distribute : public ::testing::TestWithParam<std::string> {};

TEST_P(Distribute, PartsCoverTheMeshAndOwnershipIsContiguous) {
  Store store;
  const auto whole = whole_mesh(comm, GetParam());
  const auto d = dist::distribute(comm, whole, "mesh/m", store);
  const auto local = store.get<Mesh>("mesh/m");
  const int me = dist::rank(comm), ranks = dist::size(comm);

  EXPECT_EQ(dist::sum(comm, std::int64_t{local->num_cells()}), d->global_cells);
  EXPECT_EQ(dist::sum(comm, std::int64_t{d->owned_nodes}), d->global_nodes);
  // Owned ranges follow each other in rank order.
  index_t first = 0;
  MPI_Exscan(&d->owned_nodes, &first, 1, MPI_INT, MPI_SUM, comm);
  if (me == 0) first = 0;
  EXPECT_EQ(d->first_owned_node, first);
  for (index_t n = 0; n < local->num_nodes(); ++n) {
    const bool owned = n < d->owned_nodes;
    EXPECT_EQ(d->node_owner[n] == me, owned) << "node " << n;
    if (owned) {
      EXPECT_EQ(d->global_node[n], d->first_owned_node + n);
    }
    EXPECT_GE(d->node_owner[n], 0);
    EXPECT_LT(d->node_owner[n], ranks);
  }
  // Coordinates travelled with their nodes.
  if (me == 0) {
    // Rank 0 checks its own part against the whole mesh.
    for (index_t n = 0; n < local->num_nodes(); ++n)
      for (int k = 0; k < local->gdim(); ++k)
        EXPECT_EQ(local->node(n)[k], whole->node(d->original_node[n])[k]);
  }
  // The whole boundary of the parts is the whole mesh's: same count of facets.
  const auto tag = local->tag_of(boundary_facets_name, local->tdim() - 1);
  EXPECT_TRUE(tag.has_value());
  const auto mine = std::count(local->facet_tags().begin(), local->facet_tags().end(), tag.value_or(-1));
  std::int64_t whole_boundary = 0;
  if (me == 0) {
    int nvf = 0;
    whole_boundary =
        static_cast<std::int64_t>(assembly::select_facets(*whole, assembly::FacetSet::all(), nvf).size() /
                                  static_cast<std::size_t>(nvf));
  }
  EXPECT_EQ(dist::sum(comm, std::int64_t{mine}), dist::sum(comm, whole_boundary));
}

TEST_P(Distribute, PetscMatrixIsTheSerialMatrix) {
  for (int degree : {1, 2}) {
    Store store;
    const auto whole = whole_mesh(comm, GetParam());
    dist::distribute(comm, whole, "mesh/m", store);
    const assembly::FunctionSpace V("mesh/m", degree, 1, store);
    const auto map = dist::index_map(V);
    EXPECT_EQ(map->local_dofs(), V.num_dofs());
    const assembly::Assembler a(V);
    store.put("A", a.matrix(assembly::Diffusion{}));
    const auto A = dist::petsc_matrix(store, "A", map);
    // x = a smooth function of the DOF coordinates, consistent on every rank.
    auto f = [](const double* x) { return 1 + x[0] + 2 * x[1] * x[1]; };
    const int gdim = V.mesh().gdim();
    std::vector<double> x(V.num_dofs()), y(V.num_dofs());
    for (index_t i = 0; i < V.num_dofs(); ++i)
      x[i] = f(&V.dofmap().coordinates[static_cast<std::size_t>(i) * gdim]);
    A->multiply(x, y);
    const auto got = gather_by_key(V, *map, y);

    double difference = 0;
    if (dist::rank(comm) == 0) {
      Store serial;
      serial.put("mesh/w", whole);
      const assembly::FunctionSpace W("mesh/w", degree, 1, serial);
      const auto Aw = assembly::Assembler(W).matrix(assembly::Diffusion{});
      std::vector<double> xw(W.num_dofs()), yw(W.num_dofs());
      for (index_t i = 0; i < W.num_dofs(); ++i)
        xw[i] = f(&W.dofmap().coordinates[static_cast<std::size_t>(i) * gdim]);
      Aw.multiply(xw, yw);
      difference = relative_difference(got, by_key(W, yw));
    }
    EXPECT_LE(dist::max(comm, difference), 1e-12) << "degree " << degree;
  }
}

TEST_P(Distribute, GatherPutsEveryDofAtItsGlobalNumber) {
  Store store;
  dist::distribute(comm, whole_mesh(comm, GetParam()), "mesh/m", store);
  const assembly::FunctionSpace V("mesh/m", 2, 2, store);  // edge nodes and two components
  const auto map = dist::index_map(V);
  std::vector<double> u(V.num_dofs());
  for (index_t d = 0; d < V.num_dofs(); ++d) u[d] = map->global_dof(d);
  const auto all = map->gather(u);
  std::int64_t misplaced = 0;
  for (std::size_t i = 0; i < all.size(); ++i) misplaced += all[i] != static_cast<double>(i);
  EXPECT_EQ(all.size(), dist::rank(comm) == 0 ? static_cast<std::size_t>(map->global_dofs()) : 0u);
  EXPECT_EQ(dist::sum(comm, misplaced), 0);
}

// A mixed space's map is its velocity's and its pressure's stacked: each process owns its owned
// velocity DOFs, then its owned pressure DOFs (one contiguous range), every copy of a DOF has its
// owner's number, and gather() puts every number in its place.
TEST(MixedDistribute, TheMixedMapStacksTheVelocityAndThePressure) {
  for (const char* spec : {"plate_hole_v41.msh", "gen:cube-tet4:4", "gen:square-quad4:7"}) {
    SCOPED_TRACE(spec);
    Store store;
    dist::distribute(comm, whole_mesh(comm, spec), "mesh/m", store);
    const assembly::MixedSpace W("mesh/m", store);
    const auto map = dist::index_map(W);
    const auto u = dist::index_map(W.velocity()), p = dist::index_map(W.pressure());
    EXPECT_EQ(map, dist::index_map(W));  // cached
    EXPECT_EQ(map->local_dofs(), W.num_dofs());
    EXPECT_EQ(map->global_dofs(), u->global_dofs() + p->global_dofs());
    EXPECT_EQ(map->owned_dofs(), u->owned_dofs() + p->owned_dofs());
    std::int64_t wrong = 0;
    std::vector<double> g(W.num_dofs());
    const index_t first = map->first_owned_node(), velocity_end = first + u->owned_dofs();
    for (index_t d = 0; d < W.num_dofs(); ++d) {
      const bool velocity = d < W.pressure_offset();
      const index_t global = map->global_dof(d);
      g[d] = global;
      wrong += map->owns_dof(d) != (velocity ? u->owns_dof(d) : p->owns_dof(d - W.pressure_offset()));
      if (map->owns_dof(d))
        wrong += velocity ? !(global >= first && global < velocity_end)
                          : !(global >= velocity_end && global < first + map->owned_dofs());
    }
    std::vector<double> agreed = g;
    map->maximize(agreed);
    for (index_t d = 0; d < W.num_dofs(); ++d) wrong += agreed[d] != g[d];
    const auto all = map->gather(g);
    for (std::size_t i = 0; i < all.size(); ++i) wrong += all[i] != static_cast<double>(i);
    EXPECT_EQ(dist::sum(comm, wrong), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Meshes, Distribute,
                         ::testing::Values("plate_hole_v41.msh", "annulus_p2_v41.msh", "gen:cube-tet4:5",
                                           "gen:square-quad4:7"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return s;
                         });

}  // namespace
}  // namespace fem::test
