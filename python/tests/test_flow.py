"""Flow from Python (fem::flow): fem.solve_flow and fem.flow_sizes (Stokes Poiseuille flow exact
with Taylor–Hood, the velocity data made with fem.DirichletBC on the P2 vector space, a
Navier–Stokes cavity by Picard and Newton on one symbolic analysis); fem.MixedSpace, fem.stokes,
fem.navier_stokes and fem.force (Poiseuille exact, Kovasznay flow at Re 40 converging at order 3
in L², forces on node sets); fem.ProjectionStepper (factorized once, its data a function of t,
the force with the inertia)."""
import numpy as np
import pytest

import fem


def velocity_bc(V, ux, uy):
    """The velocity's Dirichlet DOFs and values on the whole boundary, merged and sorted."""
    bx = fem.DirichletBC(V, {"all": ux}, component=0)
    by = fem.DirichletBC(V, {"all": uy}, component=1)
    dofs = np.concatenate([bx.dofs, by.dofs])
    values = np.concatenate([bx.values, by.values])
    order = np.argsort(dofs)
    return dofs[order], values[order]


def test_stokes_poiseuille_is_exact():
    fem.generate_mesh("gen:square-tri3:4", "flow/poiseuille")
    sizes = fem.flow_sizes("flow/poiseuille")
    assert sizes == {"dim": 2, "velocity_dofs": 162, "pressure_dofs": 25, "dofs": 187}
    V = fem.FunctionSpace("flow/poiseuille", 2, 2)
    dofs, values = velocity_bc(V, lambda x: x[0, 1] * (1 - x[0, 1]), 0.0)
    r = fem.solve_flow("flow/poiseuille", dofs, values, viscosity=0.5)
    assert r["converged"] and r["newton_iterations"] == 1 and r["symbolic_analyses"] == 1
    exact = V.interpolate(lambda x: [x[0, 1] * (1 - x[0, 1]), 0.0])
    assert np.abs(r["velocity"] - exact).max() < 1e-12
    # p = −2μ(x − ½) = −(x − ½) (zero mean): over the vertices it spans [−½, ½].
    p = r["pressure"]
    assert p.min() == pytest.approx(-0.5, abs=1e-10) and p.max() == pytest.approx(0.5, abs=1e-10)


def test_navier_stokes_cavity_shares_one_symbolic_analysis():
    fem.generate_mesh("gen:square-tri3:8", "flow/cavity")
    V = fem.FunctionSpace("flow/cavity", 2, 2)
    dofs, values = velocity_bc(V, lambda x: 1.0 if x[0, 1] > 1 - 1e-12 else 0.0, 0.0)
    r = fem.solve_flow("flow/cavity", dofs, values, viscosity=0.01, navier_stokes=True, picard_steps=3)
    assert r["converged"], r["reason"]
    assert r["picard_iterations"] == 3 and r["symbolic_analyses"] == 1
    assert r["jacobians"] == r["picard_iterations"] + r["newton_iterations"]
    with pytest.raises(fem.InvalidArgument, match="velocity DOF"):
        fem.solve_flow("flow/cavity", np.array([10**6]), np.array([0.0]))


def test_projection_stepper_settles_on_poiseuille_factorizing_once():
    fem.generate_mesh("gen:square-tri3:4", "flow/channel")
    V, P = fem.FunctionSpace("flow/channel", 2, 2), fem.FunctionSpace("flow/channel", 1)
    # Inflow y(1 − y) on the left, no-slip walls, the outflow (right side) free: p = 0 there.
    bx = fem.DirichletBC(V, {"left": lambda x: x[0, 1] * (1 - x[0, 1]), "top": 0.0, "bottom": 0.0}, component=0)
    by = fem.DirichletBC(V, {"left": 0.0, "top": 0.0, "bottom": 0.0}, component=1)
    dofs = np.concatenate([bx.dofs, by.dofs])
    values = np.concatenate([bx.values, by.values])
    order = np.argsort(dofs)
    outflow = fem.DirichletBC(P, {"right": 0.0}).dofs
    before = fem.store.counter("solve.factorizations")
    s = fem.ProjectionStepper("flow/channel", 0.05, dofs[order], values[order], outflow=outflow, viscosity=1.0)
    assert s.matrices == 3 and fem.store.counter("solve.factorizations") - before == 3
    s.step(1200)
    assert s.steps == 1200 and s.t == pytest.approx(60.0)
    assert fem.store.counter("solve.factorizations") - before == 3  # none in the steps
    exact = V.interpolate(lambda x: [x[0, 1] * (1 - x[0, 1]), 0.0])
    assert np.abs(s.velocity - exact).max() < 1e-8  # settled: the discrete equations hold it exactly


# --- fem.MixedSpace, fem.stokes, fem.navier_stokes, fem.force ---------------------------------

def parabola(x):
    return x[:, 1] * (1 - x[:, 1])


def test_mixed_space_sizes_nodes_and_velocity_data():
    fem.generate_mesh("gen:square-tri3:4", "flow/W")
    W = fem.MixedSpace("flow/W")
    assert (W.dim, W.velocity_dofs, W.pressure_dofs, W.dofs) == (2, 162, 25, 187)
    assert W.pressure_offset == W.velocity_dofs and W.mesh_key == "flow/W"
    assert W.velocity.num_dofs == 162 and W.pressure.num_dofs == 25
    X = W.node_coordinates
    assert X.shape == (81, 2) and not X.flags.writeable
    # The vertices are the first nodes: pressure DOF i sits at node i.
    assert np.array_equal(X[: W.pressure_dofs], W.pressure.node_coordinates)
    assert len(W.boundary_nodes()) == 32 and len(W.boundary_nodes(["top", "bottom"])) == 18
    # A tag wins over "all" DOF by DOF; None leaves a component free.
    dofs, values = W.dirichlet({"all": 0.0, "top": (1.0, None)})
    top = W.boundary_nodes("top")
    assert len(dofs) == 64 and np.all(np.diff(dofs) > 0)
    on_top = np.isin(dofs // 2, top)
    assert np.all(values[on_top & (dofs % 2 == 0)] == 1.0) and np.all(values[~on_top] == 0.0)
    dofs, values = W.dirichlet({"left": (parabola, None)})
    assert np.all(dofs % 2 == 0) and np.allclose(values, parabola(X[dofs // 2]))
    u, p = W.split(np.arange(W.dofs, dtype=float))
    assert len(u) == 162 and p[0] == 162.0
    with pytest.raises(fem.InvalidArgument, match="3 components given"):
        W.dirichlet({"all": (0.0, 0.0, 0.0)})
    with pytest.raises(fem.KeyError):
        fem.MixedSpace("flow/nowhere")


def test_stokes_poiseuille_is_exact_and_its_forces_balance():
    fem.generate_mesh("gen:square-tri3:4", "flow/poiseuille")
    W = fem.MixedSpace("flow/poiseuille")
    mu = 0.5
    u, p, report = fem.stokes(W, *W.dirichlet({"all": (parabola, 0.0)}), viscosity=mu)
    assert report["converged"] and report["newton_iterations"] == 1 and report["symbolic_analyses"] == 1
    X = W.node_coordinates
    assert np.abs(u.reshape(-1, 2) - np.stack([parabola(X), 0 * X[:, 0]], axis=1)).max() < 1e-13
    assert np.abs(p + 2 * mu * (X[: W.pressure_dofs, 0] - 0.5)).max() < 1e-12  # zero mean
    # The fluid's force on its whole boundary is zero (no body force); on the walls it drags them
    # downstream, the same by tags and by their nodes.
    assert np.abs(fem.force(W, u, p, "all", viscosity=mu)).max() < 1e-13
    walls = fem.force(W, u, p, ["top", "bottom"], viscosity=mu)
    assert walls.shape == (2,) and walls[0] > 0
    by_nodes = fem.force(W, u, p, nodes=W.boundary_nodes(["top", "bottom"]), viscosity=mu)
    assert np.array_equal(walls, by_nodes)
    # The mixed vector works as well as (u, p); a mesh key as well as a space.
    w = np.concatenate([u, p])
    assert np.array_equal(fem.force("flow/poiseuille", w, None, ["top", "bottom"], viscosity=mu), walls)
    with pytest.raises(fem.InvalidArgument, match="one of them"):
        fem.force(W, u, p, "top", nodes=[0])
    with pytest.raises(fem.InvalidArgument, match="strictly increasing"):
        fem.stokes(W, np.array([3, 1]), np.zeros(2))


def kovasznay(Re):
    lam = Re / 2 - np.sqrt(Re**2 / 4 + 4 * np.pi**2)

    def u(x):
        e = np.exp(lam * x[..., 0])
        return np.stack([1 - e * np.cos(2 * np.pi * x[..., 1]), lam / (2 * np.pi) * e * np.sin(2 * np.pi * x[..., 1])],
                        axis=-1)
    return u


def l2_error(W, u, exact, order=6):
    """‖u_h − u‖ over the mesh: the P2 velocity (tri6, edge nodes 3, 4, 5 on edges 01, 12, 20) at
    collapsed Gauss points, exact for degree 2·order − 1."""
    X, cells = W.node_coordinates, W.velocity.cell_nodes
    a, wa = np.polynomial.legendre.leggauss(order)
    A, B = np.meshgrid(a, a, indexing="ij")
    xi = (1 + A.ravel()) / 2
    eta = (1 - xi) * (1 + B.ravel()) / 2
    wq = np.outer(wa, wa).ravel() * (1 - xi) / 8
    lam = np.stack([1 - xi - eta, xi, eta])
    pairs = [(0, 1), (1, 2), (2, 0)]
    x = X[cells]
    assert np.allclose(x[:, 3:], np.stack([(x[:, i] + x[:, j]) / 2 for i, j in pairs], axis=1))
    phi = np.concatenate([lam * (2 * lam - 1), np.stack([4 * lam[i] * lam[j] for i, j in pairs])])
    J = np.stack([x[:, 1] - x[:, 0], x[:, 2] - x[:, 0]], axis=2)
    xq = x[:, 0, None, :] + np.einsum("cij,qj->cqi", J, np.stack([xi, eta], axis=1))
    uh = np.einsum("aq,cak->cqk", phi, u.reshape(-1, 2)[cells])
    e2 = ((uh - exact(xq)) ** 2).sum(axis=2)
    return np.sqrt((e2 * wq * np.abs(np.linalg.det(J))[:, None]).sum())


def test_kovasznay_flow_converges_at_order_three():
    Re = 40.0
    exact = kovasznay(Re)
    errors = []
    for n in (8, 16):
        key = f"flow/kovasznay/{n}"
        fem.generate_mesh(f"gen:square-tri3:{n}", key)
        W = fem.MixedSpace(key)
        dofs, values = W.dirichlet({"all": (lambda x: exact(x)[:, 0], lambda x: exact(x)[:, 1])})
        u, p, report = fem.navier_stokes(W, dofs, values, viscosity=1 / Re, name=key)
        assert report["converged"], report["reason"]
        assert report["symbolic_analyses"] == 1 and report["picard_iterations"] == 3
        errors.append(l2_error(W, u, exact))
    rate = np.log2(errors[0] / errors[1])
    assert 2.8 < rate < 3.2, (errors, rate)
    # From the converged state as a guess: Newton has nothing left to do.
    u2, p2, again = fem.navier_stokes(W, dofs, values, viscosity=1 / Re, guess=(u, p), picard_steps=0, name=key)
    assert again["converged"] and again["newton_iterations"] <= 1 and again["symbolic_analyses"] == 0
    assert np.abs(u2 - u).max() < 1e-10


def test_projection_stepper_with_data_in_time_and_its_force():
    fem.generate_mesh("gen:square-tri3:4", "flow/ramp")
    W = fem.MixedSpace("flow/ramp")
    dofs, values = W.dirichlet({"left": (parabola, 0.0), "top": 0.0, "bottom": 0.0})
    calls = []

    def ramp(t):  # the inflow grows to y(1 − y) over two time units
        calls.append(t)
        return values * min(1.0, t / 2)

    outflow = W.boundary_nodes("right")
    outflow = outflow[outflow < W.pressure_dofs]
    before = fem.store.counter("solve.factorizations")
    s = fem.ProjectionStepper(W, 0.05, dofs, ramp, outflow=outflow, viscosity=1.0)
    assert s.matrices == 3 and fem.store.counter("solve.factorizations") - before == 3
    assert calls == [0.0] and np.abs(s.velocity).max() == 0  # from rest
    s.step(1200)
    assert s.steps == 1200 and s.t == pytest.approx(60.0) and len(calls) == 1201
    assert calls[1] == pytest.approx(0.05) and calls[-1] == pytest.approx(60.0)
    assert fem.store.counter("solve.factorizations") - before == 3  # none in the steps
    X = W.node_coordinates
    assert np.abs(s.velocity.reshape(-1, 2) - np.stack([parabola(X), 0 * X[:, 0]], axis=1)).max() < 1e-8
    assert np.abs(s.pressure + 2 * (X[: W.pressure_dofs, 0] - 1)).max() < 1e-6  # p = −2μ(x − 1)
    # Settled, the inertia vanishes: the force is the steady one on the state.
    f = s.force(["top", "bottom"])
    steady = fem.force(W, s.velocity, s.pressure, ["top", "bottom"], viscosity=1.0, navier_stokes=True)
    assert f[0] > 0 and np.abs(f - steady).max() < 1e-8

    def failing(t):
        raise RuntimeError(f"no data at t = {t}")

    bad = fem.ProjectionStepper(W, 0.05, dofs, lambda t: values if t < 0.07 else failing(t), outflow=outflow)
    bad.step()
    with pytest.raises(RuntimeError, match="no data"):
        bad.step()
    assert bad.steps == 1 and bad.t == pytest.approx(0.05)  # the step was not taken
    with pytest.raises(fem.InvalidArgument, match="not a pressure DOF"):
        fem.ProjectionStepper(W, 0.05, dofs, values, outflow=[10**6])
