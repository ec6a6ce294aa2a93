#!/usr/bin/python3
"""The FEniCSx tutorial's projection scheme (J. S. Dokken, "Test problem 2: Flow past a cylinder
(DFG 2D-3 benchmark)", DOLFINx 0.5) on this repository's DFG mesh, for the side-by-side timing of
docs/flow.md ("Against DOLFINx"). Not part of the test suite: DOLFINx is no dependency of the
project (Debian: apt-get install python3-dolfinx).

The scheme and its solvers are the tutorial's: Taylor–Hood P2–P1, incremental pressure
correction with the convection semi-implicit (Adams–Bashforth velocity advecting the
Crank–Nicolson one), so the tentative-velocity matrix is reassembled every step and solved by
BiCGStab + Jacobi; the pressure correction by MINRES + BoomerAMG, the velocity correction by
CG + SOR. The flow is DFG 2D-2 (U_max = 1.5, ν = 10⁻³, ρ = 1) from rest, as bench/flow's.

  taskset -c 1 python3 bench/flow/dolfinx_ipcs.py meshes/dfg_cylinder_v41.msh 5e-4 400

The mesh is read by the fem Python module (build/python on PYTHONPATH, or the installed
package) and handed to DOLFINx as coordinates and cells; its boundaries are found by position.
Prints the seconds per step (after 20 warm-up steps), the drag and lift at the end.
"""
import sys
import time

import numpy as np
import ufl
from dolfinx import fem as dfem
from dolfinx import mesh as dmesh
from dolfinx.fem.petsc import (apply_lifting, assemble_matrix, assemble_vector, create_matrix,
                               create_vector, set_bc)
from mpi4py import MPI
from petsc4py import PETSc

import fem

path, dt, steps = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
warmup = 20
m = fem.read_mesh(path)
x = np.ascontiguousarray(np.asarray(m.coordinates)[:, :2], dtype=np.float64)
cells = np.ascontiguousarray(np.asarray(m.cells), dtype=np.int64)
domain = ufl.Mesh(ufl.VectorElement("Lagrange", ufl.triangle, 1))
mesh = dmesh.create_mesh(MPI.COMM_WORLD, cells, x, domain)

L, H, c_x, c_y, r = 2.2, 0.41, 0.2, 0.2, 0.05
tdim = mesh.topology.dim
fdim = tdim - 1
mesh.topology.create_connectivity(fdim, tdim)
inlet = dmesh.locate_entities_boundary(mesh, fdim, lambda p: np.isclose(p[0], 0.0))
outlet = dmesh.locate_entities_boundary(mesh, fdim, lambda p: np.isclose(p[0], L))
walls = dmesh.locate_entities_boundary(mesh, fdim, lambda p: np.isclose(p[1], 0.0) | np.isclose(p[1], H))
obstacle = dmesh.locate_entities_boundary(
    mesh, fdim, lambda p: (p[0] - c_x) ** 2 + (p[1] - c_y) ** 2 < (1.5 * r) ** 2)

V = dfem.FunctionSpace(mesh, ufl.VectorElement("Lagrange", mesh.ufl_cell(), 2))
Q = dfem.FunctionSpace(mesh, ufl.FiniteElement("Lagrange", mesh.ufl_cell(), 1))
k = dfem.Constant(mesh, PETSc.ScalarType(dt))
mu = dfem.Constant(mesh, PETSc.ScalarType(1e-3))
rho = dfem.Constant(mesh, PETSc.ScalarType(1.0))
u_max = 1.5


def inflow(p):
    v = np.zeros((2, p.shape[1]), dtype=PETSc.ScalarType)
    v[0] = 4 * u_max * p[1] * (H - p[1]) / H ** 2
    return v


u_inlet = dfem.Function(V)
u_inlet.interpolate(inflow)
u_zero = np.array((0.0, 0.0), dtype=PETSc.ScalarType)
bcu = [dfem.dirichletbc(u_inlet, dfem.locate_dofs_topological(V, fdim, inlet)),
       dfem.dirichletbc(u_zero, dfem.locate_dofs_topological(V, fdim, walls), V),
       dfem.dirichletbc(u_zero, dfem.locate_dofs_topological(V, fdim, obstacle), V)]
bcp = [dfem.dirichletbc(PETSc.ScalarType(0), dfem.locate_dofs_topological(Q, fdim, outlet), Q)]

u, v = ufl.TrialFunction(V), ufl.TestFunction(V)
p, q = ufl.TrialFunction(Q), ufl.TestFunction(Q)
u_, u_s, u_n, u_n1 = dfem.Function(V), dfem.Function(V), dfem.Function(V), dfem.Function(V)
p_, phi = dfem.Function(Q), dfem.Function(Q)
f = dfem.Constant(mesh, PETSc.ScalarType((0, 0)))

# Step 1: the tentative velocity (the tutorial's forms).
F1 = rho / k * ufl.dot(u - u_n, v) * ufl.dx
F1 += ufl.inner(ufl.dot(1.5 * u_n - 0.5 * u_n1, 0.5 * ufl.nabla_grad(u + u_n)), v) * ufl.dx
F1 += 0.5 * mu * ufl.inner(ufl.grad(u + u_n), ufl.grad(v)) * ufl.dx - ufl.dot(p_, ufl.div(v)) * ufl.dx
F1 += ufl.dot(f, v) * ufl.dx
a1, L1 = dfem.form(ufl.lhs(F1)), dfem.form(ufl.rhs(F1))
A1, b1 = create_matrix(a1), create_vector(L1)
# Step 2: the pressure correction.
a2 = dfem.form(ufl.dot(ufl.grad(p), ufl.grad(q)) * ufl.dx)
L2 = dfem.form(-rho / k * ufl.dot(ufl.div(u_s), q) * ufl.dx)
A2 = assemble_matrix(a2, bcs=bcp)
A2.assemble()
b2 = create_vector(L2)
# Step 3: the velocity correction.
a3 = dfem.form(rho * ufl.dot(u, v) * ufl.dx)
L3 = dfem.form(rho * ufl.dot(u_s, v) * ufl.dx - k * ufl.dot(ufl.nabla_grad(phi), v) * ufl.dx)
A3 = assemble_matrix(a3)
A3.assemble()
b3 = create_vector(L3)


def ksp(A, kind, pc, hypre=None):
    s = PETSc.KSP().create(mesh.comm)
    s.setOperators(A)
    s.setType(kind)
    s.getPC().setType(pc)
    if hypre:
        s.getPC().setHYPREType(hypre)
    return s


solver1 = ksp(A1, PETSc.KSP.Type.BCGS, PETSc.PC.Type.JACOBI)
solver2 = ksp(A2, PETSc.KSP.Type.MINRES, PETSc.PC.Type.HYPRE, "boomeramg")
solver3 = ksp(A3, PETSc.KSP.Type.CG, PETSc.PC.Type.SOR)


def rhs(b, L, a=None, bcs=()):
    with b.localForm() as loc:
        loc.set(0)
    assemble_vector(b, L)
    if a is not None:
        apply_lifting(b, [a], [bcs])
    b.ghostUpdate(addv=PETSc.InsertMode.ADD_VALUES, mode=PETSc.ScatterMode.REVERSE)
    if bcs:
        set_bc(b, bcs)


def step():
    A1.zeroEntries()
    assemble_matrix(A1, a1, bcs=bcu)
    A1.assemble()
    rhs(b1, L1, a1, bcu)
    solver1.solve(b1, u_s.vector)
    u_s.x.scatter_forward()
    rhs(b2, L2, a2, bcp)
    solver2.solve(b2, phi.vector)
    phi.x.scatter_forward()
    p_.vector.axpy(1, phi.vector)
    p_.x.scatter_forward()
    rhs(b3, L3)
    solver3.solve(b3, u_.vector)
    u_.x.scatter_forward()
    with u_.vector.localForm() as a, u_n.vector.localForm() as b, u_n1.vector.localForm() as c:
        b.copy(c)
        a.copy(b)


print(f"dolfinx: {V.dofmap.index_map.size_global * 2 + Q.dofmap.index_map.size_global} DOFs "
      f"({len(inlet)}, {len(outlet)}, {len(walls)}, {len(obstacle)} inlet, outlet, wall, cylinder facets)")
for _ in range(warmup):
    step()
start = time.perf_counter()
for _ in range(steps):
    step()
seconds = time.perf_counter() - start
print(f"dolfinx: {steps} steps of dt = {dt}: {seconds:.3f} s, {1e3 * seconds / steps:.2f} ms a step; "
      f"max |u| {np.abs(u_.x.array).max():.4f}, p in [{p_.x.array.min():.4f}, {p_.x.array.max():.4f}]")
