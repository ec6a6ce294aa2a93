// Mesh checks by sorting (duplicate nodes, facet matching) and bounds of the Jacobian
// determinant over each whole cell (Bernstein coefficients); reorientation.
#include "fem/mesh/check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "fem/error.hpp"
#include "fem/lagrange.hpp"
#include "fem/reference_cell.hpp"

namespace fem::mesh {
namespace {

constexpr int kNumTypes = static_cast<int>(CellType::hex27) + 1;

// Reference gradients (n × dim) of the Lagrange basis of `type` at xi, into grad[n * dim]; hex27
// by tensor product of 1D quadratics (lagrange_eval has no hex27), using the reference node
// positions. Allocates nothing: check() calls it for every lattice point of every part.
void gradients(CellType type, const double* xi, double* grad) {
  if (type != CellType::hex27) {
    double phi[27];  // at most 27 nodes per cell
    lagrange_eval(type, xi, phi, grad);
    return;
  }
  double l[3][3], dl[3][3];
  for (int d = 0; d < 3; ++d) detail::line2(xi[d], l[d], dl[d]);
  const auto nodes = reference_nodes(type);
  auto idx = [](double t) { return t < -0.5 ? 0 : t > 0.5 ? 1 : 2; };
  for (int k = 0; k < 27; ++k) {
    const int i = idx(nodes[k][0]), j = idx(nodes[k][1]), m = idx(nodes[k][2]);
    grad[3 * k + 0] = dl[0][i] * l[1][j] * l[2][m];
    grad[3 * k + 1] = l[0][i] * dl[1][j] * l[2][m];
    grad[3 * k + 2] = l[0][i] * l[1][j] * dl[2][m];
  }
}

void gradients(CellType type, const double* xi, std::vector<double>& grad) {
  const auto& info = cell_info(type);
  grad.assign(static_cast<std::size_t>(info.num_nodes) * info.dim, 0.0);
  gradients(type, xi, grad.data());
}

// Gradients at the corners and the centre, per cell type, computed once.
const std::vector<std::vector<double>>& corner_gradients(CellType type) {
  static const auto table = [] {
    std::array<std::vector<std::vector<double>>, kNumTypes> t;
    for (int k = 1; k < kNumTypes; ++k) {
      const auto type = static_cast<CellType>(k);
      const auto& info = cell_info(type);
      const auto nodes = reference_nodes(type);
      std::array<double, 3> centre{0, 0, 0};
      for (int v = 0; v < info.num_vertices; ++v)
        for (int d = 0; d < 3; ++d) centre[d] += nodes[v][d] / info.num_vertices;
      for (int v = 0; v <= info.num_vertices; ++v) {
        const double* xi = v < info.num_vertices ? nodes[v].data() : centre.data();
        std::vector<double> g;
        gradients(type, xi, g);
        t[k].push_back(std::move(g));
      }
    }
    return t;
  }();
  return table[static_cast<std::size_t>(type)];
}

double determinant(const double* J, int gdim, int tdim) {  // J is gdim × tdim, row-major
  if (gdim == tdim) {
    if (tdim == 1) return J[0];
    if (tdim == 2) return J[0] * J[3] - J[1] * J[2];
    return J[0] * (J[4] * J[8] - J[5] * J[7]) - J[1] * (J[3] * J[8] - J[5] * J[6]) +
           J[2] * (J[3] * J[7] - J[4] * J[6]);
  }
  double G[9] = {};  // JᵀJ, tdim × tdim
  for (int a = 0; a < tdim; ++a)
    for (int b = 0; b < tdim; ++b)
      for (int d = 0; d < gdim; ++d) G[a * tdim + b] += J[d * tdim + a] * J[d * tdim + b];
  const double g = tdim == 1 ? G[0] : G[0] * G[3] - G[1] * G[2];
  return std::sqrt(std::max(g, 0.0));
}

double diameter(const Mesh& mesh, index_t c) {
  const auto v = mesh.cell(c);
  const int nv = mesh.cell_info().num_vertices, gdim = mesh.gdim();
  double h2 = 0;
  for (int a = 0; a < nv; ++a)
    for (int b = a + 1; b < nv; ++b) {
      double s = 0;
      for (int d = 0; d < gdim; ++d) {
        const double t = mesh.node(v[a])[d] - mesh.node(v[b])[d];
        s += t * t;
      }
      h2 = std::max(h2, s);
    }
  return std::sqrt(h2);
}

enum class Orientation { positive, inverted, degenerate, tangled };

// The sign of det J over a whole cell of full dimension (tdim == gdim), not only at its corners.
//
// det J is a polynomial on the reference cell: of degree d(p-1) on simplices (geometry order p:
// constant on tri3/tet4, quadratic on tri6, cubic on tet10) and of degree dp-1 in each variable on
// quadrilaterals and hexahedra (1 on quad4, 2 on hex8, 3 on quad9, 5 on hex27). Its values at
// the equispaced lattice of that degree (which includes the vertices and, for tri6, all six
// nodes) determine it, and a fixed linear map turns them into its coefficients in the Bernstein
// basis of that degree. The Bernstein basis is nonnegative and sums to one, so det J lies
// between the smallest and the largest coefficient everywhere in the cell, while the lattice
// values are values it takes. Hence, with tol = degenerate_tolerance × diameter^dim:
//   - values of both signs beyond ±tol: tangled (the map folds the cell), for certain;
//   - every coefficient above tol (below -tol): det J > tol (< -tol) in the whole cell, for certain;
//   - every coefficient within [-tol, tol]: |det J| ≤ tol in the whole part (a flat cell);
//   - else the cell is split (simplices into 2^d by their edge midpoints, boxes into 2^d boxes)
//     and each part is bounded the same way from the values at its own lattice, to kMaxDepth
//     levels and kMaxParts parts; parts still undecided then are judged by the values sampled
//     (det J has no sign change there and stays within a small fraction of its scale).
// A value with |det J| ≤ tol and no sign change makes the cell degenerate.
// Splitting stops as soon as the outcome is decided. Once a sampled |det J| ≤ tol, the cell is
// degenerate unless samples of both signs beyond ±tol turn up (tangled), so a part is split (or,
// bounded by its parent's coefficients, even evaluated) only when its coefficients allow a sign
// beyond ±tol that no sample has shown yet: a flat cell takes one evaluation of its lattice, not
// kMaxParts of them. Affine simplices (det J of degree 0, a constant) take one evaluation.
// (Johnen, Remacle, Geuzaine, "Geometrical validity of curvilinear finite elements", JCP 2013.)
constexpr int kMaxDepth = 6, kMaxParts = 4096;

bool is_simplex(CellType t) {
  return t == CellType::line2 || t == CellType::line3 || t == CellType::tri3 || t == CellType::tri6 ||
         t == CellType::tet4 || t == CellType::tet10;
}

// Dense inverse by Gauss-Jordan with partial pivoting (n ≤ 20; the matrices are well conditioned).
std::vector<double> inverse(std::vector<double> a, int n) {
  std::vector<double> inv(static_cast<std::size_t>(n) * n, 0.0);
  for (int i = 0; i < n; ++i) inv[i * n + i] = 1;
  for (int c = 0; c < n; ++c) {
    int p = c;
    for (int r = c + 1; r < n; ++r)
      if (std::abs(a[r * n + c]) > std::abs(a[p * n + c])) p = r;
    for (int k = 0; k < n; ++k) {
      std::swap(a[c * n + k], a[p * n + k]);
      std::swap(inv[c * n + k], inv[p * n + k]);
    }
    const double d = a[c * n + c];
    for (int k = 0; k < n; ++k) a[c * n + k] /= d, inv[c * n + k] /= d;
    for (int r = 0; r < n; ++r) {
      if (r == c || a[r * n + c] == 0) continue;
      const double f = a[r * n + c];
      for (int k = 0; k < n; ++k) a[r * n + k] -= f * a[c * n + k], inv[r * n + k] -= f * inv[c * n + k];
    }
  }
  return inv;
}

double binomial(int m, int k) {
  double b = 1;
  for (int i = 1; i <= k; ++i) b = b * (m - k + i) / i;
  return b;
}

// The lattice of det J's degree on a reference cell type and the map from values there to
// Bernstein coefficients. Simplex points are barycentric (d + 1 weights of the part's vertices),
// box points are per-axis fractions t ∈ [0, 1] of the part's extent.
struct Lattice {
  bool simplex = true;
  int dim = 0, degree = 0, size = 0;
  std::vector<std::array<double, 4>> weights;  ///< per point: barycentric (simplex) or t per axis (box)
  std::vector<double> to_bernstein;            ///< simplex: size × size; box: (degree+1)² along one axis
  std::vector<std::vector<double>> gradients;  ///< the geometry's gradients at the reference cell's lattice
};

// Reference coordinates of a lattice point in a part: simplex parts by their d + 1 vertices,
// box parts by {lo, hi}.
using Part = std::array<std::array<double, 3>, 4>;

std::array<double, 3> point_in(const Lattice& L, const Part& part, const std::array<double, 4>& w) {
  std::array<double, 3> x{0, 0, 0};
  for (int d = 0; d < L.dim; ++d)
    if (L.simplex) {
      for (int v = 0; v <= L.dim; ++v) x[d] += w[v] * part[v][d];
    } else {
      x[d] = part[0][d] + (part[1][d] - part[0][d]) * w[d];
    }
  return x;
}

Part reference_part(CellType type) {
  Part p{};
  const auto nodes = reference_nodes(type);
  const int dim = cell_info(type).dim;
  if (is_simplex(type)) {
    for (int v = 0; v <= dim; ++v) p[v] = nodes[v];
  } else {
    p[0] = {-1, -1, -1};
    p[1] = {1, 1, 1};
  }
  return p;
}

Lattice make_lattice(CellType type) {
  const auto& info = cell_info(type);
  Lattice L;
  L.simplex = is_simplex(type);
  L.dim = info.dim;
  const int d = info.dim, m = L.simplex ? d * (info.order - 1) : d * info.order - 1;
  L.degree = m;
  if (L.simplex) {
    // Multi-indices α, |α| = m, over d + 1 barycentric coordinates.
    std::vector<std::array<int, 4>> alpha;
    std::array<int, 4> a{0, 0, 0, 0};
    auto rec = [&](auto&& self, int k, int left) -> void {
      if (k == d) {
        a[d] = left;
        alpha.push_back(a);
        return;
      }
      for (int i = left; i >= 0; --i) {
        a[k] = i;
        self(self, k + 1, left - i);
      }
    };
    rec(rec, 0, m);
    L.size = static_cast<int>(alpha.size());
    for (const auto& al : alpha) {
      std::array<double, 4> w{0, 0, 0, 0};
      for (int v = 0; v <= d; ++v) w[v] = m == 0 ? 1.0 / (d + 1) : static_cast<double>(al[v]) / m;
      L.weights.push_back(w);
    }
    std::vector<double> A(static_cast<std::size_t>(L.size) * L.size);
    for (int i = 0; i < L.size; ++i)
      for (int j = 0; j < L.size; ++j) {
        double b = 1;  // m! / Π α_j! · Π λ^α_j
        int left = m;
        for (int v = 0; v <= d; ++v) {
          b *= binomial(left, alpha[j][v]) * std::pow(L.weights[i][v], alpha[j][v]);
          left -= alpha[j][v];
        }
        A[i * L.size + j] = b;
      }
    L.to_bernstein = inverse(std::move(A), L.size);
  } else {
    const int k = m + 1;
    L.size = 1;
    for (int i = 0; i < d; ++i) L.size *= k;
    for (int i = 0; i < L.size; ++i) {
      std::array<double, 4> w{0, 0, 0, 0};
      for (int a = 0, r = i; a < d; ++a, r /= k) w[a] = static_cast<double>(r % k) / m;
      L.weights.push_back(w);
    }
    std::vector<double> A(static_cast<std::size_t>(k) * k);
    for (int i = 0; i < k; ++i)
      for (int j = 0; j < k; ++j) {
        const double t = static_cast<double>(i) / m;
        A[i * k + j] = binomial(m, j) * std::pow(t, j) * std::pow(1 - t, m - j);
      }
    L.to_bernstein = inverse(std::move(A), k);
  }
  const Part root = reference_part(type);
  for (const auto& w : L.weights) {
    std::vector<double> g;
    gradients(type, point_in(L, root, w).data(), g);
    L.gradients.push_back(std::move(g));
  }
  return L;
}

const Lattice& lattice(CellType type) {
  static const auto table = [] {
    std::array<Lattice, kNumTypes> t;
    for (int k = 1; k < kNumTypes; ++k) t[k] = make_lattice(static_cast<CellType>(k));
    return t;
  }();
  return table[static_cast<std::size_t>(type)];
}

// Bernstein coefficients of the polynomial with values `s` at the lattice.
void bernstein(const Lattice& L, const std::vector<double>& s, std::vector<double>& b) {
  const int n = L.size;
  b.assign(n, 0.0);
  if (L.simplex) {
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) b[i] += L.to_bernstein[i * n + j] * s[j];
    return;
  }
  // Boxes: the 1D map along each axis in turn (a tensor product).
  const int k = L.degree + 1;
  b.assign(s.begin(), s.end());
  double line[8];  // k ≤ 6 (hex27: degree 5)
  for (int a = 0, stride = 1; a < L.dim; ++a, stride *= k)
    for (int i = 0; i < n; ++i) {
      if ((i / stride) % k != 0) continue;  // i: the first point of a line along axis a
      for (int r = 0; r < k; ++r) {
        line[r] = 0;
        for (int c = 0; c < k; ++c) line[r] += L.to_bernstein[r * k + c] * b[i + c * stride];
      }
      for (int r = 0; r < k; ++r) b[i + r * stride] = line[r];
    }
}

// The parts `p` splits into, written to out[0..7]; returns how many (2^dim).
int children(const Lattice& L, const Part& p, Part* out) {
  int count = 0;
  auto mid = [](const std::array<double, 3>& a, const std::array<double, 3>& b) {
    return std::array<double, 3>{(a[0] + b[0]) / 2, (a[1] + b[1]) / 2, (a[2] + b[2]) / 2};
  };
  if (!L.simplex) {
    for (int c = 0; c < (1 << L.dim); ++c) {
      Part q = p;
      for (int a = 0; a < L.dim; ++a) {
        const double m = (p[0][a] + p[1][a]) / 2;
        (c >> a & 1 ? q[0][a] : q[1][a]) = m;  // bit a of c: the upper or the lower half along axis a
      }
      out[count++] = q;
    }
    return count;
  }
  const auto& x = p;
  if (L.dim == 1) {
    const auto m = mid(x[0], x[1]);
    out[count++] = Part{{x[0], m}};
    out[count++] = Part{{m, x[1]}};
  } else if (L.dim == 2) {
    const auto m01 = mid(x[0], x[1]), m12 = mid(x[1], x[2]), m02 = mid(x[0], x[2]);
    out[count++] = Part{{x[0], m01, m02}};
    out[count++] = Part{{m01, x[1], m12}};
    out[count++] = Part{{m02, m12, x[2]}};
    out[count++] = Part{{m01, m12, m02}};
  } else {  // Bey's red refinement: four corner tetrahedra and the octahedron cut along m02-m13
    const auto m01 = mid(x[0], x[1]), m02 = mid(x[0], x[2]), m03 = mid(x[0], x[3]), m12 = mid(x[1], x[2]),
               m13 = mid(x[1], x[3]), m23 = mid(x[2], x[3]);
    out[count++] = Part{{x[0], m01, m02, m03}};
    out[count++] = Part{{m01, x[1], m12, m13}};
    out[count++] = Part{{m02, m12, x[2], m23}};
    out[count++] = Part{{m03, m13, m23, x[3]}};
    out[count++] = Part{{m01, m02, m03, m13}};
    out[count++] = Part{{m01, m02, m12, m13}};
    out[count++] = Part{{m02, m03, m13, m23}};
    out[count++] = Part{{m02, m12, m13, m23}};
  }
  return count;
}

// Classifies cells of one mesh, reusing its buffers.
class Classifier {
 public:
  Classifier(const Mesh& mesh, const CheckOptions& o) : mesh_(mesh), o_(o) {}

  Orientation operator()(index_t c) {
    const int tdim = mesh_.tdim(), gdim = mesh_.gdim();
    const double tol = o_.degenerate_tolerance * std::pow(diameter(mesh_, c), tdim);
    if (tdim < gdim) {  // cells in a higher-dimensional space: an unsigned measure, only its size
      for (double d : corner_determinants(mesh_, c))
        if (d <= tol) return Orientation::degenerate;
      return Orientation::positive;
    }
    const CellType type = mesh_.cell_type();
    const Lattice& L = lattice(type);
    const auto nodes = mesh_.cell(c);
    const int n = mesh_.nodes_per_cell();
    X_.resize(static_cast<std::size_t>(n) * gdim);
    for (int k = 0; k < n; ++k)
      for (int d = 0; d < gdim; ++d) X_[k * gdim + d] = mesh_.node(nodes[k])[d];
    if (L.degree == 0) {  // affine simplex: det J is a constant, one evaluation decides
      const double v = det_at(L.gradients[0].data());
      if (std::abs(v) <= tol) return Orientation::degenerate;
      return v < 0 ? Orientation::inverted : Orientation::positive;
    }
    double smin = INFINITY, smax = -INFINITY, min_abs = INFINITY;
    // Once a sample is within ±tol the cell is degenerate or, given samples beyond -tol and +tol,
    // tangled: a part whose det J lies within [lo, hi] matters only if it can show a sign beyond
    // ±tol that no sample has shown yet.
    const auto undecided = [&](double lo, double hi) {
      return min_abs > tol || (lo < -tol && !(smin < -tol)) || (hi > tol && !(smax > tol));
    };
    grad_.resize(static_cast<std::size_t>(n) * tdim);
    values_.resize(L.size);
    parts_.clear();
    parts_.push_back({reference_part(type), 0, -INFINITY, INFINITY});
    int processed = 0;
    while (!parts_.empty()) {
      const PartToDo todo = parts_.back();
      parts_.pop_back();
      if (!undecided(todo.lo, todo.hi)) continue;  // the parent's coefficients bound this part's
      for (int i = 0; i < L.size; ++i) {
        if (processed == 0) {
          values_[i] = det_at(L.gradients[i].data());
        } else {
          gradients(type, point_in(L, todo.part, L.weights[i]).data(), grad_.data());
          values_[i] = det_at(grad_.data());
        }
        smin = std::min(smin, values_[i]);
        smax = std::max(smax, values_[i]);
        min_abs = std::min(min_abs, std::abs(values_[i]));
      }
      ++processed;
      if (smin < -tol && smax > tol) return Orientation::tangled;
      bernstein(L, values_, coef_);
      const auto [bmin, bmax] = std::minmax_element(coef_.begin(), coef_.end());
      if (*bmin > tol || *bmax < -tol) continue;  // one sign on the whole part, away from zero
      if (*bmin >= -tol && *bmax <= tol) {        // |det J| ≤ tol on the whole part
        min_abs = std::min(min_abs, std::max(-*bmin, *bmax));
        continue;
      }
      if (!undecided(*bmin, *bmax)) continue;
      if (todo.depth == kMaxDepth || processed + static_cast<int>(parts_.size()) >= kMaxParts) continue;
      Part split[8];
      const int count = children(L, todo.part, split);
      for (int k = 0; k < count; ++k) parts_.push_back({split[k], todo.depth + 1, *bmin, *bmax});
    }
    if (min_abs <= tol) return Orientation::degenerate;
    return smax < 0 ? Orientation::inverted : Orientation::positive;
  }

 private:
  // A part still to be bounded, and the range of its parent's Bernstein coefficients, which
  // contains det J on it.
  struct PartToDo {
    Part part;
    int depth;
    double lo, hi;
  };

  double det_at(const double* g) const {
    const int tdim = mesh_.tdim(), gdim = mesh_.gdim(), n = mesh_.nodes_per_cell();
    double J[9] = {};
    for (int k = 0; k < n; ++k)
      for (int d = 0; d < gdim; ++d)
        for (int a = 0; a < tdim; ++a) J[d * tdim + a] += X_[k * gdim + d] * g[k * tdim + a];
    return determinant(J, gdim, tdim);
  }

  const Mesh& mesh_;
  const CheckOptions& o_;
  std::vector<double> X_, values_, coef_, grad_;
  std::vector<PartToDo> parts_;
};

// Vertex permutations that flip the orientation.
std::vector<int> mirror_vertices(CellType type) {
  switch (cell_info(type).dim) {
    case 1:
      return {1, 0};
    case 2:
      return cell_info(type).num_vertices == 3 ? std::vector<int>{0, 2, 1} : std::vector<int>{0, 3, 2, 1};
    case 3:
      return cell_info(type).num_vertices == 4 ? std::vector<int>{0, 2, 1, 3}
                                               : std::vector<int>{4, 5, 6, 7, 0, 1, 2, 3};
    default:
      return {0};
  }
}

// The vertex set each node of `type` belongs to (itself, its edge, its face, or all vertices),
// in Gmsh's node order (as reference_nodes builds it).
std::vector<std::vector<int>> node_vertex_sets(CellType type) {
  const auto& info = cell_info(type);
  std::vector<std::vector<int>> sets;
  for (int v = 0; v < info.num_vertices; ++v) sets.push_back({v});
  if (info.order == 1) return sets;
  for (const auto& e : local_edges(type)) sets.push_back({e[0], e[1]});
  if (type == CellType::line3) sets.resize(3);
  if (type == CellType::hex27) {
    const auto f = local_facets(type);
    for (int k = 0; k < f.count; ++k) sets.emplace_back(f[k].begin(), f[k].end());
  }
  if (type == CellType::quad9 || type == CellType::hex27) {
    sets.emplace_back(info.num_vertices);
    std::iota(sets.back().begin(), sets.back().end(), 0);
  }
  for (auto& s : sets) std::sort(s.begin(), s.end());
  return sets;
}

using FacetKey = std::array<index_t, 4>;

FacetKey facet_key(std::span<const index_t> vertices) {
  // insertion sort of at most 4 vertices (std::sort trips GCC 12's -Warray-bounds here)
  FacetKey k;
  k.fill(std::numeric_limits<index_t>::max());
  const std::size_t n = std::min<std::size_t>(vertices.size(), k.size());
  for (std::size_t i = 0; i < n; ++i) {
    const index_t x = vertices[i];
    std::size_t j = i;
    for (; j > 0 && k[j - 1] > x; --j) k[j] = k[j - 1];
    k[j] = x;
  }
  return k;
}

struct FacetEntry {
  FacetKey key;
  index_t cell;
  int local;
  bool operator<(const FacetEntry& o) const { return key < o.key; }
};

void find_duplicates(const Mesh& mesh, const CheckOptions& o, CheckReport& r) {
  const index_t n = mesh.num_nodes();
  const int gdim = mesh.gdim();
  const auto [lo, hi] = mesh.bounding_box();
  double diag = 0;
  for (int d = 0; d < gdim; ++d) diag += (hi[d] - lo[d]) * (hi[d] - lo[d]);
  diag = std::sqrt(diag);
  double tol = o.duplicate_tolerance * diag;
  // Cells of size tol: nodes within tol of each other lie in the same or neighbouring cells.
  const bool exact = !(tol > 0) || diag / tol > 1e15;
  std::vector<std::array<std::int64_t, 3>> key(n, {0, 0, 0});
  for (index_t i = 0; i < n; ++i)
    for (int d = 0; d < gdim; ++d) {
      const double x = mesh.node(i)[d];
      key[i][d] = exact ? 0 : static_cast<std::int64_t>(std::floor((x - lo[d]) / tol));
    }
  std::vector<index_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  auto less = [&](index_t a, index_t b) {
    if (key[a] != key[b]) return key[a] < key[b];
    if (exact)
      for (int d = 0; d < gdim; ++d)
        if (mesh.node(a)[d] != mesh.node(b)[d]) return mesh.node(a)[d] < mesh.node(b)[d];
    return a < b;
  };
  std::sort(order.begin(), order.end(), less);
  if (exact) {
    for (index_t k = 1; k < n; ++k) {
      const index_t a = order[k - 1], b = order[k];
      if (std::equal(mesh.node(a).begin(), mesh.node(a).end(), mesh.node(b).begin())) {
        // first of the run of equal nodes is the lowest index (ties sorted by index)
        index_t first = k - 1;
        while (first > 0 && std::equal(mesh.node(order[first - 1]).begin(), mesh.node(order[first - 1]).end(),
                                       mesh.node(b).begin()))
          --first;
        r.duplicate_nodes.emplace_back(b, order[first]);
      }
    }
  } else {
    std::vector<std::array<std::int64_t, 3>> sorted_keys(n);
    for (index_t k = 0; k < n; ++k) sorted_keys[k] = key[order[k]];
    const int reach[3] = {gdim > 0 ? 1 : 0, gdim > 1 ? 1 : 0, gdim > 2 ? 1 : 0};
    for (index_t i = 0; i < n; ++i) {
      index_t best = i;
      for (int dx = -reach[0]; dx <= reach[0]; ++dx)
        for (int dy = -reach[1]; dy <= reach[1]; ++dy)
          for (int dz = -reach[2]; dz <= reach[2]; ++dz) {
            const std::array<std::int64_t, 3> k{key[i][0] + dx, key[i][1] + dy, key[i][2] + dz};
            auto [b, e] = std::equal_range(sorted_keys.begin(), sorted_keys.end(), k);
            for (auto it = b; it != e; ++it) {
              const index_t j = order[it - sorted_keys.begin()];
              if (j >= best) continue;
              bool close = true;
              for (int d = 0; d < gdim && close; ++d)
                close = std::abs(mesh.node(i)[d] - mesh.node(j)[d]) <= tol;
              if (close) best = j;
            }
          }
      if (best != i) r.duplicate_nodes.emplace_back(i, best);
    }
  }
  std::sort(r.duplicate_nodes.begin(), r.duplicate_nodes.end());
}

void check_facets(const Mesh& mesh, CheckReport& r) {
  if (mesh.tdim() == 0) return;
  const auto lf = local_facets(mesh.cell_type());
  const index_t nc = mesh.num_cells();
  std::vector<FacetEntry> all;
  all.reserve(static_cast<std::size_t>(nc) * lf.count);
  std::vector<index_t> verts(lf.vertices_per_facet);
  for (index_t c = 0; c < nc; ++c) {
    const auto v = mesh.cell(c);
    for (int f = 0; f < lf.count; ++f) {
      for (int k = 0; k < lf.vertices_per_facet; ++k) verts[k] = v[lf[f][k]];
      all.push_back({facet_key(verts), c, f});
    }
  }
  std::sort(all.begin(), all.end());
  // run start and length of each entry's key
  std::vector<std::uint8_t> tagged(all.size(), 0);
  const int nvf = mesh.facet_info().num_vertices;
  for (index_t f = 0; f < mesh.num_facets(); ++f) {
    const auto key = facet_key(mesh.facet(f).first(nvf));
    auto it = std::lower_bound(all.begin(), all.end(), FacetEntry{key, 0, 0});
    if (it == all.end() || it->key != key) {
      r.stray_facets.push_back(f);
      continue;
    }
    if (std::next(it) != all.end() && std::next(it)->key == key) {
      r.tagged_interior_facets.push_back(f);
      continue;
    }
    tagged[it - all.begin()] = 1;
  }
  for (std::size_t k = 0; k < all.size();) {
    std::size_t e = k + 1;
    while (e < all.size() && all[e].key == all[k].key) ++e;
    if (e == k + 1) {
      ++r.boundary_facets;
      if (!tagged[k]) r.untagged_boundary_facets.push_back({all[k].cell, all[k].local});
    }
    k = e;
  }
  std::sort(r.untagged_boundary_facets.begin(), r.untagged_boundary_facets.end(),
            [](const CellFacet& a, const CellFacet& b) {
              return std::pair(a.cell, a.local) < std::pair(b.cell, b.local);
            });
}

template <class T, class F>
std::string first_few(const std::vector<T>& v, F show) {
  std::string s;
  for (std::size_t i = 0; i < std::min<std::size_t>(v.size(), 8); ++i) s += (i ? ", " : "") + show(v[i]);
  if (v.size() > 8) s += ", ...";
  return s;
}

}  // namespace

std::vector<double> corner_determinants(const Mesh& mesh, index_t c) {
  const int gdim = mesh.gdim(), tdim = mesh.tdim(), n = mesh.nodes_per_cell();
  if (tdim == 0) return {};
  const auto v = mesh.cell(c);
  const auto& grads = corner_gradients(mesh.cell_type());
  std::vector<double> out;
  out.reserve(grads.size());
  double J[9];
  for (const auto& g : grads) {
    std::fill(J, J + 9, 0.0);
    for (int k = 0; k < n; ++k) {
      const auto x = mesh.node(v[k]);
      for (int d = 0; d < gdim; ++d)
        for (int a = 0; a < tdim; ++a) J[d * tdim + a] += x[d] * g[k * tdim + a];
    }
    out.push_back(determinant(J, gdim, tdim));
  }
  return out;
}

std::span<const int> mirror_order(CellType type) {
  static const auto table = [] {
    std::array<std::vector<int>, kNumTypes> t;
    for (int k = 0; k < kNumTypes; ++k) {
      const auto type = static_cast<CellType>(k);
      if (type == CellType::point) {
        t[k] = {0};
        continue;
      }
      const auto p = mirror_vertices(type);
      const auto sets = node_vertex_sets(type);
      for (const auto& s : sets) {
        std::vector<int> old;
        for (int v : s) old.push_back(p[v]);
        std::sort(old.begin(), old.end());
        t[k].push_back(static_cast<int>(std::find(sets.begin(), sets.end(), old) - sets.begin()));
      }
    }
    return t;
  }();
  return table[static_cast<std::size_t>(type)];
}

CheckReport check(const Mesh& mesh, const CheckOptions& o) {
  CheckReport r;
  if (mesh.tdim() > 0) {
    Classifier classify(mesh, o);
    for (index_t c = 0; c < mesh.num_cells(); ++c) {
      const auto k = classify(c);
      if (k == Orientation::inverted) r.inverted.push_back(c);
      if (k == Orientation::degenerate) r.degenerate.push_back(c);
      if (k == Orientation::tangled) r.tangled.push_back(c);
    }
  }
  find_duplicates(mesh, o, r);
  std::vector<std::uint8_t> used(mesh.num_nodes(), 0);
  for (index_t v : mesh.cells()) used[v] = 1;
  for (index_t i = 0; i < mesh.num_nodes(); ++i)
    if (!used[i]) r.unreferenced_nodes.push_back(i);
  check_facets(mesh, r);
  return r;
}

std::string CheckReport::summary() const {
  auto idx = [](index_t i) { return std::to_string(i); };
  std::string s = ok() ? "ok" : "problems found";
  if (!untagged_boundary_facets.empty()) s += " (with warnings)";
  s += "\n";
  auto line = [&](const char* what, std::size_t n, const std::string& list) {
    s += fmt::format("  {:<26} {}{}\n", what, n, n ? "  [" + list + "]" : "");
  };
  line("inverted cells", inverted.size(), first_few(inverted, idx));
  line("degenerate cells", degenerate.size(), first_few(degenerate, idx));
  line("tangled cells", tangled.size(), first_few(tangled, idx));
  line("duplicate nodes", duplicate_nodes.size(),
       first_few(duplicate_nodes, [](auto p) { return fmt::format("{}={}", p.first, p.second); }));
  line("unreferenced nodes", unreferenced_nodes.size(), first_few(unreferenced_nodes, idx));
  line("tagged interior facets", tagged_interior_facets.size(), first_few(tagged_interior_facets, idx));
  line("tagged facets not in mesh", stray_facets.size(), first_few(stray_facets, idx));
  line("untagged boundary facets", untagged_boundary_facets.size(),
       first_few(untagged_boundary_facets,
                 [](CellFacet f) { return fmt::format("cell {} facet {}", f.cell, f.local); }));
  return s;
}

Mesh reorient(const Mesh& mesh, const CheckOptions& o) {
  Mesh::Data d = mesh.data();
  if (mesh.tdim() == 0 || mesh.tdim() < mesh.gdim()) return Mesh(std::move(d));
  const auto order = mirror_order(mesh.cell_type());
  const int n = mesh.nodes_per_cell();
  std::vector<index_t> tmp(n);
  // Only cells inverted everywhere: mirroring a tangled cell (det J of both signs) or a
  // degenerate one cannot make it valid, so they stay as they are for check() to report.
  Classifier classify(mesh, o);
  for (index_t c = 0; c < mesh.num_cells(); ++c) {
    if (classify(c) != Orientation::inverted) continue;
    const auto v = mesh.cell(c);
    for (int k = 0; k < n; ++k) tmp[k] = v[order[k]];
    std::copy(tmp.begin(), tmp.end(), d.cells.begin() + static_cast<std::size_t>(c) * n);
  }
  return Mesh(std::move(d));
}

}  // namespace fem::mesh
