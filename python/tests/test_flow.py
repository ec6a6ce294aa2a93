"""fem.solve_flow and fem.flow_sizes (fem::flow): Stokes Poiseuille flow exact with Taylor–Hood,
the velocity data made with fem.DirichletBC on the P2 vector space, and a Navier–Stokes cavity by
Picard and Newton on one symbolic analysis."""
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
