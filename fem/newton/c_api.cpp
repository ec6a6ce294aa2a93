// The C ABI of libfem_newton (fem/newton/c_api.h): the library's nonlinear problems by key.
#include "fem/newton/c_api.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "fem/array.hpp"
#include "fem/assembly/assembler.hpp"
#include "fem/assembly/boundary.hpp"
#include "fem/assembly/detail/c_api.hpp"
#include "fem/assembly/forms.hpp"
#include "fem/detail/c_api_guard.hpp"
#include "fem/newton/assembled.hpp"
#include "fem/newton/newton.hpp"
#include "fem/store.hpp"

namespace {

using fem::capi::Callback;
using fem::capi::guarded;
using fem::capi::key_arg;
namespace assembly = fem::assembly;
namespace newton = fem::newton;

fem::newton::Options options_of(const fem_newton_options* o) {
  newton::Options s;
  if (o == nullptr) return s;
  FEM_EXPECTS(o->atol >= 0 && o->rtol >= 0, "Newton options: atol {} and rtol {} must be tolerances (>= 0)",
              o->atol, o->rtol);
  FEM_EXPECTS(o->max_iterations >= 1, "Newton options: max_iterations {} must be at least 1",
              o->max_iterations);
  FEM_EXPECTS(o->lag >= 1, "Newton options: lag {} must be at least 1 (1: full Newton)", o->lag);
  FEM_EXPECTS(o->line_search == FEM_LINE_SEARCH_NONE || o->line_search == FEM_LINE_SEARCH_BACKTRACKING,
              "Newton options: unknown line_search {} (FEM_LINE_SEARCH_NONE or _BACKTRACKING)",
              o->line_search);
  s.atol = o->atol;
  s.rtol = o->rtol;
  s.max_iterations = o->max_iterations;
  if (o->lag > 1) s.lagging = newton::Lagging::fixed(o->lag);
  s.line_search = o->line_search == FEM_LINE_SEARCH_BACKTRACKING ? newton::LineSearch::backtracking
                                                                 : newton::LineSearch::none;
  return s;
}

assembly::NonlinearForm form_of(const fem_newton_problem* p) {
  FEM_EXPECTS(p != nullptr, "fem_newton_solve: problem is a null pointer");
  const auto f = fem::capi::callback(&p->source, 0.0, "fem_newton_solve: the source f");
  switch (p->kind) {
    case FEM_NEWTON_BRATU:
      FEM_EXPECTS(std::isfinite(p->parameter), "fem_newton_solve: Bratu's λ is {}", p->parameter);
      FEM_EXPECTS(
          f->constant() && f->value() == 0.0,
          "fem_newton_solve: Bratu's problem -Δu = λ e^u has no source (give source.fn = NULL, value 0)");
      return assembly::bratu(p->parameter);
    case FEM_NEWTON_QUASILINEAR:
      return assembly::nonlinear_poisson(Callback::point(f));
    case FEM_NEWTON_P_LAPLACIAN:
      FEM_EXPECTS(std::isfinite(p->parameter) && p->parameter > 1,
                  "fem_newton_solve: the p-Laplacian needs p > 1, not {}", p->parameter);
      return assembly::p_laplacian(p->parameter, Callback::point(f));
    default:
      throw fem::InvalidArgument(fmt::format(
          "fem_newton_solve: unknown problem kind {} (FEM_NEWTON_BRATU, _QUASILINEAR or _P_LAPLACIAN)",
          p->kind));
  }
}

template <std::size_t N>
void copy_text(char (&out)[N], std::string_view text) {
  std::snprintf(out, N, "%.*s", static_cast<int>(text.size()), text.data());
}

}  // namespace

extern "C" {

int fem_newton_options_default(fem_newton_options* out) {
  return guarded([&] {
    FEM_EXPECTS(out != nullptr, "fem_newton_options_default: out is a null pointer");
    const newton::Options d;
    *out = fem_newton_options{d.atol, d.rtol, d.max_iterations, d.lagging.max_reuse,
                              d.line_search == newton::LineSearch::backtracking ? FEM_LINE_SEARCH_BACKTRACKING
                                                                                : FEM_LINE_SEARCH_NONE};
  });
}

int fem_newton_solve(const fem_space* space, const fem_newton_problem* problem, const int32_t* tags,
                     int32_t ntags, const fem_function* value, const char* u_key,
                     const fem_newton_options* options, fem_newton_result* result) {
  return guarded([&] {
    const char* name = "fem_newton_solve";
    const std::string key(key_arg(u_key, "u_key"));
    fem::Store::validate_key(key);
    fem::Store::validate_key(key + "/J");  // Newton's entries, named after it
    const newton::Options o = options_of(options);
    assembly::NonlinearForm form = form_of(problem);
    const auto assembler = std::make_shared<const assembly::Assembler>(fem::capi::space_of(space));
    const assembly::FunctionSpace& V = assembler->space();
    FEM_EXPECTS(V.components() == 1, "{}: the nonlinear problems need a scalar space, not {}", name,
                V.name());
    const assembly::DirichletValues bc = fem::capi::dirichlet_of(V, tags, ntags, value, -1, name);

    auto& store = fem::store();
    const auto n = static_cast<std::size_t>(V.num_dofs());
    std::vector<double> u(n, 0.0);
    if (const auto guess = store.find<fem::Array<double>>(key)) {
      FEM_EXPECTS(guess->ndim() == 1 && guess->size() == n,
                  "{}: the initial guess under '{}' has shape {}, the space {} has {} DOFs", name, key,
                  fem::shape_string(guess->shape()), V.name(), n);
      u = guess->vector();
      for (std::size_t i = 0; i < n; ++i)
        FEM_EXPECTS(std::isfinite(u[i]), "{}: the initial guess under '{}' is {} at DOF {}", name, key, u[i],
                    i);
    }
    assembly::set_dirichlet(bc, u);

    const newton::Problem p = newton::assembled_problem(assembler, std::move(form), bc, key, store);
    const newton::Result r = newton::solve(p, u, o);
    if (r.converged) store.put(key, fem::Array<double>(std::move(u)));
    if (result == nullptr) return;
    fem_newton_result out{};
    out.converged = r.converged ? 1 : 0;
    copy_text(out.reason, newton::to_string(r.reason));
    copy_text(out.message, r.message);
    out.iterations = r.iterations;
    out.jacobian_refreshes = r.jacobian_refreshes;
    out.symbolic_analyses = r.symbolic_analyses;
    out.initial_residual_norm = r.initial_residual_norm;
    out.residual_norm = r.residual_norm;
    *result = out;
  });
}

}  // extern "C"
