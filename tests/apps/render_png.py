#!/usr/bin/env python3
"""scripts/render_vtu.py on a fem poisson result: the PNG is valid (signature, IHDR of the asked
width and the domain's aspect ratio, CRCs) and shows the field's range: the colour map's two ends
(the solution's minimum on the boundary and its maximum inside) both appear.

    render_png.py FEM_EXECUTABLE RENDER_SCRIPT WORK_DIR
"""
import os
import struct
import subprocess
import sys
import zlib

fem, script, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
vtu, png = os.path.join(work, "u.vtu"), os.path.join(work, "u.png")
subprocess.run([fem, "poisson", "gen:square-tri3:8", "--dirichlet", "all=0", "--source", "1", "--output", vtu,
                "--quiet"], check=True)
subprocess.run([sys.executable, script, vtu, png, "--width", "64"], check=True, stdout=subprocess.DEVNULL)

data = open(png, "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "PNG signature"
pos, chunks = 8, {}
while pos < len(data):
    length, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + length]
    assert struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])[0] == zlib.crc32(kind + body), kind
    chunks[kind] = chunks.get(kind, b"") + body
    pos += 12 + length
width, height = struct.unpack(">II", chunks[b"IHDR"][:8])
assert (width, height) == (64, 64), (width, height)  # the unit square keeps its aspect ratio
raw = zlib.decompress(chunks[b"IDAT"])
assert len(raw) == height * (1 + 3 * width)
pixels = {raw[r * (1 + 3 * width) + 1 + 3 * x:r * (1 + 3 * width) + 4 + 3 * x] for r in range(height) for x in range(width)}
assert bytes((68, 1, 84)) in pixels, "the minimum's colour (u = 0 on the boundary) is missing"
assert bytes((253, 231, 37)) in pixels or max(p[0] + p[1] for p in pixels) > 400, "no colour near the maximum"
print(f"{png}: {width}x{height}, {len(pixels)} colours")
