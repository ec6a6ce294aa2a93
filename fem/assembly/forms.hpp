// The library's forms: diffusion, mass and linear elasticity (bilinear), sources and Neumann
// fluxes (linear), and quasilinear residual/Jacobian pairs for nonlinear problems. Each is a
// small description; the Assembler turns it into an inlined element kernel.
#pragma once

#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fem/csr.hpp"

namespace fem {
class Mesh;
}

namespace fem::assembly {

/// A scalar function of position: x has as many coordinates as the mesh.
using Function = std::function<double(const double* x)>;
/// A function of position with one value per component, written to `value`.
using VectorFunction = std::function<void(const double* x, double* value)>;
/// A scalar function at `count` points in one call: x holds count × (coordinates of the mesh)
/// values, point after point, and f(point i) goes to values[i]. Assembly loops gather many
/// quadrature points for one call, so an interpreted or vectorised function pays its dispatch
/// once per batch instead of once per point.
using BatchFunction = std::function<void(std::size_t count, const double* x, double* values)>;

/// A coefficient: constant, one value per cell, one value per cell tag, or a function of x.
class Coefficient {
 public:
  enum class Kind { constant, per_cell, per_tag, function };

  /// Every value a coefficient is given is checked once, here, for every front end: NaN or ±∞ is
  /// an InvalidArgument naming `what`, the value and where it was given (cell, tag).
  Coefficient(double value = 1.0)  // NOLINT: implicit from a number
      : Coefficient(constant(value)) {}
  static Coefficient constant(double value, std::string_view what = "coefficient");
  static Coefficient per_cell(std::vector<double> values, std::string_view what = "coefficient");
  /// Tags without a value take `otherwise`; without it, a cell tag missing from `values` is an
  /// error when the form is assembled.
  static Coefficient per_tag(std::map<int, double> values, std::optional<double> otherwise = std::nullopt,
                             std::string_view what = "coefficient");
  static Coefficient function(Function f);

  Kind kind() const noexcept { return kind_; }
  bool varies_in_cell() const noexcept { return kind_ == Kind::function; }
  double operator()(index_t cell, int tag, const double* x) const {
    switch (kind_) {
      case Kind::constant:
        return value_;
      case Kind::per_cell:
        return (*cells_)[cell];
      case Kind::per_tag:
        return tag_value(tag);
      case Kind::function:
        return (*function_)(x);
    }
    return value_;
  }
  /// The coefficient as assembly on `mesh` uses it, checked once for every front end (docs/
  /// semantics.md): per-cell values, one per cell; per-tag values, each for a cell group of the
  /// mesh (an InvalidArgument naming the tag and the groups present otherwise; a part of a
  /// distributed mesh leaves that to check_cell_tags with its layout), and a cell in several
  /// groups takes the value of the ones that have one, which must agree (an InvalidArgument naming
  /// both groups otherwise). Without a fallback, a cell none of whose groups has a value is an
  /// InvalidArgument naming it.
  Coefficient resolved(const Mesh& mesh, const char* what) const;
  /// The tags given a value (per-tag coefficients; none otherwise).
  std::vector<int> tags() const;

 private:
  double tag_value(int tag) const {
    const double* v = value_of_tag(tag);
    return v ? *v : value_;
  }
  const double* value_of_tag(int tag) const {
    for (const auto& [t, v] : *tags_)
      if (t == tag) return &v;
    return nullptr;
  }
  Coefficient(Kind kind, double value) : kind_(kind), value_(value) {}
  Kind kind_;
  double value_ = 0;  // the constant, or the per-tag fallback
  bool has_fallback_ = true;
  std::shared_ptr<const std::vector<double>> cells_;
  std::shared_ptr<const std::vector<std::pair<int, double>>> tags_;
  std::shared_ptr<const Function> function_;
};

/// -div(k grad u): ∫ k ∇u·∇v.
struct Diffusion {
  Coefficient k = 1.0;
};

/// ∫ rho u·v (every component of a vector space).
struct Mass {
  Coefficient rho = 1.0;
};

/// Linear elasticity: ∫ σ(u):ε(v), σ = λ tr(ε) I + 2μ ε, from Young's modulus E and Poisson's
/// ratio nu. Needs a space with one component per dimension. In 2D `plane` picks plane strain
/// (εzz = 0: λ = Eν/((1+ν)(1−2ν)), the default) or plane stress (σzz = 0: λ* = 2λμ/(λ+2μ) =
/// Eν/(1−ν²) replaces λ, μ = E/(2(1+ν)) unchanged); 3D cells ignore it.
struct Elasticity {
  enum class Plane { strain, stress };
  Coefficient young = 1.0;
  Coefficient poisson = 0.3;
  Plane plane = Plane::strain;
};

/// ∫ f v (scalar spaces). With `batch` set (the same function as `f`, point by point), the
/// assembly evaluates f through it, a few hundred quadrature points per call.
struct Source {
  Function f;
  BatchFunction batch = nullptr;
};

/// ∫ f·v with f one value per component (e.g. a body force).
struct VectorSource {
  VectorFunction f;
};

/// Facets picked by physical group (a facet in any of `tags`, once, boundary or interior), or
/// the whole boundary: every boundary facet, tagged or not, once, and no interior facet.
struct FacetSet {
  std::vector<int> tags;
  bool whole_boundary = false;
  FacetSet() = default;
  FacetSet(std::initializer_list<int> groups) : tags(groups) {}   // NOLINT: {left, top}
  FacetSet(std::vector<int> groups) : tags(std::move(groups)) {}  // NOLINT
  static FacetSet all() {
    FacetSet s;
    s.whole_boundary = true;
    return s;
  }
  static FacetSet tagged(std::vector<int> tags) { return FacetSet(std::move(tags)); }
  /// "all" or "'left' (tag 4)", "tags 4 'left', 5": what a message calls it.
  std::string describe(const Mesh& mesh) const;
};

/// ∫_Γ g·v over the boundary facets `where` (g: one value per component).
struct Neumann {
  FacetSet where;
  VectorFunction g;
  /// A scalar flux on scalar spaces.
  static Neumann scalar(FacetSet where, Function g);
};

/// A quasilinear form F(u; v) = ∫ a(x, u, ∇u)·∇v + s(x, u, ∇u) v on a scalar space: enough for
/// -div((1 + u²)∇u) = f, Bratu's -Δu = λ e^u and the p-Laplacian. One description: the
/// integrand, which gives a and s, and the derivatives the Jacobian needs, at many quadrature
/// points per call (the assembly gathers about 48: an interpreted or vectorised form pays its
/// dispatch once per call). A form written one point at a time becomes one through pointwise().
struct NonlinearForm {
  /// a, s and their derivatives at `points` points in one call: x[q·dim + d] (nullptr when
  /// !uses_points), u[q], grad_u[q·dim + d]; out: a and da_du [q·dim + d], da_dg [(q·dim + d)·dim
  /// + e] = ∂a_d/∂(∇u)_e, s and ds_du [q], ds_dg [q·dim + d]. For a residual alone da_du, da_dg,
  /// ds_du and ds_dg are nullptr: only a and s are wanted.
  using Integrand =
      std::function<void(int points, int dim, const double* x, const double* u, const double* grad_u,
                         double* a, double* da_du, double* da_dg, double* s, double* ds_du, double* ds_dg)>;
  /// One point's flux a (and da_du, da_dg) or reaction s (and ds_du, ds_dg), for pointwise().
  using Flux = std::function<void(const double* x, double u, const double* grad_u, int dim, double* a,
                                  double* da_du, double* da_dg)>;
  using Reaction = std::function<void(const double* x, double u, const double* grad_u, int dim, double* s,
                                      double* ds_du, double* ds_dg)>;

  Integrand integrand;
  /// Whether the integrand reads x; false spares computing the quadrature points.
  bool uses_points = true;
  /// Quadrature degree; by default 2·(degree of the space) + 2.
  std::optional<int> quadrature_degree;

  /// The form of a flux and a reaction given one point at a time (called point after point).
  static NonlinearForm pointwise(Flux flux, Reaction reaction, bool uses_points = true);
};

/// -div(k(u) ∇u) = f with k and dk/du given.
NonlinearForm quasilinear(std::function<double(double)> k, std::function<double(double)> dk_du, Function f);
/// The nonlinear Poisson problem of the drivers and the C and Python interfaces:
/// -div((1 + u²)∇u) = f, quasilinear() with k = 1 + u².
NonlinearForm nonlinear_poisson(Function f);
/// Bratu: -Δu = λ e^u.
NonlinearForm bratu(double lambda);
/// p-Laplacian: -div((ε² + |∇u|²)^((p-2)/2) ∇u) = f (ε regularises the flat spots).
NonlinearForm p_laplacian(double p, Function f, double epsilon = 1e-6);

}  // namespace fem::assembly
