"""The kernels from Python: meshes, spaces, assembly with coefficients and conditions, cached
solves, factorization handles, Newton; errors as one exception family; the GIL released."""
import json
import os
import re
import struct
import subprocess
import threading
import time
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import fem

PI = np.pi


def exact(x):
    return np.sin(PI * x[:, 0]) * np.sin(PI * x[:, 1])


def poisson(n, key="A"):
    fem.generate_mesh(f"gen:square-tri3:{n}", f"mesh/{n}")
    V = fem.FunctionSpace(f"mesh/{n}", 1)
    a = fem.Assembler(V)
    bc = fem.DirichletBC(V, {"all": 0.0})
    f = fem.Source(lambda x: 2 * PI**2 * exact(x))
    A, b = bc.apply(a.matrix(fem.Diffusion()), a.vector(f))
    fem.store.put(key, A)
    return V, A, b


def test_poisson_converges_at_second_order():
    errors = []
    for n in (8, 16, 32):
        V, A, b = poisson(n, key=f"A{n}")
        u = fem.solve(f"A{n}", b)
        errors.append(np.max(np.abs(u - exact(V.node_coordinates))))
    rates = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all(rates > 1.8), (errors, rates)


def test_cache_one_symbolic_analysis_per_pattern_one_factorization_per_version():
    V, A, b = poisson(16)
    for _ in range(10):
        u = fem.solve("A", b)
    c = fem.store.counters()
    assert c["solve.factorizations"] == 1 and c["solve.symbolic_analyses"] == 1
    assert c["solve.solves"] == 10
    # New values on the same pattern: a numeric refactorization only.
    fem.store.put("A", A.with_values(np.asarray(A.data) * 2.0))
    u2 = fem.solve("A", b)
    c = fem.store.counters()
    assert c["solve.factorizations"] == 2 and c["solve.symbolic_analyses"] == 1
    assert np.allclose(u2, u / 2.0, rtol=1e-12, atol=1e-15)


def vtu_point_data(path, name, components=1):
    """A Float64 point-data array of a VTU written with raw appended data (the driver's format)."""
    data = open(path, "rb").read()
    head = data[: data.index(b"<AppendedData")].decode()
    match = re.search(r'<DataArray type="Float64" Name="%s" NumberOfComponents="%d" format="appended" '
                      r'offset="(\d+)"' % (name, components), head)
    start = data.index(b"_", data.index(b"<AppendedData")) + 1 + int(match.group(1))
    nbytes = struct.unpack("<Q", data[start:start + 8])[0]
    values = np.frombuffer(data[start + 8:start + 8 + nbytes], dtype="<f8")
    return values if components == 1 else values.reshape(-1, components)


@pytest.mark.skipif(not os.environ.get("FEM_DRIVER"), reason="the fem driver was not built")
def test_equals_the_poisson_driver(tmp_path):
    V, A, b = poisson(32)
    u = fem.solve("A", b)
    out, vtu = tmp_path / "run.json", tmp_path / "u.vtu"
    subprocess.run([os.environ["FEM_DRIVER"], "poisson", "gen:square-tri3:32", "--source",
                    "2*pi^2*sin(pi*x)*sin(pi*y)", "--dirichlet", "all=0", "--quiet", "--json", str(out),
                    "--output", str(vtu)], check=True)
    run = json.loads(out.read_text())
    assert run["dofs"] == V.num_dofs
    driver = vtu_point_data(vtu, "u")  # P1 on a generated mesh: the DOFs are the mesh nodes, in order
    assert driver.shape == u.shape
    assert np.max(np.abs(driver - u)) <= 1e-12 * np.max(np.abs(u))


@pytest.mark.skipif(not os.environ.get("FEM_DRIVER"), reason="the fem driver was not built")
def test_pure_traction_elasticity_is_the_drivers_answer(tmp_path):
    # Nothing holds the body; balanced tractions pull it apart. The library's rule gives the
    # matrix its rigid motions (at assembly; DirichletBC.apply would decide again), and the
    # solution is the one orthogonal to them, as the driver's.
    fem.generate_mesh("gen:square-tri3:8", "mesh/traction")
    V = fem.FunctionSpace("mesh/traction", 1, components=2)
    a = fem.Assembler(V)
    A = a.matrix(fem.Elasticity())
    fem.store.put("traction/A", A)
    b = a.vector(fem.Neumann("right", [1.0, 0.0])) + a.vector(fem.Neumann("left", [-1.0, 0.0]))
    u = fem.solve("traction/A", b).reshape(-1, 2)
    out, vtu = tmp_path / "run.json", tmp_path / "u.vtu"
    driver = os.environ["FEM_DRIVER"]
    subprocess.run([driver, "elasticity", "gen:square-tri3:8", "--traction", "right=1,0", "--traction", "left=-1,0",
                    "--quiet", "--json", str(out), "--output", str(vtu)], check=True)
    run = json.loads(out.read_text())
    assert run["solution"]["normalization"] == "orthogonal_to_rigid_motions"
    displacement = vtu_point_data(vtu, "displacement", 3)[:, :2]  # P1: the DOF nodes are the mesh nodes
    assert np.max(np.abs(u)) > 0.1
    assert np.max(np.abs(displacement - u)) <= 1e-10 * np.max(np.abs(u))
    # Loads that push the body away: the same refusal, in the same words, as the driver's.
    with pytest.raises(fem.NumericalError) as refused:
        fem.solve("traction/A", a.vector(fem.Neumann("right", [1.0, 0.0])))
    message = str(refused.value).split("(incompatible): ", 1)[1]
    assert "translation x" in message and "rotation z" in message
    cli = subprocess.run([driver, "elasticity", "gen:square-tri3:8", "--traction", "right=1,0"], capture_output=True,
                         text=True)
    assert cli.returncode == 3 and message in cli.stderr, (message, cli.stderr)  # 3: numerical failure


def test_factorization_handle_transpose_blocks_and_versions():
    rng = np.random.default_rng(3)
    n = 60
    S = sp.random(n, n, density=0.08, random_state=4, format="csr") + 4 * sp.eye(n)
    fem.store.put("U", S)
    F = fem.factorization("U")
    assert F.size == n and F.factor_nonzeros >= S.nnz // 2 and F.bytes > 0
    assert F.backend in fem.backends()
    b = rng.standard_normal(n)
    dense = S.toarray()
    assert np.allclose(F.solve(b), np.linalg.solve(dense, b), atol=1e-12)
    assert np.allclose(F.solve_transpose(b), np.linalg.solve(dense.T, b), atol=1e-12)
    B = rng.standard_normal((n, 5))
    X = F.solve(B)
    assert X.shape == (n, 5) and np.allclose(dense @ X, B, atol=1e-11)
    assert np.allclose(fem.solve_transpose("U", B), np.linalg.solve(dense.T, B), atol=1e-11)
    # The handle is one object: a new version under the key does not change what it solves.
    fem.store.put("U", S * 2.0)
    assert np.allclose(F.solve(b), np.linalg.solve(dense, b), atol=1e-12)
    assert np.allclose(fem.solve("U", b), np.linalg.solve(2 * dense, b), atol=1e-12)
    fem.store.erase("U")
    assert np.allclose(dense @ F.solve(b), b, atol=1e-11)


def test_singular_matrix_is_a_numerical_error_and_nothing_is_stored():
    S = sp.csr_matrix(np.array([[1.0, 2.0], [2.0, 4.0]]))
    fem.store.put("S", S)
    v = fem.store.version("S")
    with pytest.raises(fem.NumericalError) as e:
        fem.solve("S", np.array([1.0, 0.0]))
    assert "S" in str(e.value)
    assert isinstance(e.value, ArithmeticError)
    assert fem.store.version("S") == v
    assert not any(k.startswith("S#factor") for k in fem.store.keys())


def test_sizes_and_arguments_are_checked():
    V, A, b = poisson(4)
    with pytest.raises(fem.InvalidArgument):
        fem.solve("A", np.ones(3))
    with pytest.raises(fem.InvalidArgument):
        fem.solve("A", b, backend="magic")
    with pytest.raises(fem.InvalidArgument):
        fem.Assembler(V).diffusion(np.ones(5))  # not one value per cell
    with pytest.raises(fem.InvalidArgument):
        fem.generate_mesh("gen:sphere:3", "bad")
    with pytest.raises(fem.InvalidArgument) as e:
        fem.DirichletBC(V, {"nowhere": 0.0})
    assert "nowhere" in str(e.value)


def test_python_callback_errors_propagate():
    fem.generate_mesh("gen:square-tri3:4", "m")
    a = fem.Assembler(fem.FunctionSpace("m", 1))

    def broken(x):
        raise RuntimeError("my source is broken")

    with pytest.raises(RuntimeError, match="my source is broken"):
        a.vector(fem.Source(broken))
    with pytest.raises(ValueError, match="returned 3 values"):
        a.vector(fem.Source(lambda x: np.ones(3)))


def test_nan_and_inverted_input_refused():
    coords = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    cells = np.array([[0, 1, 2], [1, 2, 3]])  # the second one is clockwise: inverted
    mesh = fem.Mesh("tri3", coords, cells)
    report = fem.check_mesh(mesh)
    assert not report["ok"] and list(report["inverted"]) == [1]
    fem.store.put("inv", mesh)
    with pytest.raises(fem.Error):
        fem.Assembler(fem.FunctionSpace("inv", 1)).matrix(fem.Diffusion())
    bad = coords.copy()
    bad[3, 0] = np.nan
    with pytest.raises(fem.InvalidArgument):
        fem.Mesh("tri3", bad, cells)
    fem.generate_mesh("gen:square-tri3:4", "m")
    a = fem.Assembler(fem.FunctionSpace("m", 1))
    k = np.ones(a.space.mesh.num_cells)
    k[3] = np.nan
    with pytest.raises(fem.Error):
        A = a.matrix(fem.Diffusion(k))
        fem.store.put("nan", A)
        fem.solve("nan", np.ones(A.shape[0]))


def test_truncated_file_names_the_file(tmp_path, source_dir):
    text = open(os.path.join(source_dir, "meshes", "plate_hole_v41.msh")).read()
    bad = tmp_path / "truncated.msh"
    bad.write_text(text[: len(text) // 2])
    with pytest.raises(fem.ParseError) as e:
        fem.read_mesh(str(bad), "t")
    assert "truncated.msh" in str(e.value)
    assert "t" not in fem.store


def test_mesh_names_per_tag_coefficient_and_neumann(source_dir):
    mesh = fem.read_mesh(os.path.join(source_dir, "meshes", "plate_hole_v41.msh"), "plate")
    assert "hole" in mesh.names and fem.check_mesh("plate")["ok"]
    V = fem.FunctionSpace("plate", 1)
    a = fem.Assembler(V)
    tags = mesh.tags(mesh.tdim)
    A1 = a.matrix(fem.Diffusion({t: 2.0 for t in tags}))
    A2 = a.matrix(fem.Diffusion(2.0))
    assert np.allclose(A1.data, A2.data)
    # ∫_Γ 1 v summed over v = the length of Γ: the hole of radius r has perimeter ≈ 2πr.
    length = a.vector(fem.Neumann("hole", 1.0)).sum()
    xy = V.node_coordinates
    assert length > 0 and np.isfinite(length)
    total = a.vector(fem.Neumann("all", 1.0)).sum()
    assert total > length
    assert xy.shape[1] == 2


def test_elasticity_is_symmetric_and_has_the_rigid_motions_as_kernel():
    fem.generate_mesh("gen:square-quad4:6", "sq")
    V = fem.FunctionSpace("sq", 1, components=2)
    K = fem.Assembler(V).matrix(fem.Elasticity(E=200.0, nu=0.3)).to_scipy()
    assert abs(K - K.T).max() <= 1e-12 * abs(K).max()
    x = V.node_coordinates
    rotation = np.stack([-x[:, 1], x[:, 0]], axis=1).ravel()
    assert np.abs(K @ rotation).max() <= 1e-10 * abs(K).max()


def test_cell_gradient_matches_finite_differences():
    fem.generate_mesh("gen:square-tri3:6", "g")
    a = fem.Assembler(fem.FunctionSpace("g", 1))
    rng = np.random.default_rng(5)
    k = 1 + rng.random(a.space.mesh.num_cells)
    w = rng.standard_normal(a.pattern.nnz)
    grad = a.cell_gradient(fem.Diffusion(), w)
    for c in (0, 17, 40):
        e = np.zeros_like(k)
        e[c] = 1e-3
        fd = (w @ a.matrix(fem.Diffusion(k + e)).data - w @ a.matrix(fem.Diffusion(k - e)).data) / 2e-3
        assert abs(fd - grad[c]) <= 1e-8 * max(1.0, abs(fd))
    gm = a.cell_gradient(fem.Mass(), w)
    e = np.zeros_like(k)
    e[9] = 1.0
    assert np.isclose(gm[9], w @ a.matrix(fem.Mass(e)).data)


def test_newton_bratu_converges_quadratically_with_one_analysis():
    fem.generate_mesh("gen:square-tri3:24", "b")
    V = fem.FunctionSpace("b", 1)
    a = fem.Assembler(V)
    bc = fem.DirichletBC(V, {"all": 0.0})
    u, r = fem.newton_solve(a, "bratu", parameter=3.0, bc=bc, rtol=1e-12, atol=1e-13)
    assert r["converged"], r
    assert r["symbolic_analyses"] == 1 and r["jacobian_refreshes"] == r["iterations"]
    r_ = [h / r["residual_history"][0] for h in r["residual_history"]]
    # Quadratic: each relative residual at most the square of the one before (a linear rate
    # of 1e-2 fails by the third step), down to rounding.
    pairs = [(r_[i], r_[i + 1]) for i in range(1, len(r_) - 1) if r_[i + 1] > 1e-14]
    assert len(pairs) >= 2 and all(b <= a * a for a, b in pairs), r["residual_history"]
    assert u.max() > 0 and np.all(u[bc.dofs] == 0)
    assert "newton/J" in fem.store


def test_gil_released_during_a_factorization():
    fem.generate_mesh("gen:square-tri3:300", "big")
    V = fem.FunctionSpace("big", 1)
    a = fem.Assembler(V)
    A, b = fem.DirichletBC(V, {"all": 0.0}).apply(a.matrix(fem.Diffusion()), a.vector(fem.Source(1.0)))
    fem.store.put("big/A", A)
    entering, done = threading.Event(), threading.Event()

    def work():
        entering.set()
        fem.factorization("big/A")  # about 0.1 s of C++
        done.set()

    t = threading.Thread(target=work)
    t.start()
    entering.wait()
    time.sleep(0.01)  # the worker is inside the kernel by now
    ticks = 0
    while not done.is_set():  # with the GIL held by the kernel this loop could not run before done
        ticks += 1
    t.join()
    assert ticks > 1000


def test_concurrent_solves_with_one_handle_agree():
    V, A, b = poisson(32)
    F = fem.factorization("A")
    ref = F.solve(b)
    results = [None] * 4

    def work(i):
        results[i] = F.solve(b * (i + 1))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, x in enumerate(results):
        assert np.allclose(x, ref * (i + 1), rtol=1e-13, atol=0)


def test_factorize_reuses_the_analysis_and_recycles_unheld_factors():
    V, A, b = poisson(16)
    p = A.pattern
    F1 = fem.factorize(p, A.data)
    F2 = fem.factorize(p, np.asarray(A.data) * 2)  # F1 still held: not recycled
    assert np.allclose(F1.solve(b), 2 * F2.solve(b), rtol=1e-12)
    del F1, F2
    F3 = fem.factorize(p, np.asarray(A.data) * 4)  # nothing holds F2 any more: refactorized in place
    c = fem.store.counters()
    assert c["solve.symbolic_analyses"] == 1 and c["solve.factorizations"] == 3 and c["solve.recycled"] == 1
    assert np.allclose(A @ (4 * F3.solve(b)), b, atol=1e-12)


def test_outer_values_on_the_pattern():
    rng = np.random.default_rng(8)
    V, A, b = poisson(5)
    p = A.pattern
    rows = p.row_of_nonzeros()
    u, v = rng.standard_normal((A.shape[0], 3)), rng.standard_normal((A.shape[0], 3))
    expected = -(u[rows] * v[p.indices]).sum(axis=1)
    assert np.allclose(p.outer_values(u, v, -1.0), expected, rtol=1e-14)
    assert np.allclose(p.outer_values(u[:, 0], v[:, 0]), u[rows, 0] * v[p.indices, 0], rtol=1e-14)
    with pytest.raises(fem.InvalidArgument):
        p.outer_values(u, v[:, :2])


# --- hostile input (each of these crashed, raced or answered silently wrong once) -------------

def test_conditions_of_another_space_are_refused():
    V, A, b = poisson(4)
    bc2 = fem.DirichletBC(fem.FunctionSpace("mesh/4", 2), {"all": 1.0})
    for call in (lambda: bc2.apply(A), lambda: bc2.zero(b), lambda: bc2.set(b),
                 lambda: fem.newton_solve(fem.Assembler(V), "bratu", bc=bc2)):
        with pytest.raises(fem.InvalidArgument, match="P2"):
            call()


def test_conditions_belong_to_their_space_not_to_a_count():
    # P2 on 2 x 2 squares and P1 on 4 x 4 squares: 25 DOFs each, two different spaces.
    fem.generate_mesh("gen:square-tri3:2", "id/coarse")
    fem.generate_mesh("gen:square-tri3:4", "id/fine")
    P2, P1 = fem.FunctionSpace("id/coarse", 2), fem.FunctionSpace("id/fine", 1)
    assert P2.num_dofs == P1.num_dofs
    bc = fem.DirichletBC(P2, {"all": 1.0})
    a = fem.Assembler(P1)
    A, b = a.matrix(fem.Diffusion()), a.vector(fem.Source(1.0))
    for call in (lambda: bc.apply(A, b), lambda: bc.apply(A), lambda: fem.newton_solve(a, "bratu", bc=bc)):
        with pytest.raises(fem.InvalidArgument) as e:
            call()
        assert "P2 of mesh 'id/coarse'" in str(e.value) and "P1 of mesh 'id/fine'" in str(e.value), str(e.value)
    with pytest.raises(fem.InvalidArgument, match="newton_solve"):  # the function the user called
        fem.newton_solve(a, "bratu", bc=bc)
    assert bc.space.num_dofs == P2.num_dofs
    fem.DirichletBC(P1, {"all": 1.0}).apply(A, b)  # its own space: fine
    # A newer version of the mesh under the same key is another mesh: conditions made on the old
    # one are refused on the new one's matrix, though every count and the structure agree.
    old, v_old = fem.DirichletBC(P1, {"all": 1.0}), fem.store.version("id/fine")
    fem.generate_mesh("gen:square-tri3:4", "id/fine")
    newer = fem.Assembler(fem.FunctionSpace("id/fine", 1)).matrix(fem.Diffusion())
    with pytest.raises(fem.InvalidArgument, match=rf"version {fem.store.version('id/fine')},.*version {v_old},"):
        old.apply(newer)


def test_p1_elasticity_near_incompressibility_warns_of_locking():
    fem.generate_mesh("gen:square-tri3:8", "lock")
    for degree, nu, plane, warned in ((1, 0.4999999, "strain", True), (2, 0.4999999, "strain", False),
                                      (1, 0.3, "strain", False), (1, 0.4999999, "stress", False)):
        a = fem.Assembler(fem.FunctionSpace("lock", degree, components=2))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            a.matrix(fem.Elasticity(E=1.0, nu=nu, plane=plane))
        locking = [w for w in caught if issubclass(w.category, fem.LockingWarning)]
        assert bool(locking) == warned, (degree, nu, plane, [str(w.message) for w in caught])
        if warned:
            assert "degree-2" in str(locking[0].message)
        info = a.locking(fem.Elasticity(nu=nu, plane=plane))
        assert info["locks"] == warned and info["indicator"] > 0


def test_factorize_from_threads_returns_each_its_own_matrix():
    V, A, b = poisson(8)
    p, data = A.pattern, np.asarray(A.data)
    ref = fem.factorize(p, data, key="ref").solve(b)
    wrong = []

    def work(s):
        for _ in range(150):
            x = fem.factorize(p, s * data).solve(b)  # the same default key for all threads
            if not np.allclose(s * x, ref, rtol=1e-10):
                wrong.append(s)

    threads = [threading.Thread(target=work, args=(s,)) for s in (1.0, 3.0, 7.0)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not wrong


def test_out_arrays_must_be_written_in_place():
    fem.generate_mesh("gen:square-tri3:4", "m")
    a = fem.Assembler(fem.FunctionSpace("m", 1))
    nnz, n = a.pattern.nnz, a.space.num_dofs
    for bad in (np.zeros(nnz, np.float32), np.zeros(2 * nnz)[::2], [0.0] * nnz, np.zeros(nnz + 1)):
        with pytest.raises(fem.InvalidArgument):
            a.diffusion(1.0, out=bad)
    ro = np.zeros(nnz)
    ro.flags.writeable = False
    with pytest.raises(fem.InvalidArgument, match="read-only"):
        a.diffusion(1.0, out=ro)
    with pytest.raises(fem.InvalidArgument):
        a.source(1.0, out=np.zeros(n, np.float32))
    out = np.zeros(nnz)
    assert a.diffusion(1.0, out=out) is out and np.allclose(out, a.diffusion(1.0).data)
    b = np.ones(n)
    a.source(1.0, out=b)
    assert np.allclose(b, 1 + a.source(1.0))


def test_non_finite_values_are_errors_not_results():
    fem.generate_mesh("gen:square-tri3:4", "m")
    V = fem.FunctionSpace("m", 1)
    a = fem.Assembler(V)
    with pytest.raises(fem.NumericalError):
        a.diffusion(lambda x: None)  # NaN at every point
    with pytest.raises(fem.NumericalError):
        a.source(lambda x: np.full(len(x), np.inf))
    k = np.ones(V.mesh.num_cells)
    k[2] = np.nan
    with pytest.raises(fem.InvalidArgument, match="cell 2 is nan"):
        a.diffusion(k)
    with pytest.raises(fem.InvalidArgument):
        a.mass(float("nan"))
    with pytest.raises(fem.NumericalError):
        fem.DirichletBC(V, {"all": float("nan")})
    with pytest.raises(fem.InvalidArgument):
        fem.solve("anything", np.ones(3), refinement_steps=-1)
    with pytest.raises(fem.InvalidArgument):
        fem.solve("anything", np.ones(3), max_relative_residual=float("nan"))


def test_indices_are_neither_wrapped_nor_truncated():
    coords = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    with pytest.raises(fem.InvalidArgument, match="32"):
        fem.Mesh("tri3", coords, np.array([[0, 1, 2**33 + 2]]))
    with pytest.raises(fem.InvalidArgument, match="integers"):
        fem.Mesh("tri3", coords, np.array([[0.0, 1.0, 2.7]]))
    with pytest.raises(fem.InvalidArgument):
        fem.store.put("u", np.array([2**64 - 1], dtype=np.uint64))
    with pytest.raises(fem.InvalidArgument, match="complex"):
        fem.store.put("c", sp.eye(3, dtype=complex, format="csr"))
    fem.store.put("A", sp.eye(3, format="csr"))
    with pytest.raises(IndexError):
        fem.store["A"][-1, 0]
    assert fem.store["A"][2, 2] == 1.0


def test_a_copy_too_large_is_a_memory_error_not_a_crash():
    with pytest.raises(MemoryError):
        fem.store.put("huge", np.broadcast_to(np.ones(1), (10**12,)))
    assert "huge" not in fem.store


def test_python_callables_run_on_one_thread():
    fem.generate_mesh("gen:square-tri3:64", "m64")
    a = fem.Assembler(fem.FunctionSpace("m64", 1))
    threads = set()

    def k(x):
        threads.add(threading.get_ident())
        return np.ones(len(x))

    previous = fem._fem._set_thread_policy(False, 0.0)  # threads for any loop, on every core
    try:
        A = a.diffusion(k)
    finally:
        fem._fem._set_thread_policy(*previous)
    assert len(threads) == 1  # a kernel that calls Python runs serially: its threads would queue for the GIL
    assert np.allclose(A.data, a.diffusion(1.0).data)


def test_wrong_inputs_raise_the_family_in_words():
    # A 0 x 0 matrix has nothing to factorize, said so (was CHOLMOD's "status -4").
    fem.store.put("empty", sp.csr_matrix((0, 0)))
    for call in (lambda: fem.solve("empty", np.zeros(0)), lambda: fem.factorization("empty")):
        with pytest.raises(fem.InvalidArgument, match="0 x 0"):
            call()
    # A NaN right-hand side is bad data, not a singular matrix.
    fem.store.put("A", sp.diags([2.0] * 5, format="csr"))
    b = np.ones(5)
    b[2] = np.nan
    for call in (lambda: fem.solve("A", b), lambda: fem.solve_transpose("A", b),
                 lambda: fem.factorization("A").solve(b)):
        with pytest.raises(fem.NumericalError, match="entry 2 = nan") as e:
            call()
        assert "singular" not in str(e.value)
    with pytest.raises(fem.NumericalError, match="right-hand side 1 has entry 2 = nan"):
        fem.solve("A", np.column_stack([np.ones(5), b]))
    assert np.allclose(fem.solve("A", np.ones(5)), 0.5)  # the factorization is still good
    # A complex right-hand side is refused, not made real with numpy's warning only.
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's ComplexWarning would fail the test
        for call in (lambda z: fem.solve("A", z), lambda z: fem.solve_transpose("A", z),
                     lambda z: fem.factorization("A").solve(z), lambda z: fem.factorization("A").solve_transpose(z)):
            with pytest.raises(fem.InvalidArgument, match="complex"):
                call(np.ones(5) + 1j)
    # Where a number belongs: not an array, a string or a complex number; a tag is an integer.
    fem.generate_mesh("gen:square-tri3:4", "m")
    V = fem.FunctionSpace("m", 1)
    a = fem.Assembler(V)
    with pytest.raises(fem.InvalidArgument, match=f"source.*an array of {V.num_dofs} values where one number"):
        a.vector(fem.Source(np.ones(V.num_dofs)))
    with pytest.raises(fem.InvalidArgument, match="complex"):
        a.vector(fem.Source(1 + 2j))
    with pytest.raises(fem.InvalidArgument, match="1.5.*neither a tag number"):
        a.matrix(fem.Diffusion({1.5: 2.0}))
    with pytest.raises(fem.InvalidArgument, match="'two'.*not a real number"):
        a.matrix(fem.Diffusion({"all": "two"}))
    with pytest.raises(fem.InvalidArgument, match="an array of 2 values where one number belongs"):
        fem.DirichletBC(V, {"all": [1.0, 2.0]})
    assert np.allclose(a.vector(fem.Source(np.float32(2.0))), a.vector(fem.Source(2)))
    assert np.allclose(a.matrix(fem.Diffusion({"all": np.int64(3)})).data, a.matrix(fem.Diffusion(3.0)).data)


def test_groups_are_sets_all_is_the_whole_boundary_and_tags_must_agree(source_dir):
    """docs/semantics.md from Python, on meshes/groups.geo (cells and facets in two groups, an
    interior interface, an untagged side)."""
    for name in ("groups_v22.msh", "groups_v41.msh"):
        mesh = fem.read_mesh(os.path.join(source_dir, "meshes", name), "groups")
        assert mesh.num_cells == 168 and mesh.tags(2) == [10, 11, 12]
        assert all(12 in mesh.groups(2, int(t)) for t in mesh.cell_tags)
        V = fem.FunctionSpace("groups", 1)
        a = fem.Assembler(V)
        assert abs(a.matrix(fem.Mass()).data.sum() - 1.0) < 1e-12  # the area, each cell once
        # `all`: the perimeter, the untagged side in, the interface out, each facet once.
        assert abs(a.vector(fem.Neumann("all", 1.0)).sum() - 4.0) < 1e-12
        with pytest.raises(fem.InvalidArgument, match="interior"):
            a.vector(fem.Neumann("interface", 1.0))
        # A value per group: 'plate' is every cell; 'soft' and 'plate' must agree; 7 is no group.
        assert np.allclose(a.matrix(fem.Diffusion({"plate": 2.0})).data, a.matrix(fem.Diffusion(2.0)).data)
        with pytest.raises(fem.InvalidArgument, match="plate"):
            a.matrix(fem.Diffusion({"soft": 1.0, "plate": 2.0}))
        with pytest.raises(fem.InvalidArgument, match="7"):
            a.matrix(fem.Diffusion({7: 5.0}))
        with pytest.raises(fem.InvalidArgument, match="two values"):
            a.matrix(fem.Diffusion({"soft": 1.0, 10: 2.0}))
        # Dirichlet: a tag wins over 'all' whatever the order; two tags that meet must agree.
        first = fem.DirichletBC(V, {"left": 1.0, "all": 0.0})
        second = fem.DirichletBC(V, {"all": 0.0, "left": 1.0})
        assert np.array_equal(first.values, second.values) and first.values.max() == 1.0
        with pytest.raises(fem.InvalidArgument, match="bottom"):
            fem.DirichletBC(V, {"left": 1.0, "bottom": 0.0})


def test_complex_constants_are_refused_not_cast():
    fem.generate_mesh("gen:square-tri3:4", "cplx")
    V = fem.FunctionSpace("cplx", 1, components=2)
    a = fem.Assembler(V)
    with pytest.raises(fem.InvalidArgument, match="complex"):
        a.vector(fem.Source(np.array([1 + 1j, 0])))
    with pytest.raises(fem.InvalidArgument, match="complex"):
        a.vector(fem.Neumann("all", np.array([1j, 0])))
    with pytest.raises(fem.InvalidArgument, match="complex"):
        fem.Assembler(fem.FunctionSpace("cplx", 1)).matrix(fem.Diffusion(np.full(32, 1 + 0j)))
