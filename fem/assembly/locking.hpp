// Volumetric locking: when the displacement of a degree-1 elasticity space (P1, Q1) is not an
// answer. For every front end (the fem elasticity driver's warning, Python's).
//
// Why and when. The elastic energy is 2μ‖ε(u)‖² + λ‖div u‖². As ν → ½, λ/μ = 2ν/(1 − 2ν) → ∞
// and the energy penalizes div u. A nearly incompressible body deforms with div u ≈ 0, but a
// degree-1 displacement cannot follow such a field: its interpolant of a smooth u, off by
// O(h |u|₂) ≈ O((h/L) |u|₁) in the gradient (h the cell size, L the size of the body over which u
// varies), has a divergence of that size, which costs λ (h/L)² |u|₁² against the 2μ |u|₁² of the
// deformation itself. The discrete solution trades the two: scaled by α, it minimizes
// μ(1 − α)² + λ c (h/L)² α², so α ≈ 1/(1 + c θ) with
//
//     θ = (λ/μ) · (h/L)²
//
// the locking indicator. θ ≪ 1: degree 1 converges as usual; θ ≳ 1: the answer is too stiff by a
// factor that refinement removes only as h², and in the limit ν → ½ not at all (every θ is large:
// the displacement converges to a wrong, "locked" field). Measured on a square pulled at one side
// and clamped at the other (P1 on N × N right triangles, h the longest edge, L the diagonal, so
// h/L = 1/N; P2 on the finest mesh as the reference), the error that locking adds to P1's is the
// locked error times cθ/(1 + cθ) with c ≈ 2 (ν = 0.45 ... 0.499, N = 4 ... 32): at θ = ½ half of
// it is there. Hence the rule, with two conditions:
//
//   - λ/μ > 10 (ν > 5/11 ≈ 0.455 in plane strain and 3D): the volumetric term can dominate the
//     energy at all. Plane stress never locks (σzz = 0 lets the thickness change: λ* / μ =
//     2ν/(1 − ν) < 2), and neither do ordinary materials on coarse meshes (ν = 0.3 on a mesh of a
//     cell or two has θ ≈ 1, but its error is the mesh's, not the material's);
//   - θ > ½: at least half the locked error is in the answer.
//
// h is the longest cell edge (the coarsest cells lock first), L the diagonal of the body's
// bounding box, λ/μ the largest over the cells (at their centres for a coefficient in x). P2 and
// Q2 displacements do not lock in this way; the mixed u–p formulation (mixed.hpp, Flow::up_elasticity)
// is the cure for degree 1.
#pragma once

#include <string>

#include "fem/assembly/forms.hpp"
#include "fem/assembly/space.hpp"
#include "fem/layout.hpp"

namespace fem::assembly {

struct Locking {
  static constexpr double kLambdaOverMu = 10.0;  ///< λ/μ above which the volumetric term can dominate
  static constexpr double kIndicator = 0.5;      ///< θ above which the answer is locked

  double lambda_over_mu = 0;  ///< the largest λ/μ (λ*/μ in plane stress) over the cells
  double h_over_L = 0;        ///< the longest cell edge over the diagonal of the body
  double indicator = 0;       ///< θ = λ/μ · (h/L)²
  int degree = 0;             ///< the space's
  bool locks = false;         ///< degree 1 and both thresholds exceeded

  /// The warning in words, pointing to degree 2 (empty unless locks).
  std::string warning() const;
};

/// The locking indicator of `material` on V (one component per dimension), over the whole mesh:
/// collective over the processes of `layout`. Coefficients are checked as assembly checks them.
Locking locking(const FunctionSpace& V, const Elasticity& material, const Layout& layout = Layout::serial());

}  // namespace fem::assembly
