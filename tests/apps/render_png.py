#!/usr/bin/env python3
"""scripts/render_vtu.py (matplotlib) on fem results: a poisson solution, an elasticity result drawn
deformed and coloured by a cell field, and the last frame of a heat .pvd. Each PNG is valid
(signature, IHDR), has the asked width and the height the script's rule gives for the domain's
aspect ratio, and is not blank (a good part of it coloured, many colours: a field, not a flat fill).
Exit 77 (skipped) when matplotlib is not installed.

    render_png.py FEM_EXECUTABLE RENDER_SCRIPT WORK_DIR
"""
import os
import struct
import subprocess
import sys
import zlib

try:
    import matplotlib.image
    import numpy as np
except ImportError:
    print("matplotlib is not installed (Debian: python3-matplotlib); skipped")
    sys.exit(77)

fem, script, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)


def fem_run(*args):
    subprocess.run([fem, *args, "--quiet"], check=True)


def render(src, png, *options):
    p = subprocess.run([sys.executable, script, src, png, *options], check=True, capture_output=True, text=True)
    return p.stdout


def check_png(png, width, height):
    data = open(png, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{png}: no PNG signature"
    length, kind = struct.unpack(">I4s", data[8:16])
    body = data[16:16 + length]
    assert kind == b"IHDR" and struct.unpack(">I", data[16 + length:20 + length])[0] == zlib.crc32(kind + body)
    size = struct.unpack(">II", body[:8])
    assert size == (width, height), f"{png}: {size[0]}x{size[1]}, expected {width}x{height}"
    image = matplotlib.image.imread(png)[:, :, :3]
    assert image.shape[:2] == (height, width)
    rgb = np.round(image * 255).astype(np.uint32)
    colours = len(np.unique(rgb[:, :, 0] << 16 | rgb[:, :, 1] << 8 | rgb[:, :, 2]))
    coloured = np.mean(np.any(rgb < 235, axis=2))  # neither white nor near it
    assert colours >= 100, f"{png}: {colours} colours: blank or a flat fill"
    assert coloured >= 0.3, f"{png}: only {coloured:.0%} of the image is coloured"
    print(f"{png}: {width}x{height}, {colours} colours, {coloured:.0%} coloured")


def height_of(width, aspect, title=False):  # the rule in render_vtu.py's docstring
    aspect = min(max(aspect, 0.25), 2.5)
    return round(width * (0.8 * aspect + 0.12)) + (round(0.06 * width) if title else 0)


# A scalar point field on the unit square (aspect 1).
vtu, png = os.path.join(work, "u.vtu"), os.path.join(work, "u.png")
fem_run("poisson", "gen:square-tri3:8", "--dirichlet", "all=0", "--source", "1", "--output", vtu)
out = render(vtu, png, "--width", "320", "--units", "K")
assert "u [K] from 0 to 0.07278" in out, out
check_png(png, 320, height_of(320, 1.0))

# Elasticity: deformed (auto scale) and coloured by the cell field von_mises, with a title.
vtu, png = os.path.join(work, "e.vtu"), os.path.join(work, "e.png")
fem_run("elasticity", "gen:square-quad4:6", "--fixed", "left", "--traction", "right=0,-0.01", "--output", vtu)
out = render(vtu, png, "--width", "300", "--field", "von_mises", "--title", "von Mises")
assert "von_mises from" in out and "deformed ×" in out, out
w, h = map(int, out.rsplit(", ", 1)[1].split("x"))  # the frame holds the undeformed and the deformed shapes:
assert w == 300 and height_of(300, 1.0, True) <= h <= height_of(300, 1.3, True), out  # a little higher than wide
check_png(png, w, h)

# The last frame of a heat series (.pvd), titled with its time.
pvd, png = os.path.join(work, "heat", "heat.pvd"), os.path.join(work, "heat.png")
fem_run("heat", "gen:square-tri3:8", "--dt", "0.1", "--steps", "3", "--initial", "x", "--dirichlet", "all=0",
        "--output", pvd)
out = render(pvd, png, "--width", "200", "--levels", "8")
check_png(png, 200, height_of(200, 1.0, True))
