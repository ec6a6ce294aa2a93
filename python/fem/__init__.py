"""fem: finite-element kernels (mesh, assembly, factorize-and-solve, Newton) sharing one store.

The store is the one place where state lives: meshes, patterns, matrices and cached
factorizations are entries under string keys, the same entries that C++ kernels and C ABI users
(ctypes, Julia) in this process see. Arrays read from it are read-only numpy views without a
copy; putting a value copies it in (entries are immutable).

    import fem
    fem.generate_mesh("gen:square-tri3:64", "mesh")
    V = fem.FunctionSpace("mesh", 1)
    a = fem.Assembler(V)
    bc = fem.DirichletBC(V, {"all": 0.0})
    A, b = bc.apply(a.matrix(fem.Diffusion()), a.vector(fem.Source(1.0)))
    fem.store.put("A", A)
    u = fem.solve("A", b)            # factorized once; further solves reuse the factorization
"""
from dataclasses import dataclass
from typing import Any

from ._fem import (  # noqa: F401  (the public API)
    Assembler as _Assembler,
    CsrMatrix,
    CsrPattern,
    DirichletBC,
    Error,
    Factorization,
    FunctionSpace,
    InvalidArgument,
    InvalidKey,
    KeyError,
    LockingWarning,
    Mesh,
    NotCompiled,
    NumericalError,
    ParseError,
    Store,
    TypeError,
    backends,
    check_mesh,
    factor_key,
    factorization,
    factorize,
    generate_mesh,
    newton_solve,
    read_mesh,
    solve,
    solve_transpose,
    store,
    _Table,
)

__all__ = [
    "Assembler", "CsrMatrix", "CsrPattern", "Diffusion", "DirichletBC", "Elasticity", "Error",
    "Factorization", "FunctionSpace", "HashTable", "InvalidArgument", "InvalidKey", "KeyError", "LockingWarning", "Mass", "Mesh",
    "Neumann", "NotCompiled", "NumericalError", "ParseError", "Source", "Store", "TypeError",
    "backends", "check_mesh", "factor_key", "factorization", "factorize", "generate_mesh", "newton_solve",
    "read_mesh", "solve", "solve_transpose", "store",
]


# --- the library's forms ------------------------------------------------------------------
# A coefficient is a number, one value per cell (an array), {tag or physical name: value} (with
# "all" for the rest), or a function of x: f(x) with x an (n, gdim) array, returning n values.
# Functions are called back from the kernels (the GIL taken for the call): per-cell arrays are
# the fast way to vary a coefficient.

@dataclass
class Diffusion:
    """-div(k ∇u): ∫ k ∇u·∇v."""
    k: Any = 1.0


@dataclass
class Mass:
    """∫ rho u·v."""
    rho: Any = 1.0


@dataclass
class Elasticity:
    """Linear elasticity ∫ σ(u):ε(v); in 2D plane strain (default) or plane stress."""
    E: Any = 1.0
    nu: Any = 0.3
    plane: str = "strain"


@dataclass
class Source:
    """∫ f·v: f a number (per component) or a function of x (n values, or (n, components))."""
    f: Any = 0.0


@dataclass
class Neumann:
    """∫_Γ g·v over the facets `where` (a tag, a physical name, a list of them, or "all")."""
    where: Any
    g: Any = 0.0


class Assembler(_Assembler):
    """Assembles the library's forms on a space; its plan (pattern, element→slot map, colouring)
    is cached in the store, so a second Assembler of the same space builds nothing."""

    def matrix(self, form, out=None):
        """A new fem.CsrMatrix of the form, or its values written into `out` (nnz float64)."""
        if isinstance(form, Diffusion):
            return self.diffusion(form.k, out=out)
        if isinstance(form, Mass):
            return self.mass(form.rho, out=out)
        if isinstance(form, Elasticity):
            return self.elasticity(form.E, form.nu, plane=form.plane, out=out)
        raise InvalidArgument(f"not a bilinear form of the library: {form!r} (Diffusion, Mass, Elasticity)")

    def locking(self, form):
        """The volumetric-locking indicator of an Elasticity form on this space (a dict: lambda_over_mu,
        h_over_L, indicator, locks, warning); matrix() warns with fem.LockingWarning when it locks."""
        if not isinstance(form, Elasticity):
            raise InvalidArgument(f"locking: an Elasticity form, not {form!r}")
        return self.elasticity_locking(form.E, form.nu, plane=form.plane)

    def vector(self, form, out=None):
        """A new vector of the form, or the form added to `out`."""
        if isinstance(form, Source):
            return self.source(form.f, out=out)
        if isinstance(form, Neumann):
            return self.neumann(form.where, form.g, out=out)
        raise InvalidArgument(f"not a linear form of the library: {form!r} (Source, Neumann)")

    def cell_gradient(self, form, w):
        """d/dk_c Σ_s w_s A_s for a per-cell coefficient of Diffusion or Mass (one value per cell)."""
        if isinstance(form, Diffusion):
            return self.diffusion_cell_gradient(w)
        if isinstance(form, Mass):
            return self.mass_cell_gradient(w)
        raise InvalidArgument(f"cell_gradient: Diffusion or Mass, not {form!r}")



# --- the hash table as an op (docs/hash_table.md) ----------------------------------------------

def _is_torch(x):
    return type(x).__module__.startswith("torch")


class HashTable:
    """The connectivity's hash table as an op, for your own indexing work (dedupe and number
    edges, faces, contact pairs; map global ids to local ones):

        t = fem.HashTable("int64", "int32", capacity=1000)
        ids, is_new = t.insert_unique(keys)       # numbered in order of first occurrence
        values, found = t.find(queries)

    key_dtype "int32", "int64" or "pair" (keys of shape (n, 2): two int64 halves, as the
    connectivity's edge and face keys: low, high); value_dtype "int32", "int64" or "float64"; the
    key -1 is reserved, and -1 and -2 as a pair's high half. Arrays are numpy arrays or PyTorch
    tensors of exactly those dtypes (no silent cast): CPU tensors, and CUDA tensors on the
    device of a device="cuda" table, which the table takes in place through DLPack. Results come
    back as the input's kind, on its device. `key=` publishes the table in the
    store, where C finds it (fem/gpu/c_api.h); HashTable.open(key) takes one made elsewhere. A
    table keeps living for this object after its entry is erased or replaced."""

    def __init__(self, key_dtype="int64", value_dtype="int64", capacity=0, load_factor=0.5, device="cpu", key=None,
                 _table=None):
        self._t = _table if _table is not None else _Table(key_dtype, value_dtype, capacity, load_factor, device)
        if key is not None:
            self._t.publish(key)

    @classmethod
    def open(cls, key):
        """The table published under `key` (by Python, C or C++)."""
        return cls(_table=_Table._open(key))

    def publish(self, key):
        self._t.publish(key)

    @property
    def key_dtype(self):
        return self._t.key_dtype

    @property
    def value_dtype(self):
        return self._t.value_dtype

    @property
    def capacity(self):
        return self._t.capacity

    @property
    def bytes(self):
        return self._t.bytes

    def __len__(self):
        return len(self._t)

    def __repr__(self):
        return f"HashTable({self.key_dtype!r} -> {self.value_dtype!r}, {len(self)} keys)"

    # PyTorch tensors go through DLPack, where they are: CPU ones, and CUDA ones on the table's
    # device, taken by the table in place. Their capsules are made for the table's stream, so
    # that it waits for the work PyTorch queued on them; every op returns when done.
    @staticmethod
    def _any_torch(*xs):
        return any(_is_torch(x) for x in xs)

    def _dl(self, x):
        if not _is_torch(x):  # a numpy array beside a tensor
            import numpy
            import torch
            x = torch.from_numpy(numpy.ascontiguousarray(x))
        if x.device.type == "cuda":
            return x.__dlpack__(stream=self._t.stream or None)
        return x.__dlpack__()

    def _empty(self, like, n, dtype):
        import torch
        return torch.empty(n, dtype=getattr(torch, dtype), device=like.device)

    def insert(self, keys, values):
        """Insert or assign keys[i] -> values[i]."""
        if self._any_torch(keys, values):
            self._t.insert_dl(self._dl(keys), self._dl(values))
        else:
            self._t.insert(keys, values)

    def insert_unique(self, keys):
        """(ids, is_new): new keys numbered len(self), len(self) + 1, ... in order of first occurrence."""
        if not _is_torch(keys):
            return self._t.insert_unique(keys)
        import torch
        ids = self._empty(keys, len(keys), self.value_dtype)
        is_new = self._empty(keys, len(keys), "uint8")
        self._t.insert_unique_dl(self._dl(keys), self._dl(ids), self._dl(is_new))
        return ids, is_new.view(torch.bool)

    def find(self, keys, fill=0, out=None):
        """(values, found); a missing key's value is `fill` (None: all ones, -1 or a NaN).
        out=(values, found) reuses the caller's arrays (numpy, or tensors: found of uint8 or bool),
        batch after batch."""
        if not _is_torch(keys):
            return self._t.find(keys, fill, out)
        import torch
        if out is None:
            values, found = self._empty(keys, len(keys), self.value_dtype), self._empty(keys, len(keys), "uint8")
        else:
            values, found = out
        flags = found.view(torch.uint8) if found.dtype == torch.bool else found
        self._t.find_dl(self._dl(keys), self._dl(values), self._dl(flags))
        found = flags.view(torch.bool)
        if fill is not None:
            values[~found] = fill
        return values, found

    def export(self):
        """(keys, values) of every entry, sorted by key."""
        return self._t.export()
