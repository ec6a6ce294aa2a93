// Coefficients and the factories of the nonlinear forms.
#include "fem/assembly/forms.hpp"

#include <cmath>

#include "fem/error.hpp"

namespace fem::assembly {

Coefficient Coefficient::per_cell(std::vector<double> values) {
  Coefficient c;
  c.kind_ = Kind::per_cell;
  c.cells_ = std::make_shared<const std::vector<double>>(std::move(values));
  return c;
}

Coefficient Coefficient::per_tag(std::map<int, double> values, std::optional<double> otherwise) {
  Coefficient c;
  c.kind_ = Kind::per_tag;
  c.tags_ = std::make_shared<const std::vector<std::pair<int, double>>>(values.begin(), values.end());
  c.has_fallback_ = otherwise.has_value();
  c.value_ = otherwise.value_or(0.0);
  return c;
}

Coefficient Coefficient::function(Function f) {
  FEM_EXPECTS(f != nullptr, "a function coefficient needs a function");
  Coefficient c;
  c.kind_ = Kind::function;
  c.function_ = std::make_shared<const Function>(std::move(f));
  return c;
}

void Coefficient::check(std::span<const int> cell_tags, const char* what) const {
  if (kind_ == Kind::per_cell)
    FEM_EXPECTS(cells_->size() == cell_tags.size(), "{}: {} per-cell values for {} cells", what, cells_->size(),
                cell_tags.size());
  if (kind_ == Kind::per_tag && !has_fallback_) {
    for (std::size_t c = 0; c < cell_tags.size(); ++c) {
      bool found = false;
      for (const auto& [t, v] : *tags_) found = found || t == cell_tags[c];
      if (!found) {
        std::string given;
        for (const auto& [t, v] : *tags_) given += (given.empty() ? "" : ", ") + std::to_string(t);
        throw InvalidArgument(fmt::format("{}: cell {} has tag {}, which has no value (values given for tags {})",
                                          what, c, cell_tags[c], given.empty() ? "none" : given));
      }
    }
  }
}

Neumann Neumann::scalar(std::vector<int> tags, Function g) {
  FEM_EXPECTS(g != nullptr, "a Neumann condition needs a flux function");
  return {std::move(tags), [g = std::move(g)](const double* x, double* v) { v[0] = g(x); }};
}

NonlinearForm quasilinear(std::function<double(double)> k, std::function<double(double)> dk_du, Function f) {
  NonlinearForm form;
  form.flux = [k, dk_du](const double*, double u, const double* g, int dim, double* a, double* da_du, double* da_dg) {
    const double ku = k(u), dku = dk_du(u);
    for (int d = 0; d < dim; ++d) {
      a[d] = ku * g[d];
      da_du[d] = dku * g[d];
      for (int e = 0; e < dim; ++e) da_dg[d * dim + e] = d == e ? ku : 0.0;
    }
  };
  form.reaction = [f](const double* x, double, const double*, int dim, double* s, double* ds_du, double* ds_dg) {
    *s = f ? -f(x) : 0.0;
    *ds_du = 0;
    for (int d = 0; d < dim; ++d) ds_dg[d] = 0;
  };
  return form;
}

NonlinearForm bratu(double lambda) {
  NonlinearForm form = quasilinear([](double) { return 1.0; }, [](double) { return 0.0; }, nullptr);
  form.reaction = [lambda](const double*, double u, const double*, int dim, double* s, double* ds_du, double* ds_dg) {
    const double e = std::exp(u);
    *s = -lambda * e;
    *ds_du = -lambda * e;
    for (int d = 0; d < dim; ++d) ds_dg[d] = 0;
  };
  return form;
}

NonlinearForm p_laplacian(double p, Function f, double epsilon) {
  FEM_EXPECTS(p > 1, "the p-Laplacian needs p > 1, not {}", p);
  NonlinearForm form = quasilinear([](double) { return 1.0; }, [](double) { return 0.0; }, std::move(f));
  form.flux = [p, eps2 = epsilon * epsilon](const double*, double, const double* g, int dim, double* a, double* da_du,
                                            double* da_dg) {
    double g2 = eps2;
    for (int d = 0; d < dim; ++d) g2 += g[d] * g[d];
    const double m = std::pow(g2, 0.5 * (p - 2)), dm = (p - 2) * std::pow(g2, 0.5 * (p - 4));
    for (int d = 0; d < dim; ++d) {
      a[d] = m * g[d];
      da_du[d] = 0;
      for (int e = 0; e < dim; ++e) da_dg[d * dim + e] = (d == e ? m : 0.0) + dm * g[d] * g[e];
    }
  };
  return form;
}

}  // namespace fem::assembly
