"""VTK itself reads what `fem convert` writes: every encoding, with and without zlib, first- and
second-order cells; counts, tags and total measure must match. Exit 77 (skip) without VTK.

    python3 vtk_reads_vtu.py FEM_EXECUTABLE WORK_DIR [SAMPLE.msh ...]
"""
import os
import subprocess
import sys

try:
    import vtk
except ImportError:
    print("VTK's Python module is not installed (Debian: python3-vtk9); skipping")
    sys.exit(77)

fem, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
cases = [("gen:interval-line2:5", 5, 1.0), ("gen:square-tri3:4", 32, 1.0), ("gen:square-quad4:4", 16, 1.0),
         ("gen:cube-tet4:3", 162, 1.0), ("gen:cube-hex8:3", 27, 1.0)]
cases += [(path, None, None) for path in sys.argv[3:] if os.path.exists(path)]
encodings = [[], ["--compress"], ["--encoding", "base64"], ["--encoding", "base64", "--compress"],
             ["--encoding", "ascii"]]
failures = 0
for spec, cells, measure in cases:
    for enc in encodings:
        out = os.path.join(work, "out.vtu")
        subprocess.run([fem, "convert", spec, out] + enc, check=True)
        r = vtk.vtkXMLUnstructuredGridReader()
        r.SetFileName(out)
        r.Update()
        g = r.GetOutput()
        what = f"{spec} {' '.join(enc)}"
        if r.GetErrorCode() or g.GetNumberOfCells() == 0:
            print(f"FAIL {what}: VTK could not read it")
            failures += 1
            continue
        if cells is not None and g.GetNumberOfCells() != cells:
            print(f"FAIL {what}: {g.GetNumberOfCells()} cells, expected {cells}")
            failures += 1
        tag = g.GetCellData().GetArray("tag")
        if tag is None or tag.GetNumberOfTuples() != g.GetNumberOfCells():
            print(f"FAIL {what}: no cell array 'tag'")
            failures += 1
        size = vtk.vtkCellSizeFilter()
        size.SetInputData(g)
        size.Update()
        name = {1: "Length", 2: "Area", 3: "Volume"}[g.GetCell(0).GetCellDimension()]
        a = size.GetOutput().GetCellData().GetArray(name)
        values = [a.GetValue(i) for i in range(a.GetNumberOfTuples())]
        if min(values) <= 0 or (measure is not None and abs(sum(values) - measure) > 1e-9):
            print(f"FAIL {what}: {name.lower()} {sum(values)} (min {min(values)}), expected {measure}")
            failures += 1
print(f"{len(cases) * len(encodings)} files read by VTK {vtk.vtkVersion.GetVTKVersion()}, {failures} failures")
sys.exit(1 if failures else 0)
