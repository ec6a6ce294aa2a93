#!/usr/bin/env python3
"""Registers, stack frame and spills of every kernel in nvcc's `-Xptxas -v` output.

    nvcc ... -Xptxas -v -c file.cu 2> ptxas.txt
    scripts/ptxas-report.py ptxas.txt [--check REGEX] [--max-registers 128]

Prints one line per kernel and architecture. With --check, the kernels whose demangled name
matches REGEX must have no stack frame, no spills and at most --max-registers registers; the
script exits 1 naming those that do not.
"""
import argparse
import re
import subprocess
import sys

CELL_TYPES = ["point", "line2", "line3", "tri3", "tri6", "quad4", "quad9", "tet4", "tet10", "hex8", "hex27"]


def demangle(names):
    try:
        out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True, check=True)
        return out.stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        return names


def short(name):
    """void fem::gpu::detail::for_each_kernel<fem::assembly::detail::CellAssembly<
    fem::Lagrange<(fem::CellType)9>, 3, 27, Elasticity<...> > >(unsigned long, ...)
    -> for_each_kernel<CellAssembly<hex8, 3, 27, Elasticity>>"""
    name = re.sub(r"^void ", "", name).replace("(anonymous namespace)::", "")
    depth = 0
    for i, ch in enumerate(name):  # cut the parameter list: the first '(' outside template brackets
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            name = name[:i]
            break
    name = re.sub(r"\(fem::CellType\)(\d+)", lambda m: CELL_TYPES[int(m.group(1))], name)
    name = re.sub(r"\b(fem|gpu|assembly|detail|kernels|cub|CUB_\d+_SM_\d+)::", "", name)
    name = re.sub(r"<TagCoefficient(, TagCoefficient)?\s*>", "", name)
    name = re.sub(r"Lagrange<(\w+)>", r"\1", name)
    return re.sub(r"\s*>", ">", name)


def parse(text):
    entries, current = [], None
    for line in text.splitlines():
        m = re.search(r"Compiling entry function '([^']+)' for '(sm_\d+)'", line)
        if m:
            current = m.group(1)
            entries.append({"mangled": current, "arch": m.group(2), "registers": 0, "stack": 0, "spill_stores": 0,
                            "spill_loads": 0})
            continue
        if current is None:
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m:
            entries[-1].update(stack=int(m.group(1)), spill_stores=int(m.group(2)), spill_loads=int(m.group(3)))
        m = re.search(r"Used (\d+) registers", line)
        if m:
            entries[-1]["registers"] = int(m.group(1))
    for e, d in zip(entries, demangle([e["mangled"] for e in entries])):
        e["name"] = short(d)
    return entries


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("files", nargs="+")
    p.add_argument("--check", help="regex of the kernels that must not use local memory")
    p.add_argument("--max-registers", type=int, default=128)
    a = p.parse_args()
    entries = []
    for f in a.files:
        with open(f, encoding="utf-8", errors="replace") as fh:
            entries += parse(fh.read())
    if a.check and not entries:
        print("no ptxas output in " + ", ".join(a.files) + ": compile with -Xptxas -v from a clean build",
              file=sys.stderr)
        return 2
    print(f"{'arch':6} {'regs':>4} {'stack':>6} {'spill st':>8} {'spill ld':>8}  kernel")
    bad = []
    for e in sorted(entries, key=lambda e: (e["name"], e["arch"])):
        print(f"{e['arch']:6} {e['registers']:>4} {e['stack']:>6} {e['spill_stores']:>8} {e['spill_loads']:>8}  "
              f"{e['name']}")
        if a.check and re.search(a.check, e["name"]):
            if e["stack"] or e["spill_stores"] or e["spill_loads"] or e["registers"] > a.max_registers:
                bad.append(e)
    if bad:
        print(f"\n{len(bad)} kernel(s) matching '{a.check}' use local memory or more than {a.max_registers} "
              "registers:", file=sys.stderr)
        for e in bad:
            print(f"  {e['arch']} {e['name']}: {e['registers']} registers, {e['stack']} B stack, "
                  f"{e['spill_stores']} B spilled", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
