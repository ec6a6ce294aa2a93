#include "fem/dist/boundary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "fem/dist/session.hpp"

namespace fem::dist {

void check_facet_tags(const Distribution& d, std::span<const int> tags, const std::string& source) {
  for (int tag : tags)
    if (!std::binary_search(d.facet_tags.begin(), d.facet_tags.end(), tag))
      throw InvalidArgument(
          fmt::format("mesh '{}' has no boundary facet with tag {}; its facet tags are: {}", source, tag,
                      d.facet_tags.empty() ? "none" : fmt::format("{}", fmt::join(d.facet_tags, ", "))));
}

assembly::DirichletValues dirichlet_values(const IndexMap& map, const assembly::FunctionSpace& V,
                                           std::span<const assembly::Dirichlet> conditions) {
  const auto d = distribution(V.mesh_key(), *V.store());
  const auto n = static_cast<std::size_t>(map.local_dofs());
  // Which condition wins each DOF (1 + its index, 0: none) where this rank has it, and its value.
  std::vector<double> winner(n, 0.0);
  std::vector<assembly::DirichletValues> each(conditions.size());
  collective(map.comm(), [&] {
    for (const auto& c : conditions)
      if (!c.where.whole_boundary) check_facet_tags(*d, c.where.tags, V.mesh().source());
    for (std::size_t i = 0; i < conditions.size(); ++i) {
      each[i] = assembly::dirichlet_values(V, conditions.subspan(i, 1));
      for (index_t dof : each[i].dofs) winner[dof] = static_cast<double>(i + 1);
    }
  });
  // The later condition wins, as serially; its value comes from a rank that holds it (every rank
  // that holds a condition evaluates it at the same point: the maximum is that value, exactly).
  map.maximize(winner);
  std::vector<double> value(n, -std::numeric_limits<double>::infinity());
  for (std::size_t i = 0; i < conditions.size(); ++i)
    for (std::size_t k = 0; k < each[i].dofs.size(); ++k)
      if (winner[each[i].dofs[k]] == static_cast<double>(i + 1)) value[each[i].dofs[k]] = each[i].values[k];
  map.maximize(value);
  assembly::DirichletValues out;
  for (std::size_t i = 0; i < n; ++i)
    if (winner[i] > 0) {
      out.dofs.push_back(static_cast<index_t>(i));
      out.values.push_back(value[i]);
    }
  return out;
}

}  // namespace fem::dist
