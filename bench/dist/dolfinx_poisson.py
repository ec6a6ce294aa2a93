"""DOLFINx 0.5.2 counterpart of bench_dist.cpp: the same phases of a distributed P1 Poisson run,
-div(k grad u) = 1 with u = 0 on the whole boundary, on the same PETSc solvers.

  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 mpirun -np 2 /usr/bin/python3 \
      bench/dist/dolfinx_poisson.py --mesh square --n 1024 [--json out.json]
  OMP_NUM_THREADS=1 mpirun -np 2 /usr/bin/python3 bench/dist/dolfinx_poisson.py --mesh cube --n 125 --no-direct

(/usr/bin/python3: Debian's python3-dolfinx and python3-petsc4py.) Phases, each timed as the slowest
rank after a barrier, peak_MB the largest ru_maxrss of any rank so far:
  distribute       create_unit_square/cube (DOLFINx builds, partitions and distributes the mesh)
  connectivity     FunctionSpace + create_matrix (sparsity and preallocation) + boundary DOFs
                   (facets, exterior facets, locate_dofs_topological, dirichletbc)
  first_assembly   matrix (k = 1) and right-hand side (assemble_vector, apply_lifting, set_bc)
  reassembly       matrix only, k = 1 + version/10 as a Constant: zeroEntries, assemble, assemble()
  rhs              the right-hand side alone (bench_dist's re-assembly includes it)
  mumps_*          preonly + Cholesky (MUMPS): setUp, setUp after a new assembly, solve
  gamg_*           CG + GAMG, rtol 1e-8 on the true (unpreconditioned) residual norm
Form JIT compilation (FFCx + C compiler) is excluded: it is done on a tiny mesh before any timing,
and the forms on the benchmark mesh are built (a JIT cache hit) between two timed pieces.
Unlike bench_dist, the PETSc matrix and its preallocation belong to connectivity here.
"""
import argparse
import json
import resource
import time

import ufl
from dolfinx import fem
from dolfinx.fem import petsc as fp
from dolfinx.mesh import CellType, create_unit_cube, create_unit_square, exterior_facet_indices
from mpi4py import MPI
from petsc4py import PETSc

comm = MPI.COMM_WORLD
parser = argparse.ArgumentParser()
parser.add_argument("--mesh", choices=["square", "cube"], default="square")
parser.add_argument("--n", type=int, default=1024)
parser.add_argument("--no-direct", action="store_true", help="skip MUMPS")
parser.add_argument("--json", help="also write the table to this file")
args = parser.parse_args()
rows = []


def timed(f, reps=1):
    """Mean over reps of the slowest rank's time of f(); returns (seconds, last result)."""
    total, out = 0.0, None
    for _ in range(reps):
        comm.Barrier()
        t0 = time.perf_counter()
        out = f()
        total += comm.allreduce(time.perf_counter() - t0, op=MPI.MAX)
    return total / reps, out


def record(phase, seconds, dofs=0, **extra):
    peak = comm.allreduce(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6, op=MPI.MAX)
    rows.append(dict(phase=phase, ms=1e3 * seconds, dofs_per_s=dofs / seconds if dofs else None,
                     peak_MB=peak, **extra))


def make_mesh(n):
    if args.mesh == "square":
        return create_unit_square(comm, n, n, CellType.triangle)
    return create_unit_cube(comm, n, n, n, CellType.tetrahedron)


def forms(V, k):
    u, v = ufl.TrialFunction(V), ufl.TestFunction(V)
    f = fem.Constant(V.mesh, PETSc.ScalarType(1.0))
    return (fem.form(k * ufl.inner(ufl.grad(u), ufl.grad(v)) * ufl.dx), fem.form(f * v * ufl.dx))


def new_k(V):
    return fem.Constant(V.mesh, PETSc.ScalarType(1.0))


# JIT (excluded): compile the element and both forms once on a tiny mesh; later calls hit the cache.
t0 = time.perf_counter()
V0 = fem.FunctionSpace(make_mesh(2), ("Lagrange", 1))
forms(V0, new_k(V0))
jit = comm.allreduce(time.perf_counter() - t0, op=MPI.MAX)

t, msh = timed(lambda: make_mesh(args.n))
record("distribute", t, cells=msh.topology.index_map(msh.topology.dim).size_global)

t1, V = timed(lambda: fem.FunctionSpace(msh, ("Lagrange", 1)))
k = new_k(V)
t_forms, (a, L) = timed(lambda: forms(V, k))  # cache hit, not counted


def sparsity_and_bcs():
    tdim = msh.topology.dim
    A = fp.create_matrix(a)
    msh.topology.create_connectivity(tdim - 1, tdim)
    dofs = fem.locate_dofs_topological(V, tdim - 1, exterior_facet_indices(msh.topology))
    return A, fem.dirichletbc(PETSc.ScalarType(0), dofs, V), fp.create_vector(L)


t2, (A, bc, b) = timed(sparsity_and_bcs)
ndofs = V.dofmap.index_map.size_global
record("connectivity", t1 + t2, ndofs)

version = 0


def assemble_matrix():
    global version
    k.value = 1 + 0.1 * version
    version += 1
    A.zeroEntries()
    fp.assemble_matrix(A, a, bcs=[bc])
    A.assemble()


def assemble_rhs():
    with b.localForm() as b_local:
        b_local.set(0)
    fp.assemble_vector(b, L)
    fp.apply_lifting(b, [a], bcs=[[bc]])
    b.ghostUpdate(addv=PETSc.InsertMode.ADD, mode=PETSc.ScatterMode.REVERSE)
    fp.set_bc(b, [bc])


t, _ = timed(lambda: (assemble_matrix(), assemble_rhs()))
record("first_assembly", t, ndofs, nnz=int(A.getInfo(PETSc.Mat.InfoType.GLOBAL_SUM)["nz_used"]))
t, _ = timed(assemble_matrix, 5)
record("reassembly", t, ndofs)
t, _ = timed(assemble_rhs, 5)
record("rhs", t, ndofs)


def krylov_solver(pc_type, ksp_type):
    ksp = PETSc.KSP().create(comm)
    ksp.setOperators(A)
    ksp.setType(ksp_type)
    ksp.getPC().setType(pc_type)
    return ksp


x = A.createVecRight()
umax = {}
if not args.no_direct:
    A.setOption(PETSc.Mat.Option.SPD, True)  # as bench_dist does for Cholesky
    ksp = krylov_solver("cholesky", "preonly")
    ksp.getPC().setFactorSolverType("mumps")
    ksp.setFromOptions()
    t, _ = timed(ksp.setUp)
    record("mumps_factorize", t, ndofs)
    total = 0.0
    for _ in range(2):
        assemble_matrix()  # not timed
        t, _ = timed(lambda: (ksp.setOperators(A), ksp.setUp()))
        total += t
    record("mumps_refactorize", total / 2, ndofs)
    t, _ = timed(lambda: ksp.solve(b, x), 5)
    umax["mumps"] = x.max()[1]
    record("mumps_solve", t, ndofs, u_max=umax["mumps"])
    ksp.destroy()

ksp = krylov_solver("gamg", "cg")
ksp.setTolerances(rtol=1e-8)
ksp.setNormType(PETSc.KSP.NormType.UNPRECONDITIONED)
ksp.setFromOptions()
t, _ = timed(ksp.setUp)
record("gamg_setup", t, ndofs)
t, _ = timed(lambda: (x.set(0), ksp.solve(b, x)), 3)
assert ksp.getConvergedReason() > 0, ksp.getConvergedReason()
umax["gamg"] = x.max()[1]
r = b.duplicate()
A.mult(x, r)
r.aypx(-1, b)
record("gamg_solve", t, ndofs, iterations=ksp.getIterationNumber(), u_max=umax["gamg"],
       rel_residual=r.norm() / b.norm())

if comm.rank == 0:
    kk = float(k.value)
    print(f"# DOLFINx {args.mesh} n={args.n}: {ndofs} DOFs, {comm.size} ranks, k={kk:g}; "
          f"JIT {jit * 1e3:.0f} ms (excluded), forms on the mesh {t_forms * 1e3:.0f} ms (excluded)")
    print(f"{'phase':<18}{'ms':>10}{'DOF/s':>11}{'peak_MB':>9}  extra")
    for row in rows:
        rate = f"{row['dofs_per_s']:.3g}" if row["dofs_per_s"] else "-"
        extra = " ".join(f"{key}={value:.4g}" if isinstance(value, float) else f"{key}={value}"
                         for key, value in row.items() if key not in ("phase", "ms", "dofs_per_s", "peak_MB"))
        print(f"{row['phase']:<18}{row['ms']:>10.1f}{rate:>11}{row['peak_MB']:>9.0f}  {extra}")
    print("# k * max(u): " + ", ".join(f"{s} {kk * v:.6f}" for s, v in umax.items()) +
          (" (square limit 0.073671)" if args.mesh == "square" else " (cube limit 0.056213)"))
    if args.json:
        with open(args.json, "w") as out:
            json.dump(dict(mesh=args.mesh, n=args.n, ranks=comm.size, dofs=ndofs, k=kk, jit_ms=jit * 1e3,
                           forms_ms=t_forms * 1e3, phases=rows, u_max=umax), out, indent=1)
