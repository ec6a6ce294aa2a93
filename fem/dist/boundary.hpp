// Boundary conditions on a distributed mesh: the Dirichlet values of every constrained DOF, the
// same on every rank that has it (a rank may have a DOF of a boundary facet that another rank
// holds), with the serial rule where conditions overlap (the later one wins), and tags checked
// against the whole mesh (a part may lack a tag the whole mesh has; a tag no facet of the whole
// mesh carries is an error on every rank).
#pragma once

#include <span>
#include <vector>

#include "fem/assembly/boundary.hpp"
#include "fem/dist/distribute.hpp"
#include "fem/dist/index_map.hpp"

namespace fem::dist {

/// Collective: assembly::dirichlet_values() of the distributed space V, consistent across ranks.
assembly::DirichletValues dirichlet_values(const IndexMap& map, const assembly::FunctionSpace& V,
                                           std::span<const assembly::Dirichlet> conditions);

/// Throws InvalidArgument (naming the tag and the whole mesh's facet tags) for a tag no facet of
/// the whole mesh carries. Not collective: every rank has the same tags and takes the same
/// decision.
void check_facet_tags(const Distribution& d, std::span<const int> tags, const std::string& source);

}  // namespace fem::dist
