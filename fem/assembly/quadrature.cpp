// Quadrature tables. Gauss-Legendre nodes by Newton's method on the Legendre polynomials;
// simplices by the collapsed (Duffy) product of Gauss-Jacobi rules, with the classic optimal
// rules for the low degrees the common forms use (triangles up to 5, tetrahedra up to 2).
#include "fem/assembly/quadrature.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <numbers>

#include "fem/error.hpp"

namespace fem::assembly {

void gauss_legendre(int n, std::vector<double>& points, std::vector<double>& weights) {
  FEM_EXPECTS(n >= 1 && n <= 64, "Gauss-Legendre rule with {} points: 1..64 supported", n);
  points.assign(n, 0.0);
  weights.assign(n, 0.0);
  for (int i = 0; i < (n + 1) / 2; ++i) {
    double x = std::cos(std::numbers::pi * (i + 0.75) / (n + 0.5));
    double dp = 0;
    for (int it = 0; it < 100; ++it) {
      double p0 = 1, p1 = x;  // P_0, P_1
      for (int k = 2; k <= n; ++k) {
        const double p2 = ((2 * k - 1) * x * p1 - (k - 1) * p0) / k;
        p0 = p1;
        p1 = p2;
      }
      const double pn = n == 1 ? x : p1, pn1 = n == 1 ? 1.0 : p0;
      dp = n * (x * pn - pn1) / (x * x - 1);
      const double dx = pn / dp;
      x -= dx;
      if (std::abs(dx) < 1e-16) break;
    }
    points[i] = -x;
    points[n - 1 - i] = x;
    weights[i] = weights[n - 1 - i] = 2.0 / ((1 - x * x) * dp * dp);
  }
}

namespace {

Quadrature line_rule(int degree) {
  Quadrature q{CellType::line2, degree, 1, {}, {}};
  gauss_legendre(degree / 2 + 1, q.points, q.weights);
  return q;
}

Quadrature tensor_rule(CellType cell, int dim, int degree) {
  std::vector<double> x, w;
  gauss_legendre(degree / 2 + 1, x, w);
  const int m = static_cast<int>(x.size());
  Quadrature q{cell, degree, dim, {}, {}};
  const int total = dim == 2 ? m * m : m * m * m;
  for (int k = 0; k < total; ++k) {
    const int i = k % m, j = (k / m) % m, l = k / (m * m);
    q.points.push_back(x[i]);
    q.points.push_back(x[j]);
    if (dim == 3) q.points.push_back(x[l]);
    q.weights.push_back(w[i] * w[j] * (dim == 3 ? w[l] : 1.0));
  }
  return q;
}

// Gauss-Jacobi rule on [0, 1] for the weight (1 - x)^alpha, n points (exact to degree 2n - 1):
// Golub-Welsch, the eigenvalues and first eigenvector components of the Jacobi matrix of the
// Jacobi polynomials P^(alpha, 0), by the implicit QL method.
void gauss_jacobi(int n, int alpha, std::vector<double>& points, std::vector<double>& weights) {
  const double a = alpha;
  std::vector<double> d(n), e(n, 0.0), z(n, 0.0);  // diagonal, off-diagonal, first eigenvector row
  for (int k = 0; k < n; ++k) {
    const double s = 2.0 * k + a;
    d[k] = k == 0 ? -a / (a + 2) : -a * a / (s * (s + 2));
    if (k + 1 < n) {
      const double j = k + 1, t = 2 * j + a;
      e[k] = std::sqrt(4 * j * (j + a) * j * (j + a) / (t * t * (t + 1) * (t - 1)));
    }
  }
  std::vector<double> Z(static_cast<std::size_t>(n) * n, 0.0);
  for (int i = 0; i < n; ++i) Z[static_cast<std::size_t>(i) * n + i] = 1;
  for (int l = 0; l < n; ++l) {
    for (int iter = 0; iter < 60; ++iter) {
      int m = l;
      for (; m < n - 1; ++m)
        if (std::abs(e[m]) <= 1e-16 * (std::abs(d[m]) + std::abs(d[m + 1]))) break;
      if (m == l) break;
      double g = (d[l + 1] - d[l]) / (2 * e[l]);
      double r = std::hypot(g, 1.0);
      g = d[m] - d[l] + e[l] / (g + (g >= 0 ? r : -r));
      double sn = 1, c = 1, p = 0;
      int i = m - 1;
      for (; i >= l; --i) {
        double f = sn * e[i], b = c * e[i];
        r = std::hypot(f, g);
        e[i + 1] = r;
        if (r == 0) {
          d[i + 1] -= p;
          e[m] = 0;
          break;
        }
        sn = f / r, c = g / r;
        g = d[i + 1] - p;
        r = (d[i] - g) * sn + 2 * c * b;
        p = sn * r;
        d[i + 1] = g + p;
        g = c * r - b;
        for (int k = 0; k < n; ++k) {
          double& zi = Z[static_cast<std::size_t>(k) * n + i];
          double& zi1 = Z[static_cast<std::size_t>(k) * n + i + 1];
          f = zi1;
          zi1 = sn * zi + c * f;
          zi = c * zi - sn * f;
        }
      }
      if (r == 0 && i >= l) continue;
      d[l] -= p;
      e[l] = g;
      e[m] = 0;
    }
  }
  // ∫_{-1}^{1} (1 - t)^a dt = 2^(a+1) / (a + 1); x = (1 + t) / 2 scales the weights by 2^-(a+1).
  const double mu0 = std::pow(2.0, a + 1) / (a + 1), scale = std::pow(2.0, -(a + 1));
  std::vector<int> order(n);
  for (int i = 0; i < n; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](int x, int y) { return d[x] < d[y]; });
  points.resize(n);
  weights.resize(n);
  for (int k = 0; k < n; ++k) {
    const int i = order[k];
    points[k] = (1 + d[i]) / 2;
    weights[k] = mu0 * Z[i] * Z[i] * scale;  // Z[0 * n + i]: first component of eigenvector i
  }
}

// Collapsed rule: the square/cube [0,1]^d mapped onto the simplex, x = u, y = v(1-u),
// z = w(1-u)(1-v), with Jacobian (1-u)^(d-1) (1-v)^(d-2), carried by Gauss-Jacobi weights in u
// and v: exact to `degree` with degree/2 + 1 points per direction (8 for degree 3 on a tet,
// where Gauss-Legendre points would need 64).
Quadrature collapsed_rule(CellType cell, int dim, int degree) {
  const int m = degree / 2 + 1;
  std::vector<double> gu, wu, gv, wv, gw, ww;
  gauss_jacobi(m, dim - 1, gu, wu);
  gauss_jacobi(m, dim - 2, gv, wv);
  gauss_jacobi(m, 0, gw, ww);
  Quadrature q{cell, degree, dim, {}, {}};
  const int total = dim == 2 ? m * m : m * m * m;
  for (int k = 0; k < total; ++k) {
    const int i = k % m, j = (k / m) % m, l = k / (m * m);
    const double u = gu[i], v = gv[j], w = dim == 3 ? gw[l] : 0.0;
    q.points.push_back(u);
    q.points.push_back(v * (1 - u));
    if (dim == 3) q.points.push_back(w * (1 - u) * (1 - v));
    q.weights.push_back(wu[i] * wv[j] * (dim == 3 ? ww[l] : 1.0));
  }
  return q;
}

Quadrature triangle_rule(int degree) {
  if (degree <= 1) return {CellType::tri3, 1, 2, {1.0 / 3, 1.0 / 3}, {0.5}};
  if (degree == 2)
    return {CellType::tri3,
            2,
            2,
            {1.0 / 6, 1.0 / 6, 2.0 / 3, 1.0 / 6, 1.0 / 6, 2.0 / 3},
            {1.0 / 6, 1.0 / 6, 1.0 / 6}};
  // Symmetric rules: orbits of barycentric points (a, a, 1-2a), weights for the unit triangle.
  auto orbits = [](int deg, std::initializer_list<std::pair<double, double>> ab, double centre_weight) {
    Quadrature q{CellType::tri3, deg, 2, {}, {}};
    auto add = [&](double x, double y, double w) {
      q.points.push_back(x);
      q.points.push_back(y);
      q.weights.push_back(w);
    };
    if (centre_weight > 0) add(1.0 / 3, 1.0 / 3, centre_weight);
    for (const auto& [a, w] : ab) {
      add(a, a, w);
      add(1 - 2 * a, a, w);
      add(a, 1 - 2 * a, w);
    }
    return q;
  };
  if (degree <= 4)  // Strang-Fix / Dunavant, 6 points (the collapsed rule takes 16)
    return orbits(
        4,
        {{0.445948490915964886, 0.223381589678011466 / 2}, {0.091576213509770743, 0.109951743655321868 / 2}},
        0);
  if (degree == 5) {  // Radon's 7-point rule, in closed form
    const double r = std::sqrt(15.0);
    return orbits(5, {{(6 - r) / 21, (155 - r) / 2400}, {(6 + r) / 21, (155 + r) / 2400}}, 9.0 / 80);
  }
  return collapsed_rule(CellType::tri3, 2, degree);
}

Quadrature tetrahedron_rule(int degree) {
  if (degree <= 1) return {CellType::tet4, 1, 3, {0.25, 0.25, 0.25}, {1.0 / 6}};
  if (degree == 2) {
    const double a = 0.5854101966249685, b = 0.1381966011250105;
    return {
        CellType::tet4, 2, 3, {b, b, b, a, b, b, b, a, b, b, b, a}, {1.0 / 24, 1.0 / 24, 1.0 / 24, 1.0 / 24}};
  }
  return collapsed_rule(CellType::tet4, 3, degree);
}

Quadrature make_rule(CellType type, int degree) {
  switch (cell_info(type).dim) {
    case 1:
      return line_rule(degree);
    case 2:
      return cell_info(type).num_vertices == 3 ? triangle_rule(degree)
                                               : tensor_rule(CellType::quad4, 2, degree);
    case 3:
      return cell_info(type).num_vertices == 4 ? tetrahedron_rule(degree)
                                               : tensor_rule(CellType::hex8, 3, degree);
    default:
      return {CellType::point, degree, 0, {}, {1.0}};
  }
}

}  // namespace

const Quadrature& quadrature(CellType type, int degree) {
  FEM_EXPECTS(degree >= 0 && degree <= 30, "quadrature of degree {}: 0..30 supported", degree);
  static std::mutex mutex;
  static std::map<std::pair<int, int>, std::unique_ptr<const Quadrature>> cache;
  const std::pair<int, int> key{cell_info(type).dim * 10 + cell_info(type).num_vertices, degree};
  std::lock_guard lock(mutex);
  auto& slot = cache[key];
  if (!slot) slot = std::make_unique<const Quadrature>(make_rule(type, degree));
  return *slot;
}

}  // namespace fem::assembly
