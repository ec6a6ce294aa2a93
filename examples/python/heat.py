"""The heat equation of ./run.sh from Python: u_t = Δu on a plate with a hole held at 1, the left
and right edges at 0. Backward Euler: (M + dt K) u_next = M u, one factorization, 50 cached solves."""
import numpy as np

import fem

fem.read_mesh("meshes/plate_hole_v41.msh", "plate")
V = fem.FunctionSpace("plate", 1)
a = fem.Assembler(V)
M, K = a.matrix(fem.Mass()), a.matrix(fem.Diffusion())
dt = 0.01
bc = fem.DirichletBC(V, {"hole": 1.0, "left": 0.0, "right": 0.0})
A, lift = bc.apply(M.with_values(M.data + dt * K.data))  # lift: what the conditions add to every b
fem.store.put("heat/A", A)
u = np.zeros(V.num_dofs)
for step in range(50):
    u = fem.solve("heat/A", bc.zero(M @ u) + lift)
assert -1e-12 <= u.min() and u.max() <= 1 + 1e-12, "maximum principle"
print(f"u in [{u.min():.4f}, {u.max():.4f}] after 50 steps; "
      f"{fem.store.counter('solve.factorizations')} factorization, {fem.store.counter('solve.solves')} solves")
