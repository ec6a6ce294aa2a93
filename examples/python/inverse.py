"""Recover a diffusion coefficient from observations of the solution, by gradient descent
through assembly and the cached solve (fem.torch).

-div(k ∇u) = 1 on the unit square, u = 0 on the boundary. The unknown k is piecewise constant
on a 4 × 4 grid of patches; we observe u at every node (with k_true) and fit log k by Adam.
Every iteration assembles A(k), factorizes it (numeric only: the pattern's symbolic analysis is
made once, in the first iteration) and solves; the backward pass solves with the transpose of
that same factorization."""
import argparse

import numpy as np
import torch

import fem
import fem.torch as ft

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--n", type=int, default=32, help="cells per side (2n² triangles)")
parser.add_argument("--iterations", type=int, default=150)
args = parser.parse_args()

fem.generate_mesh(f"gen:square-tri3:{args.n}", "inverse/mesh")
V = fem.FunctionSpace("inverse/mesh", 1)
a = fem.Assembler(V)
bc = fem.DirichletBC(V, {"all": 0.0})
f = torch.from_numpy(a.vector(fem.Source(1.0)))

# Patch of each cell, from its centroid.
mesh = V.mesh
centroids = np.asarray(mesh.coordinates)[np.asarray(mesh.cells)].mean(axis=1)
patch = torch.from_numpy(np.minimum((centroids * 4).astype(int), 3) @ np.array([1, 4]))
rng = np.random.default_rng(0)
k_true = torch.from_numpy(np.exp(rng.uniform(-1.0, 1.0, 16)))


def solve(k_patches):
    values = ft.assemble(a, fem.Diffusion(), k_patches[patch])
    values, rhs = ft.dirichlet(values, f, a.pattern, bc)
    return ft.sparse_solve(values, rhs, a.pattern, key="inverse/A")


fem.store.reset_stats()
u_obs = solve(k_true).detach()  # the observations; the pattern's symbolic analysis is made here
log_k = torch.zeros(16, dtype=torch.float64, requires_grad=True)  # start from k = 1
optimizer = torch.optim.Adam([log_k], lr=0.1)
for it in range(args.iterations):
    optimizer.zero_grad()
    loss = ((solve(torch.exp(log_k)) - u_obs) ** 2).sum() / (u_obs**2).sum()
    loss.backward()
    optimizer.step()
    if it % 25 == 0 or it == args.iterations - 1:
        print(f"iteration {it:4d}  relative misfit {loss.item():.3e}")

error = (torch.exp(log_k) - k_true).abs().max() / k_true.abs().max()
c = fem.store.counters()
print(f"max error of k: {error.item():.2%}; {args.iterations} iterations and the observations: "
      f"factorizations: {c['solve.factorizations']}, symbolic analyses: {c['solve.symbolic_analyses']}")
assert error < 0.05, "the coefficient was not recovered"
assert c["solve.factorizations"] == args.iterations + 1 and c["solve.symbolic_analyses"] == 1
