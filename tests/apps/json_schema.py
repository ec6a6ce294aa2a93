#!/usr/bin/env python3
"""Every fem driver's --json output validates against docs/fem-output.schema.json, and the schema
is strict enough to catch a broken contract.

    json_schema.py FEM_EXECUTABLE

Runs info, partition, poisson, heat, nonlinear, elasticity, modes, dynamics, stokes and navier-stokes serially (plain runs and the
variants that add fields: --exact, --output, a singular system, --continuation, a Newton run that
does not converge, 3D, order 2, plane stress, --device debug-device, a distributed solver on one
process when fem has PETSc), and one `mpirun -n 2` poisson run when mpirun is there. Each document
is validated against its subcommand's definition and against the whole schema (exactly one
definition of its oneOf must match). Then broken documents (a renamed field, a missing one, a
wrong type, an unknown field) must fail. Exit 77 (skipped) when jsonschema is not importable.
"""
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile

try:
    import jsonschema
except ImportError:
    print("jsonschema is not installed (Debian: python3-jsonschema); skipped")
    sys.exit(77)

FEM = os.path.abspath(sys.argv[1])
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCHEMA_PATH = os.path.join(ROOT, "docs", "fem-output.schema.json")
MESHES = os.path.join(ROOT, "meshes")

schema = json.load(open(SCHEMA_PATH, encoding="utf-8"))
Validator = jsonschema.validators.validator_for(schema)
Validator.check_schema(schema)
whole = Validator(schema)


def definition(name):
    """A validator for one subcommand's definition (clearer errors than the whole oneOf)."""
    return Validator({"$schema": schema["$schema"], "$ref": f"#/$defs/{name}", "$defs": schema["$defs"]})


def problems(doc, name):
    errors = sorted(definition(name).iter_errors(doc), key=lambda e: list(e.absolute_path))
    msgs = [f"  at /{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors]
    if not errors and not whole.is_valid(doc):
        msgs.append("  matches its definition but not exactly one of the schema's oneOf: "
                    + whole.iter_errors(doc).__next__().message[:300])
    return msgs


work = tempfile.mkdtemp(prefix="fem_json_schema_")
version = subprocess.run([FEM, "--version"], capture_output=True, text=True).stdout
has_petsc = "petsc" in version

# (definition, arguments, accepted exit codes)
runs = [
    ("info", ["info", os.path.join(MESHES, "plate_hole_v41.msh")], {0}),
    ("info", ["info", "gen:cube-hex8:2"], {0}),
    ("partition", ["partition", "gen:square-tri3:16", "--parts", "1,2,4"], {0}),
    ("poisson", ["poisson", "gen:square-tri3:8", "--dirichlet", "all=0", "--source", "1"], {0}),
    ("poisson", ["poisson", os.path.join(MESHES, "annulus_p2_v41.msh"), "--order", "2", "--dirichlet", "all=x",
                 "--exact", "x", "--output", os.path.join(work, "p.vtu")], {0}),
    ("poisson", ["poisson", "gen:square-quad4:6", "--neumann", "all=0", "--source", "0"], {0}),
    ("poisson", ["poisson", "gen:square-tri3:6", "--dirichlet", "all=0", "--source", "1", "--device",
                 "debug-device", "--solver", "umfpack", "--ordering", "colamd"], {0}),
    ("heat", ["heat", "gen:square-tri3:8", "--dt", "0.01", "--steps", "5", "--initial", "0", "--dirichlet",
              "all=0"], {0}),
    ("heat", ["heat", os.path.join(MESHES, "plate_hole_v41.msh"), "--dt", "0.01", "--steps", "4", "--initial", "0",
              "--dirichlet", "hole=1", "--dirichlet", "left=0", "--exact", "0",
              "--output", os.path.join(work, "h.pvd")], {0}),
    ("heat", ["heat", "gen:square-tri3:8", "--dt", "0.2", "--steps", "5", "--scheme", "cn", "--adaptive", "1e-3",
              "--initial", "x*y", "--dirichlet", "all=x*y*exp(-t)"], {0}),
    ("nonlinear", ["nonlinear", "gen:square-tri3:8", "--lambda", "1", "--output", os.path.join(work, "n.vtu")],
     {0}),
    ("nonlinear", ["nonlinear", "gen:square-tri3:8", "--lambda", "3", "--continuation"], {0}),
    ("nonlinear", ["nonlinear", "gen:square-tri3:8", "--lambda", "8"], {3}),  # diverges: exit 3, JSON all the same
    ("nonlinear", ["nonlinear", "gen:square-tri3:8", "--problem", "quasilinear", "--source", "1", "--exact", "0",
                   "--lag", "2", "--line-search", "backtracking"], {0}),
    ("elasticity", ["elasticity", "gen:square-tri3:8", "--fixed", "left", "--traction", "right=0,-0.01", "--nu",
                    "all=0.49", "--output", os.path.join(work, "e.vtu")], {0}),
    ("elasticity", ["elasticity", "gen:square-quad4:4", "--order", "2", "--fixed", "left", "--traction",
                    "right=0,-1", "--plane", "stress", "--exact", "0,0"], {0}),
    ("elasticity", ["elasticity", "gen:cube-tet4:3", "--traction", "all=0,0,0"], {0}),  # rigid motions free
    ("elasticity", ["elasticity", os.path.join(MESHES, "cylinder_v41.msh"), "--fixed", "all",
                    "--body-force", "0,0,-1"], {0}),
    ("dynamics", ["dynamics", "gen:square-tri3:6", "--fixed", "left", "--initial-velocity", "0,x", "--dt", "0.1",
                  "--steps", "5", "--probe", "1,1", "--output", os.path.join(work, "dyn.pvd")], {0}),
    ("dynamics", ["dynamics", "gen:cube-tet4:2", "--fixed", "left", "--traction", "right=0,0,sin(t)", "--scheme",
                  "galpha", "--rho-inf", "0.5", "--rayleigh", "0.1,0.01", "--dt", "0.1", "--steps", "3"], {0}),
    ("elasticity", ["elasticity", "gen:square-tri3:4", "--formulation", "up", "--nu", "all=0.4999", "--fixed",
                    "left", "--traction", "right=1,0", "--output", os.path.join(work, "up.vtu")], {0}),
    ("flow", ["stokes", "gen:square-tri3:6", "--velocity", "all=y*(1-y),0", "--exact", "y*(1-y),0",
              "--exact-pressure", "-2*x", "--output", os.path.join(work, "stokes.vtu")], {0}),
    ("flow", ["navier-stokes", "gen:square-tri3:8", "--velocity", "all=0,0", "--velocity", "top=1,0",
              "--viscosity", "0.01", "--drag", "top", "--pressure-difference", "0.5,0.2:0.5,0.8",
              "--probe", "0.5,0.5"], {0}),
    ("flow", ["navier-stokes", "gen:square-tri3:6", "--velocity", "left=y*(1-y),0", "--velocity", "top=0,0",
              "--velocity", "bottom=0,0", "--outflow", "right", "--dt", "0.05", "--steps", "3", "--drag", "bottom",
              "--flux", "right", "--output", os.path.join(work, "ns.pvd")], {0}),
    ("flow", ["navier-stokes", "gen:square-tri3:4", "--velocity", "all=0,0", "--velocity", "top=1,0",
              "--dt", "0.05", "--steps", "3", "--scheme", "bdf2", "--drag", "bottom"], {0}),
    ("modes", ["modes", "gen:square-tri3:16", "--count", "4", "--dirichlet", "all=0"], {0}),
    ("modes", ["modes", "gen:square-quad4:12", "--count", "3", "--range", "40:200", "--dirichlet", "all=0",
               "--output", os.path.join(work, "m.pvd")], {0}),
    ("modes", ["modes", "gen:square-tri3:8", "--problem", "elasticity", "--fixed", "left", "--count", "4",
               "--plane", "stress"], {0}),
    ("modes", ["modes", "gen:cube-tet4:3", "--problem", "elasticity", "--count", "8", "--shift", "0.5"], {0}),
]
if has_petsc:
    runs.append(("poisson", ["poisson", "gen:square-tri3:8", "--dirichlet", "all=0", "--source", "1", "--solver",
                             "gamg"], {0}))
    runs.append(("heat", ["heat", "gen:square-tri3:8", "--dt", "0.01", "--steps", "3", "--initial", "1",
                          "--dirichlet", "all=0", "--solver", "mumps"], {0}))
    runs.append(("flow", ["stokes", "gen:cube-tet4:3", "--velocity", "all=0,0,0", "--velocity", "top=1,0,0",
                          "--solver", "fieldsplit"], {0}))
mpi = []
if has_petsc and shutil.which("mpirun"):
    mpi = ["mpirun", "-n", "2"]
    runs.append(("poisson", ["poisson", os.path.join(MESHES, "plate_hole_v41.msh"), "--dirichlet", "hole=1",
                             "--dirichlet", "left=0", "--source", "1", "--output", os.path.join(work, "d.pvtu")],
                 {0}))
env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1")

failures, documents, seen = [], {}, set()
for i, (name, args, codes) in enumerate(runs):
    prefix = mpi if (mpi and i == len(runs) - 1) else []
    cmd = prefix + [FEM] + args + ["--json", "-"] + ([] if name in ("info", "partition") else ["--quiet"])
    shown = " ".join(os.path.relpath(a, ROOT) if a.startswith(ROOT) else a for a in cmd).replace(work, "WORK")
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, cwd=work)
    if p.returncode not in codes:
        failures.append(f"{shown}: exit {p.returncode} (expected {sorted(codes)})\n{p.stderr[-2000:]}")
        continue
    try:
        doc = json.loads(p.stdout)
    except json.JSONDecodeError as e:
        failures.append(f"{shown}: standard output is not one JSON document ({e})\n{p.stdout[:500]}")
        continue
    msgs = problems(doc, name)
    print(("FAIL " if msgs else "ok   ") + shown)
    if msgs:
        failures.append(f"{shown}: does not follow the schema's '{name}'\n" + "\n".join(msgs))
    seen.add(name)
    documents.setdefault(name, doc)
    if prefix:
        if doc.get("ranks") != 2 or "dist" not in doc:
            failures.append(f"{shown}: expected ranks 2 and the dist counters, got ranks {doc.get('ranks')}")
        documents["distributed"] = doc

missing = {"info", "partition", "poisson", "heat", "nonlinear", "elasticity", "modes", "dynamics"} - seen
if missing:
    failures.append(f"no validated output of {sorted(missing)}")


def broken(name, doc, how, change):
    """A document changed by change() must fail its definition and the whole schema."""
    bad = copy.deepcopy(doc)
    change(bad)
    if definition(name).is_valid(bad) or whole.is_valid(bad):
        failures.append(f"the schema accepts {name} output with {how}")
    else:
        print(f"ok   rejected: {name} with {how}")


def rename(path, new):
    def change(d):
        *outer, last = path
        for k in outer:
            d = d[k]
        d[new] = d.pop(last)
    return change


def delete(path):
    def change(d):
        *outer, last = path
        for k in outer:
            d = d[k]
        del d[last]
    return change


def assign(path, value):
    def change(d):
        *outer, last = path
        for k in outer:
            d = d[k]
        d[last] = value
    return change


if not failures:
    p, e, n, h = documents["poisson"], documents["elasticity"], documents["nonlinear"], documents["heat"]
    broken("poisson", p, "dirichlet_dofs renamed to constrained_dofs", rename(["dirichlet_dofs"], "constrained_dofs"))
    broken("poisson", p, "timings.factorize renamed to timings.factorization",
           rename(["timings", "factorize"], "factorization"))
    broken("poisson", p, "mesh.cell_type renamed to mesh.type", rename(["mesh", "cell_type"], "type"))
    broken("poisson", p, "solution.max renamed to solution.maximum", rename(["solution", "max"], "maximum"))
    broken("poisson", p, "an unknown field", assign(["frames"], 3))
    broken("poisson", p, "no version", delete(["version"]))
    broken("poisson", p, "dofs as a string", assign(["dofs"], str(p["dofs"])))
    broken("poisson", p, "cache.solves as a float", assign(["cache", "solves"], 1.5))
    broken("poisson", p, "an unknown device", assign(["device"], "gpu"))
    broken("heat", h, "time.dt renamed to time.step", rename(["time", "dt"], "step"))
    broken("nonlinear", n, "newton.converged renamed to newton.ok", rename(["newton", "converged"], "ok"))
    broken("nonlinear", n, "newton.converged as a string", assign(["newton", "converged"], "true"))
    broken("elasticity", e, "stress.von_mises_max renamed to stress.mises_max",
           rename(["stress", "von_mises_max"], "mises_max"))
    broken("elasticity", e, "solution.components renamed to solution.component",
           rename(["solution", "components"], "component"))
    broken("info", documents["info"], "boundary_facets renamed to boundary", rename(["boundary_facets"], "boundary"))
    broken("info", documents["info"], "check.ok renamed to check.passed", rename(["check", "ok"], "passed"))
    broken("partition", documents["partition"], "edge_cut renamed to cut", rename([0, "edge_cut"], "cut"))
    if "distributed" in documents:
        d = documents["distributed"]
        broken("poisson", d, "dist.coo_fills renamed to dist.fills", rename(["dist", "coo_fills"], "fills"))
        broken("poisson", d, "solver.total_iterations renamed to solver.iterations_total",
               rename(["solver", "total_iterations"], "iterations_total"))

if failures:
    print("\n\n".join(failures), file=sys.stderr)
    sys.exit(1)
shutil.rmtree(work, ignore_errors=True)
print(f"{len(runs)} runs follow {os.path.relpath(SCHEMA_PATH, ROOT)}; broken documents are rejected")
