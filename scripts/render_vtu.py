#!/usr/bin/env python3
"""Render a field of a 2D .vtu (as `fem` writes it) to a PNG with matplotlib.

    scripts/render_vtu.py RESULT.vtu|RESULT.pvd OUT.png [--field NAME] [--component K] [--units TEXT]
                          [--width PIXELS] [--title TEXT] [--levels N] [--warp SCALE|auto|0]

What it draws: the field on the cells split into triangles (quadrilaterals in two; second-order
cells by their corner nodes), a point field interpolated linearly (or filled contours with
--levels N), a cell field constant per cell; a colour bar labelled with the field's name (and
--units); the mesh outline (its boundary edges). A vector field is shown by its magnitude |v| (or
one --component). When the file has a point field 'displacement' (fem elasticity), the shape is
drawn deformed by it: x + SCALE u, with SCALE from --warp (default auto: 10% of the bounding box's
largest side over max |u|; 0: undeformed), the undeformed outline dashed under it; the colour is
|u| unless --field names another field (e.g. the cell field von_mises).

A .pvd (fem heat's time series) renders its last frame (--frame K: frame K), titled with its time.

The image is PIXELS wide (--width, default 800) and as high as the domain's aspect ratio asks:
round(PIXELS * (0.8 * clamp(dy/dx, 0.25, 2.5) + 0.12)) plus round(0.06 * PIXELS) with a title.

The reader (read_vtu) takes fem's encodings: raw appended (fem's default), base64 inline or
appended, ASCII, each optionally zlib-compressed (vtkZLibDataCompressor), UInt32 or UInt64 headers.
Needs matplotlib (Debian: python3-matplotlib; scripts/install-deps.sh plot); no display (Agg).
"""
import argparse
import base64
import math
import os
import struct
import sys
import xml.etree.ElementTree as ET
import zlib

TYPES = {"Float64": "d", "Float32": "f", "Int64": "q", "Int32": "i", "UInt64": "Q", "UInt32": "I", "UInt8": "B",
         "Int8": "b", "Int16": "h", "UInt16": "H"}
# VTK cell types with a 2D face: its corner count (the corners come first in every VTK cell)
FACES = {5: 3, 22: 3, 9: 4, 23: 4, 28: 4}  # triangle, quadratic triangle, quad, quad8, biquadratic quad
VOLUMES = {10, 12, 13, 14, 24, 25, 29}     # tetrahedra, hexahedra, wedges, pyramids (first and second order)
COMPONENT_NAMES = {2: "xy", 3: "xyz", 6: ["xx", "yy", "zz", "xy", "yz", "xz"]}


# --- reading ---------------------------------------------------------------------------------

def _b64_chars(nbytes):
    return -(-nbytes // 3) * 4


def _decode(blob, header, compressed, base64_text):
    """One array's bytes from the start of its block (raw bytes, or base64 text that may run on
    into the next arrays): header [+ zlib block table] + data."""
    hs = struct.calcsize(header)
    if base64_text:
        blob = blob.lstrip()
        if not compressed:  # header and data encoded together
            size = struct.unpack_from("<" + header, base64.b64decode(blob[:_b64_chars(hs)]))[0]
            return base64.b64decode(blob[:_b64_chars(hs + size)])[hs:hs + size]
        # the header (with its block table) and the data are encoded separately
        nblocks = struct.unpack_from("<" + header, base64.b64decode(blob[:_b64_chars(hs)]))[0]
        head_chars = _b64_chars((3 + nblocks) * hs)
        table = struct.unpack_from("<%d%s" % (3 + nblocks, header), base64.b64decode(blob[:head_chars]))
        body = base64.b64decode(blob[head_chars:head_chars + _b64_chars(sum(table[3:]))])
    else:
        if not compressed:
            size = struct.unpack_from("<" + header, blob)[0]
            return blob[hs:hs + size]
        nblocks = struct.unpack_from("<" + header, blob)[0]
        table = struct.unpack_from("<%d%s" % (3 + nblocks, header), blob)
        start = (3 + nblocks) * hs
        body = blob[start:start + sum(table[3:])]
    out, pos = [], 0
    for size in table[3:]:
        out.append(zlib.decompress(body[pos:pos + size]))
        pos += size
    return b"".join(out)


def read_vtu(path):
    """The arrays of a .vtu: {'Points', 'connectivity', 'offsets', 'types', 'point_data': {name: (values,
    components)}, 'cell_data': {...}}, each values a flat tuple (components interleaved)."""
    raw = open(path, "rb").read()
    marker = raw.find(b"<AppendedData")
    end_tag = b"</AppendedData>"
    head = raw if marker < 0 else raw[:marker] + raw[raw.rindex(end_tag) + len(end_tag):]
    root = ET.fromstring(head)
    if root.get("type") != "UnstructuredGrid":
        sys.exit(f"{path}: not a VTK UnstructuredGrid file (type '{root.get('type')}')")
    if root.get("byte_order", "LittleEndian") != "LittleEndian":
        sys.exit(f"{path}: big-endian .vtu files are not supported here")
    header = "Q" if root.get("header_type", "UInt32") == "UInt64" else "I"
    compressor = root.get("compressor")
    if compressor and compressor != "vtkZLibDataCompressor":
        sys.exit(f"{path}: compressor '{compressor}' is not supported here (zlib only)")
    appended, appended_b64 = None, False
    if marker >= 0:
        tag_end = raw.index(b">", marker)
        appended_b64 = b'encoding="base64"' in raw[marker:tag_end]
        appended = raw[raw.index(b"_", tag_end) + 1:raw.rindex(end_tag)]
    arrays = {"point_data": {}, "cell_data": {}}
    piece = root.find("UnstructuredGrid/Piece")
    if piece is None or len(root.findall("UnstructuredGrid/Piece")) != 1:
        sys.exit(f"{path}: expected one Piece")
    for section in ("PointData", "CellData", "Points", "Cells"):
        for da in piece.findall(section + "/DataArray"):
            fmt = TYPES[da.get("type")]
            form = da.get("format")
            if form == "appended":
                off = int(da.get("offset"))
                data = _decode(appended[off:], header, bool(compressor), appended_b64)
            elif form == "binary":
                data = _decode(b"".join((da.text or "").encode().split()), header, bool(compressor), True)
            elif form == "ascii":
                data = None
                values = tuple(float(x) if fmt in "df" else int(x) for x in (da.text or "").split())
            else:
                sys.exit(f"{path}: DataArray format '{form}' is not supported here")
            if data is not None:
                values = struct.unpack("<%d%s" % (len(data) // struct.calcsize(fmt), fmt), data)
            name, ncomp = da.get("Name"), int(da.get("NumberOfComponents", "1"))
            if section == "PointData":
                arrays["point_data"][name] = (values, ncomp)
            elif section == "CellData":
                arrays["cell_data"][name] = (values, ncomp)
            else:
                arrays["Points" if section == "Points" else name] = values
    return arrays


def read_pvd(path, frame):
    """The .vtu of a .pvd's frame (-1: the last) and its time."""
    root = ET.parse(path).getroot()
    sets = root.findall("Collection/DataSet")
    if not sets:
        sys.exit(f"{path}: no DataSet in the collection")
    if not -len(sets) <= frame < len(sets):
        sys.exit(f"{path}: --frame {frame}: the series has {len(sets)} frames")
    ds = sets[frame]
    return os.path.join(os.path.dirname(path), ds.get("file")), float(ds.get("timestep", "nan"))


# --- drawing ---------------------------------------------------------------------------------

def mesh_faces(arrays, path):
    """Per cell, the corners of a 2D cell (a tuple), or None for a cell not drawn (points, lines)."""
    conn, offsets, types = arrays["connectivity"], arrays["offsets"], arrays["types"]
    faces, begin = [], 0
    for end, kind in zip(offsets, types):
        if kind in FACES:
            faces.append(tuple(conn[begin:begin + FACES[kind]]))
        elif kind == 7:  # polygon
            faces.append(tuple(conn[begin:end]))
        elif kind in VOLUMES:
            sys.exit(f"{path}: a 3D mesh; this renders 2D meshes only (open 3D results in ParaView)")
        else:
            faces.append(None)  # points and lines: not drawn
        begin = end
    if not any(faces):
        sys.exit(f"{path}: no 2D cells to draw")
    return faces


def field_values(np, arrays, name, component):
    """(values, 'point' or 'cell', label) of a field, the magnitude of a vector unless component."""
    for where in ("point", "cell"):
        if name in arrays[where + "_data"]:
            values, ncomp = arrays[where + "_data"][name]
            v = np.asarray(values, dtype=float).reshape(-1, ncomp)
            if component is not None:
                if not 0 <= component < ncomp:
                    sys.exit(f"--component {component}: '{name}' has {ncomp} components")
                names = COMPONENT_NAMES.get(ncomp)
                return v[:, component], where, f"{name}$_{{{names[component]}}}$" if names else f"{name}[{component}]"
            if ncomp == 1:
                return v[:, 0], where, name
            return np.linalg.norm(v, axis=1), where, f"|{name}|"
    point, cell = (", ".join(sorted(arrays[k])) or "none" for k in ("point_data", "cell_data"))
    sys.exit(f"no field '{name}' (point fields: {point}; cell fields: {cell})")


def default_field(arrays):
    point, cell = arrays["point_data"], arrays["cell_data"]
    for name in ("u", "displacement"):
        if name in point:
            return name
    if point:
        return next(iter(point))
    if cell:  # a mesh alone (fem convert): its cell tags, unless it has another cell field
        return next((n for n in cell if n != "tag"), next(iter(cell)))
    sys.exit("the file has no fields to draw")


def figure_size(width, aspect, title):
    aspect = min(max(aspect, 0.25), 2.5)
    return width, round(width * (0.8 * aspect + 0.12)) + (round(0.06 * width) if title else 0)


def render(arrays, png, field=None, component=None, units=None, width=800, title=None, levels=0,
           warp="auto", displacement="displacement", path="", cmap="viridis"):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.collections import LineCollection
    from matplotlib.tri import Triangulation

    pts = np.asarray(arrays["Points"], dtype=float).reshape(-1, 3)
    faces = mesh_faces(arrays, path)
    field = field or default_field(arrays)
    values, where, label = field_values(np, arrays, field, component)
    if units:
        label += f" [{units}]"

    # the deformed shape: x + scale u
    xy = pts[:, :2].copy()
    scale, u = 0.0, None
    if displacement in arrays["point_data"] and warp not in ("0", "none"):
        vals, ncomp = arrays["point_data"][displacement]
        u = np.asarray(vals, dtype=float).reshape(-1, ncomp)[:, :2]
        umax = float(np.max(np.linalg.norm(u, axis=1))) if len(u) else 0.0
        extent = float(np.max(np.ptp(xy, axis=0)))
        scale = (0.1 * extent / umax if umax > 0 else 0.0) if warp == "auto" else float(warp)
    drawn = xy + scale * u if scale else xy

    triangles, owner = [], []
    for c, f in enumerate(faces):
        if f:
            for k in range(1, len(f) - 1):
                triangles.append((f[0], f[k], f[k + 1]))
                owner.append(c)
    tri = Triangulation(drawn[:, 0], drawn[:, 1], np.asarray(triangles))

    # boundary edges: corner pairs of exactly one face
    edges = {}
    for f in faces:
        if f:
            for a, b in zip(f, f[1:] + f[:1]):
                key = (min(a, b), max(a, b))
                edges[key] = edges.get(key, 0) + 1
    boundary = [e for e, n in edges.items() if n == 1]

    used = np.unique(np.asarray(triangles))
    shown = np.vstack([drawn[used], xy[used]]) if scale else drawn[used]  # with the undeformed shape
    lo, hi = shown.min(axis=0), shown.max(axis=0)
    dx, dy = hi - lo
    w_px, h_px = figure_size(width, dy / dx if dx > 0 else 1.0, title)
    dpi = w_px / 5.0  # the same look at every width: a 5-inch-wide figure
    fig = plt.figure(figsize=(w_px / dpi, h_px / dpi), dpi=dpi, layout="constrained")
    ax = fig.add_subplot()
    if where == "point":
        if levels > 0 and np.ptp(values) > 1e-12 * max(1.0, float(np.max(np.abs(values)))):  # not constant
            art = ax.tricontourf(tri, values, levels=levels, cmap=cmap)
            ax.tricontour(tri, values, levels=art.levels, colors="k", linewidths=0.3, alpha=0.5)
        else:
            art = ax.tripcolor(tri, values, shading="gouraud", cmap=cmap)
    else:
        art = ax.tripcolor(tri, facecolors=values[np.asarray(owner)], shading="flat", cmap=cmap)
    if scale:
        ax.add_collection(LineCollection([xy[list(e)] for e in boundary], colors="0.5", linewidths=0.6,
                                         linestyles=(0, (4, 3))))
    ax.add_collection(LineCollection([drawn[list(e)] for e in boundary], colors="k", linewidths=0.8))
    ax.set_aspect("equal")
    pad = 0.02 * max(dx, dy)
    ax.set_xlim(lo[0] - pad, hi[0] + pad)
    ax.set_ylim(lo[1] - pad, hi[1] + pad)
    ax.tick_params(labelsize=8)
    bar = fig.colorbar(art, ax=ax, shrink=0.9)
    bar.set_label(label)
    bar.ax.tick_params(labelsize=8)
    if scale:
        ax.set_xlabel(f"deformed by {displacement} × {scale:.3g} (dashed: undeformed)", fontsize=8)
    if title:
        ax.set_title(title)
    fig.savefig(png, dpi=dpi)
    plt.close(fig)
    return label, float(np.min(values)), float(np.max(values)), scale, (w_px, h_px)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n".join(__doc__.splitlines()[2:]))
    p.add_argument("input", help="a .vtu, or a .pvd (its last frame)")
    p.add_argument("png", help="the PNG to write")
    p.add_argument("--field", help="point or cell field (default: u, displacement, or the first point field)")
    p.add_argument("--component", type=int, help="one component of a vector field (default: its magnitude)")
    p.add_argument("--units", help="the field's units, shown on the colour bar")
    p.add_argument("--width", type=int, default=800, help="image width in pixels (default 800)")
    p.add_argument("--title", help="a title above the picture (a .pvd's default: the frame's time)")
    p.add_argument("--levels", type=int, default=0, help="filled contours with N levels (default: smooth)")
    p.add_argument("--warp", default="auto",
                   help="deform by the displacement times SCALE: auto (10%% of the bounding box), 0: not at all")
    p.add_argument("--displacement", default="displacement", help="the point field to deform by")
    p.add_argument("--frame", type=int, default=-1, help="a .pvd's frame (default: the last)")
    args = p.parse_args()
    if args.width < 16:
        p.error("--width: at least 16 pixels")
    if args.warp not in ("auto", "none"):
        try:
            float(args.warp)
        except ValueError:
            p.error(f"--warp '{args.warp}': a number, auto or 0")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        # Debian's python3-matplotlib is /usr/bin/python3's: run there when another python3 came first
        system = "/usr/bin/python3"
        if os.path.exists(system) and os.path.realpath(sys.executable) != os.path.realpath(system):
            os.execv(system, [system, os.path.abspath(__file__), *sys.argv[1:]])
        sys.exit("render_vtu.py needs matplotlib (Debian: python3-matplotlib; scripts/install-deps.sh plot)")
    vtu, title = args.input, args.title
    if vtu.lower().endswith(".pvd"):
        vtu, time = read_pvd(vtu, args.frame)
        if title is None and not math.isnan(time):
            title = f"t = {time:g}"
    arrays = read_vtu(vtu)
    label, lo, hi, scale, (w, h) = render(arrays, args.png, args.field, args.component, args.units, args.width,
                                          title, args.levels, args.warp, args.displacement, vtu)
    warped = f", deformed × {scale:.3g}" if scale else ""
    print(f"{args.png}: {label} from {lo:.4g} to {hi:.4g}{warped}, {w}x{h}")


if __name__ == "__main__":
    main()
