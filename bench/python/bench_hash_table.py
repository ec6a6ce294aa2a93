"""fem.HashTable from Python against the C++ class, in the same run (docs/hash_table.md): inserts/s
and finds/s of uniform random int64 keys at load 0.5 (8.4M keys per batch in a table of 16.8M
slots), int32 values, one core. The C++ figures come from bench_hashtable (BM_Insert/BM_Find at
load 50, one thread), which this script runs.

    PYTHONPATH=build/python taskset -c 1 /usr/bin/python3 bench/python/bench_hash_table.py \\
        --cpp build/bench/hashtable/bench_hashtable
"""
import argparse
import json
import statistics
import subprocess
import time

import numpy as np

import fem

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--cpp", help="the bench_hashtable executable (the C++ class's figures)")
parser.add_argument("--repetitions", type=int, default=3)
args = parser.parse_args()

capacity = 1 << 24
rng = np.random.default_rng(42)
keys = (rng.integers(0, 2**62, size=capacity // 2, dtype=np.int64))
values = np.ones(len(keys), dtype=np.int32)


def timed(f):
    times = []
    for _ in range(args.repetitions):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def insert():
    table = fem.HashTable("int64", "int32", capacity=capacity * 8 // 10, load_factor=0.8)
    t = time.perf_counter()
    table.insert(keys, values)
    return time.perf_counter() - t


insert_seconds = statistics.median(insert() for _ in range(args.repetitions))
table = fem.HashTable("int64", "int32", capacity=capacity * 8 // 10, load_factor=0.8)
table.insert(keys, values)
out = (np.empty(len(keys), dtype=np.int32), np.empty(len(keys), dtype=bool))  # reused, as the C++ case does
find_seconds = timed(lambda: table.find(keys, fill=None, out=out))
rows = {"insert": len(keys) / insert_seconds, "find": len(keys) / find_seconds}

cpp = {}
if args.cpp:
    out = subprocess.run([args.cpp, "--benchmark_filter=BM_(Insert|Find)/50/1/", "--benchmark_format=json",
                          "--benchmark_min_time=0.5"], check=True, capture_output=True, text=True).stdout
    for b in json.loads(out)["benchmarks"]:
        cpp["insert" if b["name"].startswith("BM_Insert") else "find"] = b["items_per_second"]

print(f"{'op':8} {'Python M keys/s':>16} {'C++ M keys/s':>14} {'overhead':>9}")
for op, rate in rows.items():
    base = cpp.get(op)
    print(f"{op:8} {rate / 1e6:16.2f} {base / 1e6 if base else float('nan'):14.2f} "
          f"{(base / rate - 1) * 100 if base else float('nan'):8.1f}%")
