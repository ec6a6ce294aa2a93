"""fem.TimeStepper and fem.DynamicsStepper (fem::time): observed orders against the exact
semi-discrete solution (K symmetric: per eigenmode, a' + λa = β sin t is solved exactly), one
factorization for a fixed step, callbacks between steps, Dirichlet values in t, adaptive steps,
Newmark's energy, generalized-α's damping, store keys and SciPy inputs, and the errors."""
import numpy as np
import pytest
import scipy.sparse as sp

import fem

N = 20


def chain(n=N):
    """K = tridiag(-1, 2, -1) (eigenvalues in (0, 4): not stiff, so that CN shows its order)."""
    return sp.diags([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1], format="csr")


def exact(K, u0, b, t):
    """u(t) of u' + K u = sin(t) b, u(0) = u0 (M = I), mode by mode."""
    lam, V = np.linalg.eigh(K.toarray())
    a0, beta = V.T @ u0, V.T @ b
    e = np.exp(-lam * t)
    a = e * a0 + beta * (lam * np.sin(t) - np.cos(t) + e) / (lam**2 + 1)
    return V @ a


def problem():
    x = np.arange(1, N + 1) / (N + 1)
    return chain(), np.sin(np.pi * x) + 0.3 * x, np.cos(3 * x)


@pytest.mark.parametrize("scheme, order", [("be", 1), ("cn", 2), ("bdf2", 2), ("theta", 1)])
def test_observed_order(scheme, order):
    K, u0, b = problem()
    reference = exact(K, u0, b, 1.0)
    errors = []
    for dt in (0.1, 0.05, 0.025):
        s = fem.TimeStepper(None, K, scheme=scheme, dt=dt, u0=u0, load=lambda t: np.sin(t) * b,
                            theta=0.75 if scheme == "theta" else 1.0)
        s.advance_to(1.0)
        assert s.t == pytest.approx(1.0, abs=1e-12)
        errors.append(np.abs(s.u - reference).max())
        s.close()
    rates = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert rates == pytest.approx([order, order], abs=0.15), (errors, rates)


def test_a_stiffness_in_time_keeps_crank_nicolsons_order():
    # u' + (1 + t) K u = 0, M = I: per eigenmode a(t) = a0 exp(-λ (t + t²/2)).
    K, u0, _ = problem()
    lam, V = np.linalg.eigh(K.toarray())
    reference = V @ ((V.T @ u0) * np.exp(-lam * 1.5))
    errors = []
    for dt in (0.1, 0.05, 0.025):
        before = fem.store.counter("solve.factorizations")
        s = fem.TimeStepper(None, K, scheme="cn", dt=dt, u0=u0)
        k = fem.store.get(s.name + "/K").data.copy()
        s.set_stiffness(lambda t: (1 + t) * k)
        s.advance_to(1.0)
        assert fem.store.counter("solve.factorizations") - before == round(1 / dt)  # one per step
        errors.append(np.abs(s.u - reference).max())
        s.close()
    rates = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert rates == pytest.approx([2, 2], abs=0.15), (errors, rates)


def test_nonlinear_steps_keep_crank_nicolsons_order_and_lag_their_jacobian():
    # u' + K u + u³ = 0 (M = I): N(u) = u³, dN/du = diag(3u²) on K's pattern; against a run with a
    # 16 times smaller step.
    K, u0, _ = problem()

    def run(dt, lag=True):
        s = fem.TimeStepper(None, K, scheme="cn", dt=dt, u0=u0)
        k = fem.store.get(s.name + "/K")
        diagonal = np.array([k.indptr[i] + np.flatnonzero(k.indices[k.indptr[i]:k.indptr[i + 1]] == i)[0]
                             for i in range(k.shape[0])])

        def jacobian(t, u):
            values = np.zeros(k.nnz)
            values[diagonal] = 3 * u**2
            return values

        s.set_nonlinear(lambda t, u: u**3, jacobian, lag=lag)
        s.advance_to(1.0)
        u, report = s.u.copy(), s.report
        s.close()
        return u, report

    reference, _ = run(0.1 / 64)
    errors = []
    for dt in (0.1, 0.05, 0.025):
        u, report = run(dt)
        errors.append(np.abs(u - reference).max())
        assert report["newton_failures"] == 0
        assert report["jacobians"] < report["accepted"]  # lagged across steps
    rates = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert rates == pytest.approx([2, 2], abs=0.15), (errors, rates)
    full, report = run(0.05, lag=False)
    assert report["jacobians"] == report["newton_iterations"]  # full Newton: one per iteration
    lagged, _ = run(0.05)
    assert np.abs(full - lagged).max() < 1e-8


def test_a_fixed_step_factorizes_once_and_calls_back_between_steps():
    K, u0, b = problem()
    before = fem.store.counter("solve.factorizations")
    seen = []
    s = fem.TimeStepper(None, K, scheme="cn", dt=0.05, u0=u0, load=lambda t: np.sin(t) * b)
    s.advance_to(1.0, callback=lambda st: seen.append((st.t, st.u.copy())))
    assert fem.store.counter("solve.factorizations") - before == 1
    r = s.report
    assert r["accepted"] == 20 and r["systems"] == 1 and r["solves"] == 20 and r["scheme"] == "crank-nicolson"
    assert len(seen) == 20
    assert np.allclose([t for t, _ in seen], 0.05 * np.arange(1, 21))
    assert np.array_equal(seen[-1][1], s.u)
    # step() by hand: the step taken, at most max_dt.
    assert s.step() == pytest.approx(0.05)
    assert s.step(0.01) == pytest.approx(0.01)
    assert s.t == pytest.approx(1.06)
    s.close()


def test_store_keys_a_dirichlet_bc_and_values_in_t():
    fem.generate_mesh("gen:square-tri3:8", "mesh/sq")
    V = fem.FunctionSpace("mesh/sq", 1)
    a = fem.Assembler(V)
    fem.store.put("heat/M", a.matrix(fem.Mass()))
    fem.store.put("heat/K", a.matrix(fem.Diffusion()))
    bc = fem.DirichletBC(V, {"all": 1.0})
    s = fem.TimeStepper("heat/M", "heat/K", "be", dt=0.1, dirichlet=bc, name="heat")
    s.step()
    assert np.allclose(s.u[bc.dofs], 1.0)
    assert any(k.startswith("heat/A/") for k in fem.store.keys("heat/"))
    s.close()
    assert any(k.startswith("heat/A/") for k in fem.store.keys("heat/")), "a named stepper's matrices stay"
    # (dofs, values(t)), unsorted dofs: u = t, 2t there after each step.
    dofs = np.array([bc.dofs[3], bc.dofs[0]])
    s = fem.TimeStepper("heat/M", "heat/K", "bdf2", dt=0.1,
                        dirichlet=(dofs, lambda t: np.array([t, 2 * t])))
    s.step()
    s.step()
    assert s.u[dofs] == pytest.approx([s.t, 2 * s.t], abs=1e-12)


def test_adaptive_steps_factorize_once_per_distinct_step():
    K, u0, b = problem()
    before = fem.store.counter("solve.factorizations")
    s = fem.TimeStepper(None, 50 * K, "cn", dt=0.2, u0=u0, tolerance=1e-4, atol=1e-6, rannacher=2)
    s.advance_to(2.0)
    r = s.report
    assert s.t == pytest.approx(2.0)
    assert r["dt_min"] < r["dt_max"]
    assert fem.store.counter("solve.factorizations") - before == len(r["distinct_dts"]) == r["systems"]


def test_newmark_keeps_the_energy_and_generalized_alpha_damps():
    K, u0, _ = problem()
    s = fem.DynamicsStepper(None, K, "newmark", dt=0.1, u0=u0)
    e0 = s.kinetic_energy + s.strain_energy
    assert s.kinetic_energy == 0 and s.strain_energy == pytest.approx(0.5 * u0 @ (K @ u0))
    drift = 0
    for _ in range(500):
        assert s.step() == pytest.approx(0.1)
        drift = max(drift, abs(s.kinetic_energy + s.strain_energy - e0) / e0)
    assert drift < 1e-10
    assert s.t == pytest.approx(50.0)
    assert s.v.shape == s.a.shape == (N,)
    # M a = -K u (no load, no damping).
    assert np.allclose(s.a, -(K @ s.u), atol=1e-10)
    times = []
    s.advance_to(51.0, callback=lambda st: times.append(st.t))
    assert len(times) == 10 and s.t == pytest.approx(51.0)

    # The highest mode (ωdt ≈ 2): kept by ρ∞ = 1, damped by ρ∞ = 0.5.
    w = (-1.0) ** np.arange(N) * np.sin(np.pi * np.arange(1, N + 1) / (N + 1))
    energies = {}
    for rho in (1.0, 0.5):
        g = fem.DynamicsStepper(None, K, "galpha", dt=1.0, u0=w, rho_inf=rho, fixed=[0], rayleigh=(0.0, 0.0))
        g0 = g.kinetic_energy + g.strain_energy
        g.advance_to(20.0)
        energies[rho] = (g.kinetic_energy + g.strain_energy) / g0
    assert energies[1.0] == pytest.approx(1.0, abs=1e-10) and energies[0.5] < 0.2, energies
    assert g.u[0] == 0


def test_errors_leave_the_state_as_it_was():
    K, u0, b = problem()
    with pytest.raises(fem.InvalidArgument, match="dt"):
        fem.TimeStepper(None, K, "be", dt=0.0, u0=u0)
    with pytest.raises(fem.InvalidArgument, match="scheme"):
        fem.TimeStepper(None, K, "rk4", dt=0.1, u0=u0)
    with pytest.raises(fem.InvalidArgument, match="scheme"):
        fem.DynamicsStepper(None, K, "be", dt=0.1, u0=u0)
    with pytest.raises(fem.InvalidArgument, match="u0"):
        fem.TimeStepper(None, K, "be", dt=0.1, u0=u0[:-1])
    assert not [k for k in fem.store.keys() if k.startswith("fem.")], "failed constructors leave nothing"

    calls = []

    def load(t):
        calls.append(t)
        if len(calls) > 1:
            raise ZeroDivisionError("the load failed")
        return b

    s = fem.TimeStepper(None, K, "be", dt=0.1, u0=u0, load=load)
    s.step()
    t, u = s.t, s.u
    with pytest.raises(ZeroDivisionError, match="the load failed"):
        s.step()
    assert s.t == t and np.array_equal(s.u, u)
    with pytest.raises(fem.InvalidArgument, match="max_dt"):
        s.step(0.0)
    s2 = fem.TimeStepper(None, K, "be", dt=0.1, u0=u0, load=lambda t: b[:-1])
    with pytest.raises(fem.InvalidArgument, match="gave 19 values"):
        s2.step()
    with pytest.raises(RuntimeError, match="stop"):
        s2 = fem.TimeStepper(None, K, "be", dt=0.1, u0=u0)
        s2.advance_to(1.0, callback=lambda st: (_ for _ in ()).throw(RuntimeError("stop")))
    assert s2.t == pytest.approx(0.1), "the callback stopped advance_to after the first step"
    s.close()
    s2.close()
    with pytest.raises(fem.InvalidArgument, match="closed"):
        s.step()
    assert not [k for k in fem.store.keys() if k.startswith("fem.TimeStepper/")]


def test_adaptive_dynamics_follows_a_pulse_on_the_ladder():
    # M = I, K = chain: a load pulse at t = 1 shrinks the steps, which regrow after it.
    K, u0, b = problem()
    before = fem.store.counter("solve.factorizations")
    s = fem.DynamicsStepper(None, K, "newmark", dt=0.2, u0=0 * u0, v0=None, tolerance=1e-3, atol=1e-3,
                            load=lambda t: np.exp(-((t - 1) / 0.2) ** 2) * b)
    steps = []
    s.advance_to(4.0, callback=lambda st: steps.append(st.t))
    r = s.report
    assert s.t == pytest.approx(4.0, abs=1e-12)
    assert r["rejected"] > 0 and r["dt_max"] / r["dt_min"] >= 4
    ratio = np.log2(0.2 / np.array(r["distinct_dts"]))
    assert ratio[:-1] == pytest.approx(np.round(ratio[:-1]), abs=1e-9)  # the ladder (the last: cut to land)
    # One factorization per step size, and M's for the initial acceleration.
    assert fem.store.counter("solve.factorizations") - before == len(r["distinct_dts"]) + 1
    s.close()
