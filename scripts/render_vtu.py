#!/usr/bin/env python3
"""Render a point field of a 2D .vtu (as written by `fem`) to a PNG, with the standard library
only (no VTK, numpy or matplotlib): triangles and quadrilaterals (split in two) are rasterised
with linear interpolation of the field and a viridis-like colour map.

    scripts/render_vtu.py out/heat_000010.vtu docs/heat.png [--field u] [--width 800]

Reads the raw appended encoding with UInt64 or UInt32 headers (fem's default) and ASCII arrays.
"""
import argparse
import struct
import sys
import xml.etree.ElementTree as ET
import zlib

TYPES = {"Float64": "d", "Float32": "f", "Int64": "q", "Int32": "i", "UInt64": "Q", "UInt32": "I", "UInt8": "B", "Int8": "b"}
# viridis at 5 stops; colours between stops are interpolated linearly
VIRIDIS = [(68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37)]


def read_vtu(path):
    raw = open(path, "rb").read()
    marker = raw.find(b"<AppendedData")
    end_tag = b"</AppendedData>"
    head = raw if marker < 0 else raw[:marker] + raw[raw.rindex(end_tag) + len(end_tag):]
    root = ET.fromstring(head)
    header = "Q" if root.get("header_type", "UInt32") == "UInt64" else "I"
    if root.get("compressor"):
        sys.exit(f"{path}: compressed .vtu files are not supported here (write them raw)")
    appended = None
    if marker >= 0:
        start = raw.index(b"_", raw.index(b">", marker)) + 1
        appended = raw[start:]
    arrays = {}
    for da in root.iter("DataArray"):
        fmt = TYPES[da.get("type")]
        if da.get("format") == "appended":
            off = int(da.get("offset"))
            size = struct.unpack_from("<" + header, appended, off)[0]
            data = appended[off + struct.calcsize(header):off + struct.calcsize(header) + size]
            values = struct.unpack("<%d%s" % (size // struct.calcsize(fmt), fmt), data)
        elif da.get("format") == "ascii":
            values = [float(x) if fmt in "df" else int(x) for x in da.text.split()]
        else:
            sys.exit(f"{path}: DataArray format '{da.get('format')}' is not supported here")
        arrays[da.get("Name")] = values
    return arrays


def colour(t):
    t = min(max(t, 0.0), 1.0) * (len(VIRIDIS) - 1)
    i = min(int(t), len(VIRIDIS) - 2)
    f = t - i
    return bytes(round(a + (b - a) * f) for a, b in zip(VIRIDIS[i], VIRIDIS[i + 1]))


def render(arrays, field, width):
    pts, conn, offsets, u = arrays["Points"], arrays["connectivity"], arrays["offsets"], arrays[field]
    xs, ys = pts[0::3], pts[1::3]
    x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
    height = max(1, round(width * (y1 - y0) / (x1 - x0)))
    scale = (width - 1) / (x1 - x0)
    lo, hi = min(u), max(u)
    span = hi - lo or 1.0
    image = [bytearray(b"\xff\xff\xff" * width) for _ in range(height)]
    triangles, begin = [], 0
    for end in offsets:  # first-order cells: vertices first; polygons are fanned into triangles
        cell = conn[begin:end]
        nv = 4 if len(cell) in (4, 8, 9) else 3
        for k in range(1, nv - 1):
            triangles.append((cell[0], cell[k], cell[k + 1]))
        begin = end
    for a, b, c in triangles:
        px = [(xs[i] - x0) * scale for i in (a, b, c)]
        py = [(y1 - ys[i]) * scale for i in (a, b, c)]
        det = (py[1] - py[2]) * (px[0] - px[2]) + (px[2] - px[1]) * (py[0] - py[2])
        if det == 0:
            continue
        for y in range(max(0, int(min(py))), min(height - 1, int(max(py)) + 1) + 1):
            for x in range(max(0, int(min(px))), min(width - 1, int(max(px)) + 1) + 1):
                l0 = ((py[1] - py[2]) * (x - px[2]) + (px[2] - px[1]) * (y - py[2])) / det
                l1 = ((py[2] - py[0]) * (x - px[2]) + (px[0] - px[2]) * (y - py[2])) / det
                l2 = 1 - l0 - l1
                if min(l0, l1, l2) < -1e-9:
                    continue
                value = l0 * u[a] + l1 * u[b] + l2 * u[c]
                image[y][3 * x:3 * x + 3] = colour((value - lo) / span)
    return image, lo, hi


def write_png(path, image):
    height, width = len(image), len(image[0]) // 3

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"".join(b"\x00" + bytes(row) for row in image)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    open(path, "wb").write(png)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("vtu")
    p.add_argument("png")
    p.add_argument("--field", default="u")
    p.add_argument("--width", type=int, default=800)
    args = p.parse_args()
    arrays = read_vtu(args.vtu)
    if args.field not in arrays:
        sys.exit(f"{args.vtu}: no point field '{args.field}' (have: {', '.join(sorted(arrays))})")
    image, lo, hi = render(arrays, args.field, args.width)
    write_png(args.png, image)
    print(f"{args.png}: {args.field} from {lo:.4g} (dark blue) to {hi:.4g} (yellow), {len(image[0]) // 3}x{len(image)}")


if __name__ == "__main__":
    main()
