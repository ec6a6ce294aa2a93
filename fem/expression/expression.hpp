// The expressions of the solver subcommands (--source, --dirichlet, --coefficient, ...):
// muparser parses and checks them once; its bytecode is then compiled into a program that
// evaluates many points per call, vectorised (glibc's vector math where the build has AVX2),
// which the assembly loops call once per batch of quadrature points.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>

#include "fem/assembly/forms.hpp"

namespace fem::expression {

/// The values a quantity may take, in words for messages ("must be positive").
struct Admissible {
  double lo = -std::numeric_limits<double>::infinity(), hi = std::numeric_limits<double>::infinity();
  bool lo_open = true, hi_open = true;
  std::string words;  ///< e.g. "must be positive"; empty: any finite value
  bool contains(double v) const noexcept {
    return (lo_open ? v > lo : v >= lo) && (hi_open ? v < hi : v <= hi);
  }
  static Admissible any() { return {}; }
  static Admissible positive(std::string what) {
    return {0.0, std::numeric_limits<double>::infinity(), true, true, what + " must be positive"};
  }
};

namespace detail {
class ExpressionProgram;
}

/// A muparser expression in x, y, z and t. Parsed and checked once at construction (a bad
/// expression, one that assigns to a variable, or a comma list of several values where this one
/// value belongs, is a fem::Error naming `option`, the text and, for a list, the count).
/// Evaluation runs muparser's bytecode compiled into a program over arrays of points: the same
/// arithmetic in the same order as muparser, with sin, cos, exp, log, ... from glibc's vector
/// math library (libmvec, at most 4 ulp from libm's) in builds with AVX2, so that every value
/// of an expression, at one point or in a batch, comes from the same code. Bytecode it does
/// not know (string functions, bulk callbacks) is evaluated by muparser itself, one parser per
/// thread. Either way the functions it makes may be called from OpenMP threads. Every value it
/// gives is checked where it is evaluated: NaN or infinite, or outside `admissible`, is a
/// fem::Error naming the option, the text, the value and the point (x, y, z, t). t is shared
/// by all copies and set with set_time() between assemblies.
class Expression {
 public:
  Expression(std::string option, std::string text, int gdim, Admissible admissible = {});
  const std::string& text() const noexcept { return state_->text; }
  const std::string& option() const noexcept { return state_->option; }
  void set_time(double t) const { state_->t.store(t); }
  /// The value at x (gdim coordinates; nullptr: a constant's value).
  double operator()(const double* x) const;
  /// The values at `count` points, x[i * gdim + d], into values[i].
  void evaluate(std::size_t count, const double* x, double* values) const;
  assembly::Function function() const;
  /// evaluate() as the assembly's batch function (assembly::Source::batch).
  assembly::BatchFunction batch_function() const;
  assembly::VectorFunction vector_function() const;
  /// A constant expression (no x, y, z, t) evaluated once, for per-tag coefficient values.
  bool is_constant() const noexcept { return state_->constant; }
  /// Whether it uses t.
  bool uses_time() const noexcept { return state_->uses_t; }
  /// Whether it runs as a compiled program (else through muparser, point by point).
  bool compiled() const noexcept { return state_->program != nullptr; }

 private:
  struct State {
    std::string option, text;
    int gdim = 2;
    std::uint64_t id = 0;
    std::atomic<double> t{0.0};
    bool constant = false;
    bool uses_t = false;
    Admissible admissible;
    std::shared_ptr<const detail::ExpressionProgram> program;
  };
  [[noreturn]] void reject(double value, const double* x, double t) const;
  double parse_and_evaluate(const double* x, double t) const;
  std::shared_ptr<State> state_;
};

/// A material law in u alone, such as a conductivity k(u) = 1 + u^2: a muparser expression in
/// u, parsed and checked once (a bad expression, or one that uses x, y, z or t, is a fem::Error
/// naming `option` and the text), evaluated by muparser one value at a time, one parser per
/// thread. Its derivative is a five-point central difference (relative error about 1e-11: enough
/// for Newton's Jacobian). A value that is NaN, infinite or outside `admissible` is a fem::Error
/// naming the option, the text, u and the value.
class Law {
 public:
  Law(std::string option, std::string text, Admissible admissible = {});
  const std::string& text() const noexcept { return state_->text; }
  double operator()(double u) const;
  double derivative(double u) const;

 private:
  struct State {
    std::string option, text;
    std::uint64_t id = 0;
    Admissible admissible;
  };
  double raw(double u) const;
  std::shared_ptr<const State> state_;
};

}  // namespace fem::expression
