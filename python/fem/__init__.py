"""fem: finite-element kernels (mesh, assembly, factorize-and-solve, Newton, eigenvalues) sharing one store.

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
import itertools
import warnings
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
    MixedSpace,
    NotCompiled,
    ProjectionStepper,
    NumericalError,
    ParseError,
    Store,
    TypeError,
    backends,
    flow_sizes,
    force,
    navier_stokes,
    solve_flow,
    stokes,
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
    _FirstOrderStepper,
    _SecondOrderStepper,
    _Table,
    _count_eigenvalues_below,
    _eigsh,
)

__all__ = [
    "Assembler", "CsrMatrix", "CsrPattern", "Diffusion", "DirichletBC", "DynamicsStepper", "Elasticity", "Error",
    "Factorization", "FunctionSpace", "HashTable", "InvalidArgument", "InvalidKey", "KeyError", "LockingWarning", "Mass", "Mesh",
    "MixedSpace", "Neumann", "NotCompiled", "NumericalError", "ParseError", "ProjectionStepper", "Source", "Store",
    "TimeStepper", "TypeError", "backends", "check_mesh", "count_eigenvalues_below", "eigsh", "factor_key",
    "factorization", "factorize", "flow_sizes", "force", "generate_mesh", "navier_stokes", "newton_solve", "read_mesh",
    "solve", "solve_flow", "solve_transpose", "stokes", "store",
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


# --- eigenvalues: K x = λ M x by shift-invert Lanczos on the factorization cache (fem::eigen) ---

_temporary_keys = itertools.count()


class _Matrices:
    """K and M as store keys: keys as given, other matrices published under temporary keys that
    are erased on exit (with everything derived from them: shifted matrices, factorizations)."""

    def __init__(self, K, M):
        self._made = []
        try:
            self.K = self._key(K, "K")
            self.n = store[self.K].shape[0]
            if M is None:
                import scipy.sparse
                M = scipy.sparse.identity(self.n, format="csr")
            self.M = self._key(M, "M")
        except BaseException:
            self.__exit__()
            raise

    def _key(self, A, role):
        if isinstance(A, str):
            return A
        if not isinstance(A, CsrMatrix) and not hasattr(A, "tocsr"):
            import numpy
            import scipy.sparse
            a = numpy.asarray(A)
            if a.ndim != 2:
                raise InvalidArgument(f"eigsh: {role} must be a store key, a sparse matrix or a 2-D array, "
                                      f"not {type(A).__name__} of {a.ndim} dimensions")
            A = scipy.sparse.csr_matrix(a)
        key = f"fem.eigsh/{next(_temporary_keys)}/{role}"
        self._made.append(key)
        store.put(key, A)
        return key

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for key in self._made:
            if key in store:
                store.erase(key)


def _constrained_dofs(constrained):
    if constrained is None or isinstance(constrained, DirichletBC):
        return None if constrained is None else constrained.dofs
    return constrained


def eigsh(K, k=None, M=None, sigma=None, which="LM", v0=None, ncv=None, maxiter=None, tol=0,
          return_eigenvectors=True, *, interval=None, constrained=None, lumped=False, verify=True,
          dense_below=200, return_info=False):
    """Eigenpairs of K x = λ M x (K, M symmetric; M positive definite on the free unknowns), with
    scipy.sparse.linalg.eigsh's arguments and results: (w, v), w ascending, v of shape (n, k),
    M-orthonormal.

    K and M: store keys, SciPy sparse matrices, fem.CsrMatrix or 2-D arrays (published under
    temporary keys and erased afterwards); M=None is the identity. Which eigenvalues:
      sigma=None        the k smallest (which "LM", the default, "SM" or "SA"): K positive
                        semi-definite, a stiffness. Unlike SciPy, never the largest.
      sigma=s           the k nearest s (SciPy's shift-invert mode, which="LM").
      interval=(a, b)   every eigenvalue in [a, b] (k=None), or the lowest k of them; the Sturm
                        count says how many there are (info["sturm_count"]).
    k: 6 by default (interval: all). constrained: unknowns eliminated (homogeneous Dirichlet
    conditions: an array of indices or a fem.DirichletBC), where the vectors are zero; no
    eigenvalue of theirs exists. lumped: M replaced by its row sums. tol: the Ritz values'
    relative tolerance (0: the library's 1e-10). ncv: the Lanczos basis size; maxiter: its
    restarts (1000); v0: the start vector (n values). Problems of at most dense_below free
    unknowns are solved densely. verify: Sturm counts (LDLᵀ inertia) check that no eigenvalue in
    the window of the results was missed, and missed copies of multiple ones are found.

    return_info=True adds a dict: sturm_count (nearest: eigenvalues below sigma; interval: in
    it; -1 otherwise), missing, converged, residuals (backward errors), residual_max,
    orthogonality_max, shift, method, backend, restarts, operator_applications,
    sturm_factorizations, factor_nonzeros, factorize_seconds, solve_seconds, log. Results that
    did not converge or miss eigenvalues are returned with a RuntimeWarning, not raised.
    """
    if interval is not None:
        if sigma is not None:
            raise InvalidArgument("eigsh: sigma and interval together; give one")
        try:
            lower, upper = (float(x) for x in interval)
        except (TypeError, ValueError):
            raise InvalidArgument(f"eigsh: interval must be (lower, upper), not {interval!r}") from None
        mode, shift = "interval", 0.0
    elif sigma is None:
        if which not in ("LM", "SM", "SA"):
            raise InvalidArgument(f"eigsh: which={which!r} without sigma: fem.eigsh computes the smallest "
                                  "eigenvalues ('LM', 'SM' or 'SA'), the nearest a sigma, or an interval")
        mode, shift, lower, upper = "smallest", 0.0, 0.0, 0.0
    else:
        if which != "LM":
            raise InvalidArgument(f"eigsh: which={which!r} with sigma: only 'LM' (the k nearest sigma)")
        mode, shift, lower, upper = "nearest", float(sigma), 0.0, 0.0
    if tol < 0:
        raise InvalidArgument(f"eigsh: tol {tol} is negative")
    with _Matrices(K, M) as m:
        if k is None:
            k = m.n if mode == "interval" else 6
        w, v, info = _eigsh(m.K, m.M, mode, int(k), shift, lower, upper, _constrained_dofs(constrained),
                            bool(lumped), float(tol) if tol > 0 else 1e-10, 1000 if maxiter is None else int(maxiter),
                            0 if ncv is None else int(ncv), bool(verify), v0, int(dense_below))
    if not info["converged"] or info["missing"]:
        detail = "; ".join(info["log"])
        warnings.warn(f"eigsh: {len(w)} eigenpairs, converged={info['converged']}, "
                      f"{info['missing']} missing{': ' + detail if detail else ''}", RuntimeWarning, stacklevel=2)
    result = (w, v) if return_eigenvectors else (w,)
    if return_info:
        result += (info,)
    return result[0] if len(result) == 1 else result


def count_eigenvalues_below(K, sigma, M=None, *, constrained=None, lumped=False):
    """The number of eigenvalues of K x = λ M x below sigma (Sylvester's inertia of an LDLᵀ of
    K − σM on the free unknowns; K and M as for eigsh)."""
    with _Matrices(K, M) as m:
        return _count_eigenvalues_below(m.K, m.M, float(sigma), _constrained_dofs(constrained), bool(lumped))


# --- time integration: fem::time's steppers on the factorization cache (docs/time.md) ----------

_time_names = itertools.count()


def _as_scipy(A, role, who):
    import numpy
    import scipy.sparse
    if isinstance(A, str):
        A = store[A]
    if isinstance(A, CsrMatrix):
        return A.to_scipy()
    if hasattr(A, "tocsr"):
        return A.tocsr()
    a = numpy.asarray(A)
    if a.ndim != 2:
        raise InvalidArgument(f"{who}: {role} must be a store key, a sparse matrix or a 2-D array, "
                              f"not {type(A).__name__} of {a.ndim} dimensions")
    return scipy.sparse.csr_matrix(a)


class _Stepper:
    """What TimeStepper and DynamicsStepper share: M and K as store keys of one pattern (two keys
    as given; anything else published as <name>/M and <name>/K on the union of their patterns,
    explicit zeros kept), the entries made, and close()."""

    def _matrices(self, M, K, name, who):
        self._who = who
        self._made_name = name is None
        self.name = f"fem.{who}/{next(_time_names)}" if name is None else str(name)
        self._keys = []
        if isinstance(M, str) and isinstance(K, str):
            return M, K
        import numpy
        import scipy.sparse
        k = _as_scipy(K, "K", who)
        m = scipy.sparse.identity(k.shape[0], format="csr") if M is None else _as_scipy(M, "M", who)
        if m.shape != k.shape:
            raise InvalidArgument(f"{who}: M is {m.shape[0]}x{m.shape[1]}, K {k.shape[0]}x{k.shape[1]}")
        m, k = m.tocsr(), k.tocsr()
        m.sum_duplicates()
        k.sum_duplicates()
        if not (m.nnz == k.nnz and numpy.array_equal(m.indptr, k.indptr) and numpy.array_equal(m.indices, k.indices)):
            def ones(A):
                return scipy.sparse.csr_matrix((numpy.ones(A.nnz), A.indices, A.indptr), shape=A.shape)
            u = (ones(m) + ones(k)).tocsr()
            u.sort_indices()
            rows = numpy.repeat(numpy.arange(u.shape[0]), numpy.diff(u.indptr))

            def on_union(A):
                values = numpy.asarray(A[rows, u.indices], dtype=float).ravel()
                return scipy.sparse.csr_matrix((values, u.indices.copy(), u.indptr.copy()), shape=u.shape)
            m, k = on_union(m), on_union(k)
        keys = (f"{self.name}/M", f"{self.name}/K")
        store.put(keys[0], m)
        store.put(keys[1], k)
        self._keys += keys
        return keys

    def close(self):
        """Drop the stepper and erase what it published: the matrices it copied in and, under its
        default name, its schemes' matrices (<name>/A/...) and their factorizations."""
        self._s = None
        keys = list(getattr(self, "_keys", ()))
        if getattr(self, "_made_name", False):
            keys += store.keys(self.name + "/")
        for key in keys:
            if key in store:
                store.erase(key)
        self._keys = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def _stepper(self):
        if self._s is None:
            raise InvalidArgument(f"{self._who}: closed")
        return self._s

    @property
    def t(self):
        """The current time."""
        return self._stepper().t

    @property
    def u(self):
        """The current state (a copy)."""
        return self._stepper().u

    @property
    def report(self):
        """What the stepper did: scheme, t, accepted, rejected, dt_min, dt_max (of the accepted
        steps), solves, systems (matrices made), distinct_dts, factorize_seconds, solve_seconds."""
        return self._stepper().report


class TimeStepper(_Stepper):
    """M u' + K u = f(t), u = g(t) on Dirichlet unknowns, stepped by you (fem::time):

        s = fem.TimeStepper(M, K, scheme="cn", dt=0.01, u0=u0, load=lambda t: f(t))
        while s.t < 1:
            s.step()               # returns the step taken
        s.advance_to(2.0, callback=lambda s: print(s.t, s.u.max()))

    M, K: store keys (used as they are: one pattern), SciPy sparse matrices, fem.CsrMatrix or 2-D
    arrays (published under <name>/M, <name>/K on the union of their patterns); M=None is the
    identity. scheme: "be" (backward Euler), "cn" (Crank-Nicolson; rannacher=N: its first N steps
    as two backward-Euler half steps each), "bdf2" or "theta" (theta in [0.5, 1]). u0: the state
    at t0, taken as given (default zero). load(t): the n values of f(t) (None: none).
    dirichlet: a fem.DirichletBC (its values, constant in t), or (dofs, values) with values a
    function of t returning len(dofs) values, an array or a number. tolerance > 0: adaptive steps
    (step doubling), each step's error |e_i| <= atol + tolerance*max|u| (atol None:
    tolerance*max|u0|, or tolerance when u0 = 0), dt on the ladder dt*2^k within [dt_min, dt_max]
    (dt_min 0: dt/1024). Each scheme's matrix is
    published as <name>/A/<cM>/<cK> and factorized through the store's cache: a fixed-dt run
    factorizes once. Steps release the GIL; the callbacks take it back, and an exception raised
    by one stops the step (the state stays as it was) and is raised."""

    def __init__(self, M, K, scheme="be", dt=None, u0=None, *, load=None, dirichlet=None, theta=1.0,
                 rannacher=0, tolerance=0.0, atol=None, dt_min=0.0, dt_max=float("inf"), t0=0.0, name=None):
        import numpy
        self._s = None
        if dt is None:
            raise InvalidArgument("TimeStepper: dt is required (the first step)")
        Mk, Kk = self._matrices(M, K, name, "TimeStepper")
        dofs, values = None, None
        if isinstance(dirichlet, DirichletBC):
            dofs, values = dirichlet.dofs, dirichlet.values
        elif dirichlet is not None:
            try:
                dofs, values = dirichlet
            except (TypeError, ValueError):
                raise InvalidArgument("TimeStepper: dirichlet must be a fem.DirichletBC or (dofs, values), "
                                      f"not {type(dirichlet).__name__}") from None
            dofs = numpy.asarray(dofs)
            if dofs.ndim != 1:
                raise InvalidArgument(f"TimeStepper: the Dirichlet unknowns must be a vector, not {dofs.ndim}-D")
            if values is not None and not callable(values):
                values = numpy.broadcast_to(numpy.asarray(values, dtype=float), dofs.shape).copy()
        if dofs is not None and len(dofs) > 1 and numpy.any(numpy.diff(dofs) <= 0):
            order = numpy.argsort(dofs, kind="stable")
            if numpy.any(numpy.diff(dofs[order]) == 0):
                raise InvalidArgument("TimeStepper: a Dirichlet unknown is given twice")
            dofs = dofs[order]
            if callable(values):
                given = values
                values = lambda t: numpy.asarray(given(t), dtype=float)[order]  # noqa: E731
            elif values is not None:
                values = values[order]
        try:
            self._s = _FirstOrderStepper(self.name, Mk, Kk, str(scheme), float(dt), u0, load, dofs, values,
                                         float(theta), int(rannacher), float(tolerance),
                                         -1.0 if atol is None else float(atol), float(dt_min),
                                         float(dt_max), float(t0))
        except BaseException:
            self.close()
            raise

    @property
    def dt(self):
        """The step the next step() tries."""
        return self._stepper().dt

    def set_stiffness(self, stiffness):
        """K(t) from now on: stiffness(t) returns the values of K's stored pattern at t (the
        order of fem.store.get(self.name + "/K").data when K was given as a matrix, of the key's
        matrix otherwise); K(t_n) enters the explicit part, K(t_{n+1}) the matrix, refactorized
        every step on one symbolic analysis. None: K as it is in the store."""
        self._stepper().set_stiffness(stiffness)

    def set_nonlinear(self, residual, jacobian, lag=True):
        """A part of the stiffness that depends on u: M u' + K u + N(t, u) = f(t). residual(t, u)
        returns N(t, u) (an array of the unknowns' size), jacobian(t, u) the values of dN/du on
        K's stored pattern (the order of fem.store.get(self.name + "/K").data when K was given as a
        matrix). Each step is then solved by Newton's method; with lag, its Jacobian is reused
        across steps while the lagged iterations converge fast. A step whose Newton solve fails
        is retried at half the step. None for both: linear again. The report counts
        newton_iterations, jacobians and newton_failures."""
        self._stepper().set_nonlinear(residual, jacobian, bool(lag))

    def step(self, max_dt=float("inf")):
        """One accepted step of at most max_dt (adaptive: retried at half the step until its error
        passes); returns the step taken."""
        return self._stepper().step(float(max_dt))

    def advance_to(self, t_end, callback=None):
        """Steps until t_end (the last step cut to land on it); callback(self) after every step."""
        self._stepper().advance_to(float(t_end), None if callback is None else (lambda: callback(self)))
        return self


class DynamicsStepper(_Stepper):
    """M u'' + C u' + K u = f(t), C = a M + b K (rayleigh=(a, b)), u = 0 at the `fixed` unknowns,
    stepped by you (fem::time), with a fixed dt or adaptive steps (tolerance > 0: each step's local
    error (beta - 1/6) h^2 |a_{n+1} - a_n| within atol + tolerance max|u|, dt on the ladder dt 2^k
    within [dt_min, dt_max], one factorization per step size):

        s = fem.DynamicsStepper(M, K, "newmark", dt=1e-3, u0=u0, v0=None)
        for _ in range(1000):
            s.step()
        s.u, s.v, s.a, s.kinetic_energy, s.strain_energy

    scheme: "newmark" (beta, gamma; 1/4, 1/2: average acceleration, energy-conserving) or "galpha"
    (generalized-alpha, rho_inf in [0, 1]: the high-frequency spectral radius). M, K as for
    TimeStepper. The initial acceleration is the consistent one, M a0 = f(t0) - C v0 - K u0.
    load(t): the n values of f(t)."""

    def __init__(self, M, K, scheme="newmark", dt=None, u0=None, v0=None, *, rho_inf=1.0, rayleigh=(0.0, 0.0),
                 fixed=None, load=None, beta=0.25, gamma=0.5, t0=0.0, name=None, tolerance=0.0, atol=None,
                 dt_min=0.0, dt_max=float("inf")):
        self._s = None
        if dt is None:
            raise InvalidArgument("DynamicsStepper: dt is required")
        try:
            a, b = (float(x) for x in rayleigh)
        except (TypeError, ValueError):
            raise InvalidArgument(f"DynamicsStepper: rayleigh must be (a, b), not {rayleigh!r}") from None
        if isinstance(fixed, DirichletBC):
            fixed = fixed.dofs
        if fixed is not None:
            import numpy
            fixed = numpy.unique(numpy.asarray(fixed))
        self._dt = float(dt)
        Mk, Kk = self._matrices(M, K, name, "DynamicsStepper")
        try:
            self._s = _SecondOrderStepper(self.name, Mk, Kk, str(scheme), self._dt, u0, v0, load, fixed,
                                          float(rho_inf), float(beta), float(gamma), a, b, float(t0),
                                          float(tolerance), -1.0 if atol is None else float(atol), float(dt_min),
                                          float(dt_max))
        except BaseException:
            self.close()
            raise

    @property
    def dt(self):
        """The step the next step() tries."""
        return self._stepper().dt

    def step(self, max_dt=float("inf")):
        """One accepted step of at most max_dt (adaptive: retried at half the step until its error
        passes); returns the step taken."""
        return self._stepper().step(float(max_dt))

    def advance_to(self, t_end, callback=None):
        """Steps until t_end, the last one cut to land on it; callback(self) after every step."""
        self._stepper().advance_to(float(t_end), None if callback is None else (lambda: callback(self)))
        return self

    @property
    def v(self):
        return self._stepper().v

    @property
    def a(self):
        return self._stepper().a

    @property
    def kinetic_energy(self):
        """1/2 v^T M v."""
        return self._stepper().kinetic_energy

    @property
    def strain_energy(self):
        """1/2 u^T K u."""
        return self._stepper().strain_energy


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
