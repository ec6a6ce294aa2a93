// A user's simulation code on top of the installed fem kernels: the heat equation
// u_t - Δu = 0 on the unit square, u = 0 on the boundary, by backward Euler.
//
// It puts its mesh in the store, writes its own element kernel (M + dt·K in one pass, through
// the assembly extension point), publishes the matrix under a key and runs many time steps with
// fem::solve on that key: one factorization, then cached solves. It checks the result against
// the exact decay of the first eigenmode, and that the factorization was computed only once.
//
//   ./heat [steps]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fem/assembly/assembly.hpp>
#include <fem/mesh/generate.hpp>
#include <fem/solve/solve.hpp>
#include <fem/store.hpp>
#include <numbers>

int main(int argc, char** argv) {
  using namespace fem::assembly;
  using std::numbers::pi;
  const int steps = argc > 1 ? std::atoi(argv[1]) : 50;
  const double t_end = 0.05, dt = t_end / steps;
  auto& store = fem::store();

  store.put("mesh/heat", fem::mesh::unit_square(fem::CellType::tri3, 64));
  const FunctionSpace V("mesh/heat", 1);
  const Assembler assembler(V);  // connectivity built once, cached in the store

  // The user's element kernel: (u, v) + dt (∇u, ∇v), assembled in one pass.
  auto backward_euler = [dt](const auto& cv, double* A) {
    for (int q = 0; q < cv.num_points; ++q)
      for (int i = 0; i < cv.n; ++i)
        for (int j = 0; j < cv.n; ++j) {
          const double* gi = cv.basis_grad(q, i);
          const double* gj = cv.basis_grad(q, j);
          double k = 0;
          for (int d = 0; d < cv.dim; ++d) k += gi[d] * gj[d];
          A[i * cv.n + j] += (cv.basis(q, i) * cv.basis(q, j) + dt * k) * cv.weight[q];
        }
  };
  std::vector<double> values(assembler.pattern()->nnz());
  assembler.matrix_into(backward_euler, 2, values);
  const auto bc = dirichlet_values(V, std::vector<Dirichlet>{{FacetSet::all(), nullptr}});
  std::vector<double> scratch(V.num_dofs(), 0.0);
  apply_dirichlet(bc, *assembler.pattern(), values, scratch);
  store.put("heat/A", fem::CsrMatrix(assembler.pattern(), std::move(values)));
  const fem::CsrMatrix mass = assembler.matrix(Mass{});

  auto u = interpolate(V, [](const double* x) { return std::sin(pi * x[0]) * std::sin(pi * x[1]); });
  std::vector<double> b(u.size());
  for (int s = 0; s < steps; ++s) {
    mass.multiply(u, b);
    set_dirichlet(bc, b);                // the constrained rows of A are the identity: b = 0 there
    u = fem::solve::solve("heat/A", b);  // factorized on the first step, cached afterwards
  }

  const double decay = std::exp(-2 * pi * pi * t_end);
  const auto err = errors(assembler, u, [decay](const double* x, double* v) {
    v[0] = decay * std::sin(pi * x[0]) * std::sin(pi * x[1]);
  });
  const auto factorizations = store.counter("solve.factorizations");
  const auto hits = store.counter("solve.cache_hits");
  std::printf("heat: %d steps, %d DOFs, L2 error %.3e, factorizations %lld, cache hits %lld\n", steps,
              V.num_dofs(), err.l2, static_cast<long long>(factorizations), static_cast<long long>(hits));
  // Backward Euler is first order in dt: the error is a few percent of the amplitude at most.
  const bool ok = err.l2 < 0.05 * decay && factorizations == 1 && hits == steps - 1;
  if (!ok) std::fprintf(stderr, "heat: check failed\n");
  return ok ? 0 : 1;
}
