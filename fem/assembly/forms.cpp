// Coefficients and the factories of the nonlinear forms.
#include "fem/assembly/forms.hpp"

#include <algorithm>
#include <cmath>

#include "fem/error.hpp"
#include "fem/mesh.hpp"

#if defined(FEM_HAVE_LIBMVEC) && defined(__AVX2__)
#include <immintrin.h>
// glibc's vector exp (libmvec, AVX2: four doubles, within 4 ulp), the function GCC calls for
// a vectorized exp under -ffast-math; called directly so the rest keeps IEEE semantics.
extern "C" __m256d _ZGVdN4v_exp(__m256d);
#endif

namespace fem::assembly {

Coefficient Coefficient::constant(double value, std::string_view what) {
  FEM_EXPECTS(std::isfinite(value), "{}: the value {} is not a finite number", what, value);
  return Coefficient(Kind::constant, value);
}

Coefficient Coefficient::per_cell(std::vector<double> values, std::string_view what) {
  for (std::size_t c = 0; c < values.size(); ++c)
    FEM_EXPECTS(std::isfinite(values[c]), "{}: the value of cell {} is {}", what, c, values[c]);
  Coefficient c(Kind::per_cell, 0.0);
  c.cells_ = std::make_shared<const std::vector<double>>(std::move(values));
  return c;
}

Coefficient Coefficient::per_tag(std::map<int, double> values, std::optional<double> otherwise,
                                 std::string_view what) {
  for (const auto& [tag, v] : values)
    FEM_EXPECTS(std::isfinite(v), "{}: the value of tag {} is {}", what, tag, v);
  FEM_EXPECTS(!otherwise || std::isfinite(*otherwise), "{}: the value of the other tags is {}", what,
              *otherwise);
  Coefficient c(Kind::per_tag, otherwise.value_or(0.0));
  c.tags_ = std::make_shared<const std::vector<std::pair<int, double>>>(values.begin(), values.end());
  c.has_fallback_ = otherwise.has_value();
  return c;
}

Coefficient Coefficient::function(Function f) {
  FEM_EXPECTS(f != nullptr, "a function coefficient needs a function");
  Coefficient c(Kind::function, 0.0);
  c.function_ = std::make_shared<const Function>(std::move(f));
  return c;
}

std::vector<int> Coefficient::tags() const {
  std::vector<int> out;
  if (kind_ == Kind::per_tag)
    for (const auto& [t, v] : *tags_) out.push_back(t);
  return out;
}

Coefficient Coefficient::resolved(const Mesh& mesh, const char* what) const {
  const auto cells = static_cast<std::size_t>(mesh.num_cells());
  if (kind_ == Kind::per_cell)
    FEM_EXPECTS(cells_->size() == cells, "{}: {} per-cell values for {} cells", what, cells_->size(), cells);
  if (kind_ != Kind::per_tag) return *this;
  const int dim = mesh.tdim();
  const auto value_of = [&](int tag) -> const double* {
    for (const auto& [t, v] : *tags_)
      if (t == tag) return &v;
    return nullptr;
  };
  const auto name = [&](int tag) {
    const auto n = mesh.name_of(dim, tag);
    return n.empty() ? fmt::format("{}", tag) : fmt::format("{} '{}'", tag, n);
  };
  // Every value for a group some cell is in (a part of a distributed mesh: checked on the whole).
  if (!mesh.tag_of(boundary_facets_name, dim - 1)) {
    const std::vector<int> present = mesh.tags(dim);
    for (const auto& [t, v] : *tags_)
      if (!std::binary_search(present.begin(), present.end(), t))
        throw InvalidArgument(fmt::format("{}: mesh '{}' has no cell in group {} (its cell tags: {})", what,
                                          mesh.source(), name(t), mesh.describe_tags(present, dim)));
  }
  // A set of groups takes the value its members give.
  Coefficient out = *this;
  auto values = std::make_shared<std::vector<std::pair<int, double>>>(*tags_);
  for (const TagSet& s : mesh.tag_sets()) {
    if (s.dim != dim) continue;
    const double* value = nullptr;
    int from = 0;
    for (int g : s.members) {
      const double* v = value_of(g);
      if (!v) continue;
      if (value && *value != *v)
        throw InvalidArgument(fmt::format(
            "{}: cells in the groups {} and {} of mesh '{}' are given two values, {:g} and {:g} (a cell in "
            "several groups takes one value: give them the same, or give it to one of them)",
            what, name(from), name(g), mesh.source(), *value, *v));
      value = v, from = g;
    }
    if (value) values->emplace_back(s.tag, *value);
  }
  out.tags_ = std::move(values);
  if (!has_fallback_) {
    const auto tags = mesh.cell_tags();
    for (std::size_t c = 0; c < tags.size(); ++c) {
      if (out.value_of_tag(tags[c])) continue;
      std::string given;
      for (const auto& [t, v] : *tags_) given += (given.empty() ? "" : ", ") + name(t);
      throw InvalidArgument(
          fmt::format("{}: cell {} is in group{} {}, which has no value (values given for {})", what, c,
                      tags[c] < 0 ? "s" : "", mesh.describe_tags(mesh.groups(dim, tags[c]), dim),
                      given.empty() ? "none" : given));
    }
  }
  return out;
}

Neumann Neumann::scalar(FacetSet where, Function g) {
  FEM_EXPECTS(g != nullptr, "a Neumann condition needs a flux function");
  return {std::move(where), [g = std::move(g)](const double* x, double* v) { v[0] = g(x); }};
}

namespace {

// y[q] = e^{x[q]} for q < n: four at a time where libmvec is available (Bratu's residual spends
// a third of its time in a scalar exp otherwise).
inline void exp_n(const double* x, double* y, int n) {
  int q = 0;
#if defined(FEM_HAVE_LIBMVEC) && defined(__AVX2__)
  for (; q + 4 <= n; q += 4) _mm256_storeu_pd(y + q, _ZGVdN4v_exp(_mm256_loadu_pd(x + q)));
  if (q < n) {
    double in[4] = {}, out[4];
    for (int k = q; k < n; ++k) in[k - q] = x[k];
    _mm256_storeu_pd(out, _ZGVdN4v_exp(_mm256_loadu_pd(in)));
    for (int k = q; k < n; ++k) y[k] = out[k - q];
    return;
  }
#endif
  for (; q < n; ++q) y[q] = std::exp(x[q]);
}

// The flux a = k·∇u of the quasilinear forms at one point (k = k(u), dk = k'(u)).
inline void linear_flux(double k, double dk, const double* g, int dim, double* a, double* da_du,
                        double* da_dg) {
  for (int d = 0; d < dim; ++d) {
    a[d] = k * g[d];
    da_du[d] = dk * g[d];
    for (int e = 0; e < dim; ++e) da_dg[d * dim + e] = d == e ? k : 0.0;
  }
}

// The p-Laplacian's flux (ε² + |∇u|²)^((p-2)/2) ∇u at one point.
inline void p_flux(double p, double eps2, const double* g, int dim, double* a, double* da_du, double* da_dg) {
  double g2 = eps2;
  for (int d = 0; d < dim; ++d) g2 += g[d] * g[d];
  const double m = std::pow(g2, 0.5 * (p - 2)), dm = (p - 2) * std::pow(g2, 0.5 * (p - 4));
  for (int d = 0; d < dim; ++d) {
    a[d] = m * g[d];
    da_du[d] = 0;
    for (int e = 0; e < dim; ++e) da_dg[d * dim + e] = (d == e ? m : 0.0) + dm * g[d] * g[e];
  }
}

// A source -f(x) as the reaction (no dependence on u).
inline void source_reaction(const Function& f, const double* x, int dim, double* s, double* ds_du,
                            double* ds_dg) {
  *s = f ? -f(x) : 0.0;
  *ds_du = 0;
  for (int d = 0; d < dim; ++d) ds_dg[d] = 0;
}

}  // namespace

NonlinearForm NonlinearForm::pointwise(Flux flux, Reaction reaction, bool uses_points) {
  FEM_EXPECTS(flux && reaction, "a nonlinear form needs a flux and a reaction");
  NonlinearForm form;
  form.uses_points = uses_points;
  form.integrand = [flux = std::move(flux), reaction = std::move(reaction)](
                       int points, int dim, const double* x, const double* u, const double* g, double* a,
                       double* da_du, double* da_dg, double* s, double* ds_du, double* ds_dg) {
    double scratch[3 + 9 + 1 + 3];  // the derivatives, when only values are wanted
    for (int q = 0; q < points; ++q) {
      const int v = q * dim;
      const double* xq = x ? x + v : nullptr;
      if (da_du) {
        flux(xq, u[q], g + v, dim, a + v, da_du + v, da_dg + v * dim);
        reaction(xq, u[q], g + v, dim, s + q, ds_du + q, ds_dg + v);
      } else {
        flux(xq, u[q], g + v, dim, a + v, scratch, scratch + 3);
        reaction(xq, u[q], g + v, dim, s + q, scratch + 12, scratch + 13);
      }
    }
  };
  return form;
}

NonlinearForm quasilinear(std::function<double(double)> k, std::function<double(double)> dk_du, Function f) {
  NonlinearForm form;
  form.integrand = [k, dk_du, f](int points, int dim, const double* x, const double* u, const double* g,
                                 double* a, double* da_du, double* da_dg, double* s, double* ds_du,
                                 double* ds_dg) {
    if (!da_du) {  // values only
      for (int q = 0; q < points; ++q) {
        const int v = q * dim;
        const double kq = k(u[q]);
        for (int d = 0; d < dim; ++d) a[v + d] = kq * g[v + d];
        s[q] = f ? -f(x + v) : 0.0;
      }
      return;
    }
    for (int q = 0; q < points; ++q) {
      const int v = q * dim;
      linear_flux(k(u[q]), dk_du(u[q]), g + v, dim, a + v, da_du + v, da_dg + v * dim);
      source_reaction(f, x ? x + v : nullptr, dim, s + q, ds_du + q, ds_dg + v);
    }
  };
  form.uses_points = f != nullptr;
  return form;
}

NonlinearForm nonlinear_poisson(Function f) {
  return quasilinear([](double v) { return 1.0 + v * v; }, [](double v) { return 2.0 * v; }, std::move(f));
}

NonlinearForm bratu(double lambda) {
  NonlinearForm form;
  form.integrand = [lambda](int points, int dim, const double*, const double* u, const double* g, double* a,
                            double* da_du, double* da_dg, double* s, double* ds_du, double* ds_dg) {
    exp_n(u, s, points);
    for (int q = 0; q < points; ++q) s[q] *= -lambda;
    for (int q = 0; q < points * dim; ++q) a[q] = g[q];
    if (!da_du) return;  // values only
    for (int q = 0; q < points; ++q) ds_du[q] = s[q];
    for (int q = 0; q < points * dim; ++q) da_du[q] = ds_dg[q] = 0;
    for (int q = 0; q < points; ++q)
      for (int d = 0; d < dim; ++d)
        for (int e = 0; e < dim; ++e) da_dg[(q * dim + d) * dim + e] = d == e ? 1.0 : 0.0;
  };
  form.uses_points = false;
  return form;
}

NonlinearForm p_laplacian(double p, Function f, double epsilon) {
  FEM_EXPECTS(p > 1, "the p-Laplacian needs p > 1, not {}", p);
  NonlinearForm form;
  const double eps2 = epsilon * epsilon;
  form.integrand = [p, eps2, f](int points, int dim, const double* x, const double*, const double* g,
                                double* a, double* da_du, double* da_dg, double* s, double* ds_du,
                                double* ds_dg) {
    double scratch[3 + 9];  // the derivatives, when only values are wanted
    for (int q = 0; q < points; ++q) {
      const int v = q * dim;
      if (da_du) {
        p_flux(p, eps2, g + v, dim, a + v, da_du + v, da_dg + v * dim);
        source_reaction(f, x ? x + v : nullptr, dim, s + q, ds_du + q, ds_dg + v);
      } else {
        p_flux(p, eps2, g + v, dim, a + v, scratch, scratch + 3);
        s[q] = f ? -f(x + v) : 0.0;
      }
    }
  };
  form.uses_points = f != nullptr;
  return form;
}

}  // namespace fem::assembly
