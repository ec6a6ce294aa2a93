"""fem.eigsh against scipy.sparse.linalg.eigsh: the smallest, the nearest a shift and an interval
of the Dirichlet Laplacian on a few hundred unknowns (the Lanczos path), store keys and SciPy
inputs, constrained and lumped problems, the Sturm counts, and the errors."""
import warnings

import numpy as np
import pytest
import scipy.linalg
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import fem


def laplacian(n=20, key=None):
    """K, M (fem.CsrMatrix) of P1 on gen:square-tri3:n and the DirichletBC of its boundary."""
    fem.generate_mesh(f"gen:square-tri3:{n}", f"mesh/{n}")
    V = fem.FunctionSpace(f"mesh/{n}", 1)
    a = fem.Assembler(V)
    K, M = a.matrix(fem.Diffusion()), a.matrix(fem.Mass())
    if key:
        fem.store.put(f"{key}/K", K)
        fem.store.put(f"{key}/M", M)
    return K, M, fem.DirichletBC(V, {"all": 0.0})


def free(K, M, fixed):
    keep = np.setdiff1d(np.arange(K.shape[0]), fixed)
    Ks, Ms = K.to_scipy().tocsc(), M.to_scipy().tocsc()
    return Ks[keep][:, keep], Ms[keep][:, keep], keep


def same_subspace(v, reference, M):
    """max over the columns of v of the part outside span(reference), M-orthonormal both."""
    return np.abs(v - reference @ (reference.T @ (M @ v))).max()


def temporary_keys():
    return [k for k in fem.store.keys() if k.startswith("fem.eigsh/")]


def test_smallest_match_scipy_on_the_lanczos_path():
    K, M, bc = laplacian(20)
    w, v, info = fem.eigsh(K, 8, M, constrained=bc, return_info=True)
    Kf, Mf, keep = free(K, M, bc.dofs)
    assert Kf.shape[0] > 200  # above dense_below: Lanczos
    assert "Lanczos" in info["method"]
    ref_w, ref_v = spla.eigsh(Kf, 8, Mf, sigma=0, which="LM")
    np.testing.assert_allclose(w, np.sort(ref_w), rtol=1e-9)
    assert np.all(np.diff(w) >= 0)
    assert v.shape == (K.shape[0], 8)
    assert np.all(v[bc.dofs] == 0)
    Ms = M.to_scipy()
    np.testing.assert_allclose(v.T @ (Ms @ v), np.eye(8), atol=1e-9)
    # Double eigenvalues (the mesh is symmetric about y = x): compare the spans.
    assert same_subspace(v[keep], ref_v, Mf) < 1e-6
    assert info["converged"] and info["missing"] == 0 and info["sturm_count"] == -1
    assert info["residuals"].shape == (8,) and info["residual_max"] < 1e-8
    # The continuous ones: π²(m² + n²), to the P1 discretization error.
    exact = np.pi**2 * np.array([2, 5, 5, 8, 10, 10, 13, 13])
    np.testing.assert_allclose(w, exact, rtol=0.06)


def test_nearest_sigma_match_scipy():
    K, M, bc = laplacian(20)
    Kf, Mf, keep = free(K, M, bc.dofs)
    sigma = 200.0
    w, v, info = fem.eigsh(K, 5, M, sigma=sigma, constrained=bc.dofs, return_info=True)
    ref_w, ref_v = spla.eigsh(Kf, 5, Mf, sigma=sigma, which="LM")
    np.testing.assert_allclose(w, np.sort(ref_w), rtol=1e-9)
    assert same_subspace(v[keep], ref_v, Mf) < 1e-6
    every = scipy.linalg.eigh(Kf.toarray(), Mf.toarray(), eigvals_only=True)
    assert info["sturm_count"] == np.count_nonzero(every < sigma)
    assert fem.count_eigenvalues_below(K, sigma, M, constrained=bc) == info["sturm_count"]
    assert info["shift"] == pytest.approx(sigma)


def test_interval_holds_every_eigenvalue_in_it():
    K, M, bc = laplacian(20)
    Kf, Mf, _ = free(K, M, bc.dofs)
    every = scipy.linalg.eigh(Kf.toarray(), Mf.toarray(), eigvals_only=True)
    a, b = 150.0, 400.0
    inside = every[(every >= a) & (every <= b)]
    assert len(inside) > 6
    w, info = fem.eigsh(K, M=M, interval=(a, b), constrained=bc, return_eigenvectors=False, return_info=True)
    np.testing.assert_allclose(w, inside, rtol=1e-9)
    assert info["sturm_count"] == len(inside) and info["missing"] == 0
    # k cuts it: the lowest k, the rest counted as missing (with a warning).
    with pytest.warns(RuntimeWarning, match="missing"):
        w3, info3 = fem.eigsh(K, 3, M, interval=(a, b), constrained=bc, return_eigenvectors=False,
                              return_info=True)
    np.testing.assert_allclose(w3, inside[:3], rtol=1e-9)
    assert info3["missing"] == len(inside) - 3


def test_store_keys_and_the_factorization_cache():
    K, M, bc = laplacian(20, key="plate")
    w_keys, v_keys = fem.eigsh("plate/K", 6, "plate/M", constrained=bc)
    w_scipy, v_scipy = fem.eigsh(K.to_scipy(), 6, M.to_scipy(), constrained=bc)
    np.testing.assert_allclose(w_keys, w_scipy, rtol=1e-12)
    assert temporary_keys() == []  # SciPy inputs were published and erased
    # Again on the keys: the shifted operator's factorization is a cached entry of K and M.
    before = fem.store.counter("solve.factorizations")
    w_again, _ = fem.eigsh("plate/K", 6, "plate/M", constrained=bc)
    assert fem.store.counter("solve.factorizations") == before
    np.testing.assert_array_equal(w_again, w_keys)


def test_identity_mass_and_lumped_mass_are_analytic():
    n = 300
    T = sp.diags([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1], format="csr")
    theta = np.arange(1, 6) * np.pi / (n + 1)
    w = fem.eigsh(T, 5, return_eigenvectors=False)  # M = None: the identity
    np.testing.assert_allclose(w, 2 - 2 * np.cos(theta), rtol=1e-10)
    h = 1.0 / (n + 1)
    Mc = sp.diags([np.ones(n - 1), 4 * np.ones(n), np.ones(n - 1)], [-1, 0, 1], format="csr") * (h / 6)
    Mh = Mc.tolil()
    Mh[0, 0] = Mh[n - 1, n - 1] = 5 * h / 6  # every row sums to h: lumped, h I
    w_lumped, v = fem.eigsh(T / h, 5, Mh.tocsr(), lumped=True)
    np.testing.assert_allclose(w_lumped, (2 - 2 * np.cos(theta)) / h**2, rtol=1e-10)
    np.testing.assert_allclose(h * (v.T @ v), np.eye(5), atol=1e-10)  # orthonormal in the lumped mass
    w_consistent = fem.eigsh(T / h, 5, Mc, return_eigenvectors=False)
    np.testing.assert_allclose(w_consistent, 6 / h**2 * (1 - np.cos(theta)) / (2 + np.cos(theta)), rtol=1e-10)
    # A dense input goes the same way.
    np.testing.assert_allclose(fem.eigsh(T.toarray(), 5, return_eigenvectors=False), w, rtol=1e-12)


def test_errors_leave_no_temporary_keys():
    n = 250
    A = sp.random(n, n, density=0.02, random_state=1, format="csr") + sp.identity(n, format="csr")
    with pytest.raises(fem.InvalidArgument, match="not symmetric"):
        fem.eigsh(A, 4)
    assert temporary_keys() == []
    with pytest.raises(fem.KeyError, match="no/such/K"):
        fem.eigsh("no/such/K", 4)
    with pytest.raises(fem.InvalidArgument, match="which='LA'"):
        fem.eigsh(sp.identity(n, format="csr"), 4, which="LA")
    with pytest.raises(fem.InvalidArgument, match="sigma and interval"):
        fem.eigsh(sp.identity(n, format="csr"), 4, sigma=1.0, interval=(0, 2))
    # Indefinite K and sigma=None: the smallest are not defined by a shift below the spectrum.
    indefinite = sp.diags(np.linspace(-1, 1, n), format="csr")
    with pytest.raises(fem.InvalidArgument, match="not positive definite"):
        fem.eigsh(indefinite, 4)
    assert temporary_keys() == []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        w = fem.eigsh(indefinite, 4, sigma=0.0, return_eigenvectors=False)  # fine near a shift
    assert np.all(np.abs(w) < 0.02)
