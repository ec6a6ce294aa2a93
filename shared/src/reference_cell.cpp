// Reference-cell topology tables (Gmsh conventions; see docs/ARCHITECTURE.md).
#include "fem/reference_cell.hpp"

namespace fem {
namespace {

constexpr std::array<std::array<int, 2>, 1> kLineEdges{{{0, 1}}};
constexpr std::array<std::array<int, 2>, 3> kTriEdges{{{0, 1}, {1, 2}, {2, 0}}};
constexpr std::array<std::array<int, 2>, 4> kQuadEdges{{{0, 1}, {1, 2}, {2, 3}, {3, 0}}};
constexpr std::array<std::array<int, 2>, 6> kTetEdges{{{0, 1}, {1, 2}, {2, 0}, {3, 0}, {3, 2}, {3, 1}}};
constexpr std::array<std::array<int, 2>, 12> kHexEdges{
    {{0, 1}, {0, 3}, {0, 4}, {1, 2}, {1, 5}, {2, 3}, {2, 6}, {3, 7}, {4, 5}, {4, 7}, {5, 6}, {6, 7}}};

constexpr int kLineFacets[] = {0, 1};
constexpr int kTriFacets[] = {0, 1, 1, 2, 2, 0};
constexpr int kQuadFacets[] = {0, 1, 1, 2, 2, 3, 3, 0};
constexpr int kTetFacets[] = {0, 2, 1, 0, 1, 3, 0, 3, 2, 1, 2, 3};
constexpr int kHexFacets[] = {0, 3, 2, 1, 0, 1, 5, 4, 0, 4, 7, 3, 1, 2, 6, 5, 2, 3, 7, 6, 4, 5, 6, 7};

}  // namespace

std::span<const std::array<int, 2>> local_edges(CellType type) {
  switch (type) {
    case CellType::line2:
    case CellType::line3:
      return kLineEdges;
    case CellType::tri3:
    case CellType::tri6:
      return kTriEdges;
    case CellType::quad4:
    case CellType::quad9:
      return kQuadEdges;
    case CellType::tet4:
    case CellType::tet10:
      return kTetEdges;
    case CellType::hex8:
    case CellType::hex27:
      return kHexEdges;
    default:
      return {};
  }
}

LocalFacets local_facets(CellType type) {
  switch (type) {
    case CellType::line2:
    case CellType::line3:
      return {2, 1, kLineFacets};
    case CellType::tri3:
    case CellType::tri6:
      return {3, 2, kTriFacets};
    case CellType::quad4:
    case CellType::quad9:
      return {4, 2, kQuadFacets};
    case CellType::tet4:
    case CellType::tet10:
      return {4, 3, kTetFacets};
    case CellType::hex8:
    case CellType::hex27:
      return {6, 4, kHexFacets};
    default:
      return {};
  }
}

}  // namespace fem
