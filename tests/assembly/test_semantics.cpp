// What the user's words mean (docs/semantics.md), on meshes made by Gmsh (meshes/groups.geo):
// physical groups are sets (a cell or facet in several is stored once and belongs to each),
// `all` is the whole boundary, a tag wins over `all` whatever the order, two tags that meet must
// agree, a flux is a boundary condition, and a per-tag value needs a group of cells.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <string>

#include "fem/assembly/assembly.hpp"
#include "fem/error.hpp"
#include "fem/mesh/read.hpp"
#include "fem/mesh/write_gmsh.hpp"

namespace {

using namespace fem::assembly;

// Groups of meshes/groups.geo.
constexpr int bottom = 1, clamped = 2, left = 3, top = 4, interface = 5, soft = 10, hard = 11, plate = 12;

class Semantics : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    store_.put("mesh/g", fem::mesh::read(std::string(FEM_MESHES_DIR "/") + GetParam()));
    V_.emplace("mesh/g", 1, 1, store_);
  }
  const FunctionSpace& V() const { return *V_; }
  const fem::Mesh& mesh() const { return V_->mesh(); }
  double flux(std::vector<Neumann> conditions) const {
    std::vector<double> b(V().num_dofs(), 0.0);
    assemble_neumann(V(), conditions, b);
    return std::accumulate(b.begin(), b.end(), 0.0);
  }
  static Neumann constant(FacetSet where, double g) {
    return Neumann::scalar(std::move(where), [g](const double*) { return g; });
  }
  fem::Store store_;
  std::optional<FunctionSpace> V_;
};

std::string message_of(auto&& f) {
  try {
    f();
  } catch (const fem::InvalidArgument& e) {
    return e.what();
  }
  return "";
}

TEST_P(Semantics, AnElementInTwoGroupsIsOneElementOfBoth) {
  const fem::Mesh& m = mesh();
  // The area is 1: cells in 'soft' or 'hard' and in 'plate' are not read twice.
  const fem::CsrMatrix M = Assembler(V()).matrix(Mass{});
  const auto mass = M.values();
  EXPECT_NEAR(std::accumulate(mass.begin(), mass.end(), 0.0), 1.0, 1e-12);
  std::size_t in_soft = 0, in_hard = 0;
  for (int t : m.cell_tags()) {
    EXPECT_TRUE(m.in_group(2, t, plate));
    EXPECT_NE(m.in_group(2, t, soft), m.in_group(2, t, hard));
    in_soft += m.in_group(2, t, soft), in_hard += m.in_group(2, t, hard);
  }
  EXPECT_EQ(in_soft + in_hard, static_cast<std::size_t>(m.num_cells()));
  EXPECT_EQ(m.tags(2), (std::vector<int>{soft, hard, plate}));
  // The left half of the bottom is in 'bottom' and 'clamped', each facet once.
  int shared = 0;
  for (int t : m.facet_tags()) shared += m.in_group(1, t, bottom) && m.in_group(1, t, clamped);
  EXPECT_EQ(shared, 4);
  EXPECT_EQ(m.tags(1), (std::vector<int>{bottom, clamped, left, top, interface}));
}

TEST_P(Semantics, WrittenAndReadBackTheSetsStay) {
  for (auto version : {fem::mesh::GmshVersion::msh22, fem::mesh::GmshVersion::msh41}) {
    const fem::Mesh back = fem::mesh::read_gmsh(fem::mesh::to_gmsh(mesh(), false, version), "back.msh");
    EXPECT_EQ(back.num_cells(), mesh().num_cells());
    EXPECT_EQ(back.num_facets(), mesh().num_facets());
    for (fem::index_t c = 0; c < back.num_cells(); ++c)
      EXPECT_EQ(back.groups(2, back.cell_tags()[c]), mesh().groups(2, mesh().cell_tags()[c]));
    for (fem::index_t f = 0; f < back.num_facets(); ++f)
      EXPECT_EQ(back.groups(1, back.facet_tags()[f]), mesh().groups(1, mesh().facet_tags()[f]));
  }
}

TEST_P(Semantics, AllIsTheWholeBoundaryOnce) {
  // The perimeter: the untagged right side counts, the interface does not, the bottom's left
  // half (two groups) once.
  EXPECT_NEAR(flux({constant(FacetSet::all(), 1.0)}), 4.0, 1e-12);
  // 'bottom' and 'clamped' agree on the shared half: integrated once.
  EXPECT_NEAR(flux({constant({bottom}, 1.0), constant({clamped}, 1.0)}), 1.0, 1e-12);
  EXPECT_NEAR(flux({constant({bottom, clamped}, 1.0)}), 1.0, 1e-12);
  // A tag wins over `all`, whatever the order: 2 on the bottom, 1 on the three other sides.
  EXPECT_NEAR(flux({constant({bottom}, 2.0), constant(FacetSet::all(), 1.0)}), 5.0, 1e-12);
  EXPECT_NEAR(flux({constant(FacetSet::all(), 1.0), constant({bottom}, 2.0)}), 5.0, 1e-12);
}

TEST_P(Semantics, AFluxIsABoundaryConditionAndTwoTagsMustAgree) {
  const std::string interior = message_of([&] { flux({constant({interface}, 1.0)}); });
  EXPECT_NE(interior.find("'interface'"), std::string::npos) << interior;
  EXPECT_NE(interior.find("interior"), std::string::npos) << interior;
  const std::string two = message_of([&] { flux({constant({bottom}, 1.0), constant({clamped}, 2.0)}); });
  EXPECT_NE(two.find("'bottom'"), std::string::npos) << two;
  EXPECT_NE(two.find("'clamped'"), std::string::npos) << two;
}

TEST_P(Semantics, DirichletTagsWinOverAllAndMustAgreeWhereTheyMeet) {
  const auto one = [](const double*) { return 1.0; };
  const auto zero = [](const double*) { return 0.0; };
  const auto y = [](const double* x) { return x[1]; };
  const std::vector<Dirichlet> tag_first{{{left}, one, -1}, {FacetSet::all(), zero, -1}},
      all_first{{FacetSet::all(), zero, -1}, {{left}, one, -1}};
  const DirichletValues a = dirichlet_values(V(), tag_first), b = dirichlet_values(V(), all_first);
  EXPECT_EQ(a.dofs, b.dofs);
  EXPECT_EQ(a.values, b.values);
  const auto& x = V().dofmap().coordinates;
  for (std::size_t k = 0; k < a.dofs.size(); ++k)  // 1 on the left side, corners included
    EXPECT_EQ(a.values[k], x[2 * static_cast<std::size_t>(a.dofs[k])] == 0.0 ? 1.0 : 0.0);
  // left = 1 and bottom = 0 meet at (0, 0): refused, naming both.
  const std::string m = message_of([&] {
    dirichlet_values(V(), std::vector<Dirichlet>{{{left}, one, -1}, {{bottom}, zero, -1}});
  });
  EXPECT_NE(m.find("'left'"), std::string::npos) << m;
  EXPECT_NE(m.find("'bottom'"), std::string::npos) << m;
  EXPECT_NE(m.find("(0, 0)"), std::string::npos) << m;
  // left = y and bottom = 0 agree there; an interior interface may carry a condition.
  EXPECT_NO_THROW(dirichlet_values(V(), std::vector<Dirichlet>{{{left}, y, -1}, {{bottom}, zero, -1}}));
  EXPECT_FALSE(dirichlet_values(V(), std::vector<Dirichlet>{{{interface}, one, -1}}).dofs.empty());
}

TEST_P(Semantics, APerTagValueNeedsCellsAndACellTakesOneValue) {
  const Assembler a(V());
  auto matrix = [&](Coefficient k) {
    const fem::CsrMatrix A = a.matrix(Diffusion{std::move(k)});
    return std::vector<double>(A.values().begin(), A.values().end());
  };
  auto same = [](const std::vector<double>& x, const std::vector<double>& y) {
    double d = x.size() == y.size() ? 0.0 : 1.0;
    for (std::size_t i = 0; i < std::min(x.size(), y.size()); ++i) d = std::max(d, std::abs(x[i] - y[i]));
    return d < 1e-12;
  };
  // A value for 'plate' reaches every cell; 'soft' and 'plate' agreeing is one value.
  const auto three = matrix(Coefficient(3.0));
  EXPECT_TRUE(same(matrix(Coefficient::per_tag({{plate, 3.0}})), three));
  EXPECT_TRUE(same(matrix(Coefficient::per_tag({{soft, 3.0}, {plate, 3.0}})), three));
  // Per cell, the same as per tag.
  std::vector<double> per_cell;
  for (int t : mesh().cell_tags()) per_cell.push_back(mesh().in_group(2, t, soft) ? 1.0 : 2.0);
  EXPECT_TRUE(same(matrix(Coefficient::per_tag({{soft, 1.0}, {hard, 2.0}})),
                   matrix(Coefficient::per_cell(per_cell))));
  // Two values for the cells of 'soft' (through 'plate'): refused, naming both.
  const std::string two = message_of([&] { matrix(Coefficient::per_tag({{soft, 1.0}, {plate, 2.0}})); });
  EXPECT_NE(two.find("'soft'"), std::string::npos) << two;
  EXPECT_NE(two.find("'plate'"), std::string::npos) << two;
  // A tag no cell carries: refused, naming the groups present.
  const std::string unknown = message_of([&] { matrix(Coefficient::per_tag({{7, 2.0}}, 1.0)); });
  EXPECT_NE(unknown.find("7"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("'hard'"), std::string::npos) << unknown;
}

INSTANTIATE_TEST_SUITE_P(GmshFormats, Semantics, ::testing::Values("groups_v22.msh", "groups_v41.msh"),
                         [](const auto& info) { return std::string(info.param).substr(7, 3); });

}  // namespace
