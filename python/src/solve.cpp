// fem.solve / fem.solve_transpose through the store's factorization cache, and
// fem.Factorization, a handle on one factorization object (what fem.torch's backward uses).
#include "fem/solve/solve.hpp"

#include <pybind11/stl.h>

#include <functional>
#include <mutex>
#include <optional>

#include "common.hpp"

namespace fem::python {
namespace {

using solve::Factorization;

solve::Options options(const std::string& backend, const std::string& ordering, int refinement_steps,
                       double max_relative_residual) {
  solve::Options o;
  o.backend = solve::backend_from_name(backend, "backend");
  o.ordering = solve::ordering_from_name(ordering, "ordering");
  FEM_EXPECTS(!solve::distributed(o.backend),
              "backend '{}': a distributed solver (fem::dist), not one of this process", backend);
  FEM_EXPECTS(refinement_steps >= 0 && refinement_steps <= 100, "refinement_steps {}: 0 to 100",
              refinement_steps);
  FEM_EXPECTS(max_relative_residual > 0, "max_relative_residual {}: a positive number (inf: no check)",
              max_relative_residual);
  o.refinement_steps = refinement_steps;
  o.max_relative_residual = max_relative_residual;
  return o;
}

/// An (n, k) block of right-hand sides, column-major for the kernels.
struct RightHandSides {
  std::vector<double> values;  // column-major n × k
  index_t n = 0, k = 1;
};
RightHandSides right_hand_sides(const DoubleArray& b, index_t n, const char* what) {
  RightHandSides r;
  r.n = n;
  FEM_EXPECTS(b.ndim() == 2 && b.shape(0) == n, "{}: b must have shape ({},) or ({}, k), not {} dimensions",
              what, n, n, b.ndim());
  r.k = static_cast<index_t>(b.shape(1));
  r.values.resize(static_cast<std::size_t>(b.size()));
  for (index_t i = 0; i < n; ++i)
    for (index_t j = 0; j < r.k; ++j)
      r.values[static_cast<std::size_t>(j) * n + i] = b.data()[static_cast<std::size_t>(i) * r.k + j];
  return r;
}
py::array_t<double> solution(std::vector<double>&& x, const RightHandSides& r) {
  std::vector<double> rows(x.size());
  for (index_t i = 0; i < r.n; ++i)
    for (index_t j = 0; j < r.k; ++j)
      rows[static_cast<std::size_t>(i) * r.k + j] = x[static_cast<std::size_t>(j) * r.n + i];
  return to_numpy(std::move(rows), {r.n, r.k});
}

void check(const solve::SolveReport& report, const char* what) {
  if (!report.ok())
    throw NumericalError(fmt::format("{}: {} ({})", what, report.reason, solve::to_string(report.status)));
}

py::array_t<double> factor_solve(const Factorization& f, const DoubleArray& b, bool transpose) {
  const char* what = transpose ? "Factorization.solve_transpose" : "Factorization.solve";
  if (b.ndim() == 1) {  // one right-hand side: straight from the caller's array
    FEM_EXPECTS(b.shape(0) == f.size(), "{}: b has {} values, the matrix {} rows", what, b.shape(0),
                f.size());
    std::vector<double> x(static_cast<std::size_t>(f.size()));
    without_gil([&] { check(transpose ? f.solve_transpose(span_of(b), x) : f.solve(span_of(b), x), what); });
    return to_numpy(std::move(x));
  }
  RightHandSides r = right_hand_sides(b, f.size(), what);
  std::vector<double> x(r.values.size());
  without_gil([&] {
    const auto report = transpose ? f.solve_transpose(r.values, x, r.k) : f.solve(r.values, x, r.k);
    check(report, what);
  });
  return solution(std::move(x), r);
}

py::array_t<double> store_solve(const std::string& key, const DoubleArray& b, const solve::Options& o,
                                bool transpose) {
  Store& store = fem::store();
  if (b.ndim() == 1) {
    return to_numpy(without_gil([&] {
      return transpose ? solve::solve_transpose(store, key, span_of(b), o)
                       : solve::solve(store, key, span_of(b), o);
    }));
  }
  const index_t n = store.get<CsrMatrix>(key)->rows();
  RightHandSides r = right_hand_sides(b, n, transpose ? "solve_transpose" : "solve");
  std::vector<double> x = without_gil([&] {
    return transpose ? solve::solve_transpose_block(store, key, r.values, r.k, o)
                     : solve::solve_block(store, key, r.values, r.k, o);
  });
  return solution(std::move(x), r);
}

std::mutex& factorize_mutex(const std::string& key) {
  static std::mutex stripes[64];
  return stripes[std::hash<std::string>{}(key) % 64];
}

}  // namespace

void bind_solve(py::module_& m) {
  py::class_<Factorization, std::shared_ptr<Factorization>>(m, "Factorization", R"(One factorization object.

Holding it keeps it alive whatever happens to the store's entries: a newer version of the
matrix, an erase or an eviction never changes what it solves with. Its solves are thread-safe
and release the GIL.)")
      .def(
          "solve",
          [](const Factorization& f, py::handle b) {
            return factor_solve(f, real_array(b, "Factorization.solve: b"), false);
          },
          py::arg("b"), "x with A x = b; b of shape (n,) or (n, k).")
      .def(
          "solve_transpose",
          [](const Factorization& f, py::handle b) {
            return factor_solve(f, real_array(b, "Factorization.solve_transpose: b"), true);
          },
          py::arg("b"), "x with Aᵀ x = b from the same factors; b of shape (n,) or (n, k).")
      .def_property_readonly(
          "backend", [](const Factorization& f) { return std::string(solve::to_string(f.backend())); })
      .def_property_readonly(
          "ordering", [](const Factorization& f) { return std::string(solve::to_string(f.ordering())); })
      .def_property_readonly("size", &Factorization::size)
      .def_property_readonly("factor_nonzeros", &Factorization::factor_nonzeros)
      .def_property_readonly("bytes", &Factorization::bytes)
      .def_property_readonly("counts",
                             [](const Factorization& f) {
                               py::dict d;
                               d["symbolic_analyses"] = f.counts().symbolic_analyses;
                               d["factorizations"] = f.counts().factorizations;
                               d["refactorizations"] = f.counts().refactorizations;
                               return d;
                             })
      .def_property_readonly("log", &Factorization::log)
      .def("__repr__", [](const Factorization& f) {
        return fmt::format("<fem.Factorization {} of size {}, {} factor nonzeros>",
                           solve::to_string(f.backend()), f.size(), f.factor_nonzeros());
      });

  const auto solve_doc =
      "x with A x = b, A the matrix stored under key, through the store's cache: the symbolic "
      "analysis once per pattern, the numeric factorization once per version of the matrix. "
      "b of shape (n,) or (n, k).";
  m.def(
      "solve",
      [](const std::string& key, py::handle b, const std::string& backend, const std::string& ordering,
         int refinement_steps, double max_relative_residual) {
        return store_solve(key, real_array(b, "solve: b"),
                           options(backend, ordering, refinement_steps, max_relative_residual), false);
      },
      py::arg("key"), py::arg("b"), py::arg("backend") = "auto", py::arg("ordering") = "auto",
      py::arg("refinement_steps") = 0, py::arg("max_relative_residual") = 1e-6, solve_doc);
  m.def(
      "solve_transpose",
      [](const std::string& key, py::handle b, const std::string& backend, const std::string& ordering,
         int refinement_steps, double max_relative_residual) {
        return store_solve(key, real_array(b, "solve_transpose: b"),
                           options(backend, ordering, refinement_steps, max_relative_residual), true);
      },
      py::arg("key"), py::arg("b"), py::arg("backend") = "auto", py::arg("ordering") = "auto",
      py::arg("refinement_steps") = 0, py::arg("max_relative_residual") = 1e-6,
      "x with Aᵀ x = b from the same cached factorization.");
  m.def(
      "factorization",
      [](const std::string& key, const std::string& backend, const std::string& ordering) {
        const solve::Options o = options(backend, ordering, 0, 1e-6);
        return held(without_gil([&] { return solve::factorization(fem::store(), key, o); }));
      },
      py::arg("key"), py::arg("backend") = "auto", py::arg("ordering") = "auto",
      "The cached factorization of the matrix under key at its current version (made when missing).");
  m.def(
      "factorize",
      [](std::shared_ptr<CsrPattern> pattern, const DoubleArray& values, std::optional<std::string> key,
         const std::string& backend, const std::string& ordering,
         bool publish) -> std::shared_ptr<Factorization> {
        const solve::Options o = options(backend, ordering, 0, 1e-6);
        FEM_EXPECTS(static_cast<std::size_t>(values.size()) == pattern->nnz(),
                    "factorize: {} values, the pattern has {}", values.size(), pattern->nnz());
        FEM_EXPECTS(publish || !key, "factorize: key '{}' given with publish=False (nothing is published)",
                    key.value_or(""));
        const std::string k = key.value_or(fmt::format("fem.factorize/{:016x}", pattern->fingerprint()));
        auto matrix = std::make_shared<const CsrMatrix>(
            pattern, std::vector<double>(values.data(), values.data() + values.size()));
        if (!publish)  // a factorization of its own: the store is neither read nor written
          return held(without_gil(
              [&] { return std::shared_ptr<const Factorization>(solve::factorize(*matrix, o)); }));
        return held(without_gil([&] {
          // Another thread publishing under the same key between the put and the factorization
          // would hand this caller its matrix's factorization: the two steps are one per key.
          std::lock_guard lock(factorize_mutex(k));
          Store& store = fem::store();
          // The factorization of the previous values, recycled in place when nothing else holds it.
          auto retired = store.find<Factorization>(solve::factor_key(k, o));
          store.put<CsrMatrix>(k, std::move(matrix));
          return solve::factorization(store, k, std::move(retired), o);
        }));
      },
      py::arg("pattern"), py::arg("values"), py::arg("key") = py::none(), py::arg("backend") = "auto",
      py::arg("ordering") = "auto", py::arg("publish") = true,
      R"(The factorization of the matrix (pattern, values), made through the store: the values are published under
`key` (by default one key per pattern) and factorized there, so the pattern's symbolic analysis is reused and only
the numeric factorization is new. The previous values' factorization under that key is refactorized in place
(no allocation) when no handle holds it any more. The key holds the values given even when their factorization
fails (NumericalError): it is fem.factorize's own. publish=False: a private factorization, analysis included,
that leaves the store as it was (no key, no cache, no counters).)");
  m.def(
      "factor_key",
      [](const std::string& key, const std::string& backend, const std::string& ordering) {
        return solve::factor_key(key, options(backend, ordering, 0, 1e-6));
      },
      py::arg("key"), py::arg("backend") = "auto", py::arg("ordering") = "auto",
      "The store key of the cached factorization of key.");
  m.def(
      "backends",
      [] {
        std::vector<std::string> out;
        for (auto b : {solve::Backend::cholmod, solve::Backend::umfpack, solve::Backend::klu,
                       solve::Backend::ldlt, solve::Backend::lu})
          if (solve::available(b)) out.emplace_back(solve::to_string(b));
        return out;
      },
      "The backends this build has.");
}

}  // namespace fem::python
