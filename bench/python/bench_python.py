"""Benchmarks of the Python module, each against its baseline in the same run.

1. Overhead per call: a cached solve of 1024 unknowns (P1 Poisson, gen:square-tri3:31) from
   Python, fem.solve(key, b) and Factorization.solve(b), against the same calls from C++
   (bench_python_baseline, Google Benchmark, run by this script).
2. Forward + backward of fem.torch.sparse_solve on 2D P1 matrices of 10k to 1M unknowns, against
   the usual baselines for the backward pass: a second factorization of Aᵀ, numeric only (the
   symbolic analysis cached and Aᵀ's previous factorization refactorized in place: the most
   favourable baseline) or analysed afresh (what ADCME and torch_sparse_solve do). Everything
   else (the forward pass, the gradient on the pattern) is the same code.
3. The forward pass's factorization with the previous factors released, so that fem.factorize
   refactorizes them in place, against the same with the previous factors still held.

    PYTHONPATH=build/python taskset -c 1 /usr/bin/python3 bench/python/bench_python.py \
        --cpp build/bench/python/bench_python_baseline
"""
import argparse
import json
import resource
import statistics
import subprocess
import time

import numpy as np

import fem

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--cpp", help="the bench_python_baseline executable (part 1's C++ figures)")
parser.add_argument("--sizes", default="99,315,999", help="cells per side of the 2D meshes (part 2)")
parser.add_argument("--repetitions", type=int, default=5)
args = parser.parse_args()


def median_time(f, repetitions, number=1):
    times = []
    for _ in range(repetitions):
        t = time.perf_counter()
        for _ in range(number):
            f()
        times.append((time.perf_counter() - t) / number)
    return statistics.median(times)


def poisson(n, key):
    fem.generate_mesh(f"gen:square-tri3:{n}", f"{key}/mesh")
    V = fem.FunctionSpace(f"{key}/mesh", 1)
    a = fem.Assembler(V)
    A, b = fem.DirichletBC(V, {"all": 0.0}).apply(a.matrix(fem.Diffusion()), a.vector(fem.Source(1.0)))
    return A, b


# --- 1. overhead per call -------------------------------------------------------------------
A, b = poisson(31, "small")
fem.store.put("small/A", A)
fem.solve("small/A", b)
F = fem.factorization("small/A")
py_store = median_time(lambda: fem.solve("small/A", b), args.repetitions, 2000)
py_factor = median_time(lambda: F.solve(b), args.repetitions, 2000)
print(f"1. one cached solve of {A.shape[0]} unknowns, median of {args.repetitions} x 2000 calls")
print(f"   {'':28s} {'Python':>10s} {'C++':>10s} {'overhead':>10s}")
cpp = {}
if args.cpp:
    out = subprocess.run([args.cpp, "--benchmark_format=json", f"--benchmark_repetitions={args.repetitions}",
                          "--benchmark_report_aggregates_only=true"], check=True, capture_output=True, text=True)
    for r in json.loads(out.stdout)["benchmarks"]:
        if r.get("aggregate_name") == "median":
            cpp[r["run_name"].split("/")[-1]] = r["real_time"] * {"us": 1e-6, "ms": 1e-3, "ns": 1e-9}[r["time_unit"]]
for name, t in (("fem.solve(key, b)", py_store), ("Factorization.solve(b)", py_factor)):
    c = cpp.get("store_solve" if name.startswith("fem.solve") else "factorization_solve")
    extra = f"{c * 1e6:8.1f} us {(t - c) * 1e6:7.1f} us" if c else f"{'-':>10s} {'-':>10s}"
    print(f"   {name:28s} {t * 1e6:7.1f} us {extra}")

# --- 2. forward + backward ------------------------------------------------------------------
try:
    import torch

    import fem.torch as ft
except ImportError:
    print("2. skipped: python3-torch is not installed")
    raise SystemExit(0)


class RefactorizeTranspose(torch.autograd.Function):
    """The baseline: forward as fem.torch, backward from a new factorization of Aᵀ."""

    @staticmethod
    def forward(ctx, values, b, pattern, fresh_analysis):
        F = fem.factorize(pattern, values.numpy(), key="bench/A")
        x = torch.from_numpy(F.solve(b.numpy()))
        ctx.pattern, ctx.values, ctx.fresh = pattern, values.numpy(), fresh_analysis
        ctx.save_for_backward(x)
        return x

    @staticmethod
    def backward(ctx, gx):
        (x,) = ctx.saved_tensors
        p = ctx.pattern
        At = fem.CsrMatrix(p, ctx.values).to_scipy().T.tocsr()
        pattern_t = fem.CsrPattern(At.shape[0], At.shape[1], At.indptr, At.indices)
        if ctx.fresh:  # forget the pattern's analysis (and Aᵀ's factorization): analysed again
            for k in fem.store.keys("#symbolic") + fem.store.keys("bench/At"):
                fem.store.erase(k)
        g = fem.factorize(pattern_t, At.data, key="bench/At").solve(gx.numpy())
        return torch.from_numpy(p.outer_values(g, x.numpy(), -1.0)), torch.from_numpy(g), None, None


print("\n2. forward + backward of a solve, 2D P1 Poisson; medians in seconds")
print(f"   {'unknowns':>9s} {'fwd':>7s} {'bwd':>7s} | {'bwd: Aᵀ refactorized':>21s} {'analysed+factorized':>20s}"
      f" | {'speedup fwd+bwd':>16s}")
for n in (int(s) for s in args.sizes.split(",")):
    fem.store.clear()
    A, b = poisson(n, "big")
    pattern = A.pattern
    values0 = torch.tensor(np.asarray(A.data))
    bt = torch.tensor(b)
    reps = args.repetitions if A.shape[0] < 500_000 else 3

    def ours():
        v = values0.clone().requires_grad_(True)
        t = time.perf_counter()
        x = ft.sparse_solve(v, bt, pattern, key="bench/A")
        t_fwd = time.perf_counter() - t
        t = time.perf_counter()
        x.sum().backward()
        return t_fwd, time.perf_counter() - t

    def baseline(fresh):
        v = values0.clone().requires_grad_(True)
        t = time.perf_counter()
        x = RefactorizeTranspose.apply(v, bt, pattern, fresh)
        t_fwd = time.perf_counter() - t
        t = time.perf_counter()
        x.sum().backward()
        return t_fwd, time.perf_counter() - t

    ours()  # the pattern's analysis, made once
    o = [ours() for _ in range(reps)]
    r = [baseline(False) for _ in range(reps)]
    f = [baseline(True) for _ in range(reps)]
    fwd, bwd = statistics.median(t[0] for t in o), statistics.median(t[1] for t in o)
    bwd_r, bwd_f = statistics.median(t[1] for t in r), statistics.median(t[1] for t in f)
    total_r = statistics.median(t[0] + t[1] for t in r)
    total_f = statistics.median(t[0] + t[1] for t in f)
    print(f"   {A.shape[0]:9d} {fwd:7.3f} {bwd:7.3f} | {bwd_r:21.3f} {bwd_f:20.3f} |"
          f" {total_r / (fwd + bwd):6.2f}x {total_f / (fwd + bwd):6.2f}x")

# --- 3. refactorizing in place -----------------------------------------------------------------
print("\n3. fem.factorize of new values on one pattern, the previous factors released (refactorized in place)"
      "\n   or still held (new factors: fresh pages); medians in seconds")
print(f"   {'unknowns':>9s} {'released':>9s} {'held':>9s}")
for n in (int(s) for s in args.sizes.split(",")):
    fem.store.clear()
    A, b = poisson(n, "big")
    reps = args.repetitions if A.shape[0] < 500_000 else 3
    values = np.asarray(A.data)
    fem.factorize(A.pattern, values)  # the analysis
    times = {"released": [], "held": []}
    for mode in times:
        F = fem.factorize(A.pattern, values)
        for r in range(reps):
            held = F if mode == "held" else None
            F = None
            t = time.perf_counter()
            F = fem.factorize(A.pattern, values * (2 + r))
            times[mode].append(time.perf_counter() - t)
            del held
    print(f"   {A.shape[0]:9d} {statistics.median(times['released']):9.3f} {statistics.median(times['held']):9.3f}")

peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"   peak resident memory of the process: {peak:.0f} MB")
