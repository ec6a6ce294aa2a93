"""fem.torch: the differentiable cached solve and assembly (PyTorch 1.13, float64)."""
import numpy as np
import pytest
import scipy.sparse as sp

torch = pytest.importorskip("torch", reason="python3-torch is not installed (./scripts/install-deps.sh torch)")

import fem  # noqa: E402
import fem.torch as ft  # noqa: E402


def laplacian(n):
    fem.generate_mesh(f"gen:square-tri3:{n}", f"m{n}")
    V = fem.FunctionSpace(f"m{n}", 1)
    a = fem.Assembler(V)
    bc = fem.DirichletBC(V, {"all": 0.0})
    A, _ = bc.apply(a.matrix(fem.Diffusion()))
    return a, bc, A


def test_gradcheck_spd():
    _, _, A = laplacian(3)
    values = torch.tensor(np.asarray(A.data), requires_grad=True)
    b = torch.randn(A.shape[0], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda v, b: ft.sparse_solve(v, b, A.pattern), (values, b))


def test_gradcheck_unsymmetric_uses_the_transpose():
    n = 12
    S = (sp.random(n, n, density=0.3, random_state=7) + 3 * sp.eye(n)).tocsr()
    S.sort_indices()
    pattern = fem.CsrPattern(n, n, S.indptr, S.indices)
    assert abs(S - S.T).max() > 0.1  # Aᵀ ≠ A: a backward with A instead of Aᵀ would fail
    values = torch.tensor(S.data, requires_grad=True)
    b = torch.randn(n, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda v, b: ft.sparse_solve(v, b, pattern), (values, b))
    B = torch.randn(n, 3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda v, B: ft.sparse_solve(v, B, pattern), (values, B))


def test_one_factorization_for_forward_and_backward():
    _, _, A = laplacian(16)
    values = torch.tensor(np.asarray(A.data), requires_grad=True)
    b = torch.ones(A.shape[0], dtype=torch.float64)
    x = ft.sparse_solve(values, b, A.pattern)
    c0 = fem.store.counters()
    (x**2).sum().backward()
    c1 = fem.store.counters()
    assert c0["solve.factorizations"] == 1 and c1["solve.factorizations"] == 1
    # Next values on the same pattern: one numeric factorization, no new analysis.
    x = ft.sparse_solve(values.detach() * 1.5, b, A.pattern)
    c2 = fem.store.counters()
    assert c2["solve.factorizations"] == 2 and c2["solve.symbolic_analyses"] == 1


def test_backward_uses_the_forward_factorization_even_after_the_key_changed():
    _, _, A = laplacian(6)
    v0 = torch.tensor(np.asarray(A.data), requires_grad=True)
    b = torch.linspace(0, 1, A.shape[0], dtype=torch.float64)
    x = ft.sparse_solve(v0, b, A.pattern, key="K")
    loss = (x**3).sum()
    fem.store.put("K", A.with_values(np.asarray(A.data) * 5.0))  # a newer matrix under the key
    fem.solve("K", b.numpy())  # ...factorized and cached
    loss.backward()
    grad = v0.grad.clone()
    v1 = v0.detach().clone().requires_grad_(True)
    (ft.sparse_solve(v1, b, A.pattern, key="other") ** 3).sum().backward()
    assert torch.allclose(grad, v1.grad, rtol=1e-12, atol=1e-14)


def test_a_retained_graph_backpropagates_twice():
    _, _, A = laplacian(6)
    v = torch.tensor(np.asarray(A.data), requires_grad=True)
    b = torch.ones(A.shape[0], dtype=torch.float64)
    loss = (ft.sparse_solve(v, b, A.pattern) ** 2).sum()
    loss.backward(retain_graph=True)
    first = v.grad.clone()
    before = fem.store.counters()
    v.grad = None
    loss.backward()  # the factorization was released after the first pass: made again, same gradient
    assert fem.store.counters() == before  # privately: the store is neither read nor written
    assert torch.allclose(v.grad, first, rtol=1e-12, atol=0)


def test_a_second_backward_never_republishes_under_the_solve_key():
    _, _, A = laplacian(6)
    v = torch.tensor(np.asarray(A.data), requires_grad=True)
    b = torch.linspace(1, 2, A.shape[0], dtype=torch.float64)
    loss = (ft.sparse_solve(v, b, A.pattern, key="user/K") ** 2).sum()
    newer = np.asarray(A.data) * 3.0
    fem.store.put("user/K", A.with_values(newer))  # the user's newer matrix under the solve's key
    version = fem.store.version("user/K")
    loss.backward(retain_graph=True)
    first = v.grad.clone()
    v.grad = None
    loss.backward()
    assert fem.store.version("user/K") == version
    assert np.array_equal(np.asarray(fem.store["user/K"].data), newer)
    # Both passes give the gradient of the saved values: −g xᵀ on the pattern, Aᵀ g = 2x.
    dense = sp.csr_matrix((np.asarray(A.data), A.pattern.indices, A.pattern.indptr), shape=A.shape).toarray()
    x = np.linalg.solve(dense, b.numpy())
    g = np.linalg.solve(dense.T, 2 * x)
    rows = A.pattern.row_of_nonzeros()
    expected = -g[rows] * x[np.asarray(A.pattern.indices)]
    for grad in (first, v.grad):
        assert np.allclose(grad.numpy(), expected, rtol=1e-10, atol=1e-12)


def test_a_training_loop_refactorizes_in_place():
    _, _, A = laplacian(12)
    v = torch.tensor(np.asarray(A.data))
    b = torch.ones(A.shape[0], dtype=torch.float64)
    for it in range(4):
        vi = (v * (1 + 0.1 * it)).requires_grad_(True)
        loss = (ft.sparse_solve(vi, b, A.pattern) ** 2).sum()
        loss.backward()
    c = fem.store.counters()
    assert c["solve.factorizations"] == 4 and c["solve.symbolic_analyses"] == 1
    assert c["solve.recycled"] == 3  # every forward after the first reused the previous factors' memory


def test_batched_right_hand_sides_match_columns():
    _, _, A = laplacian(5)
    n = A.shape[0]
    v = torch.tensor(np.asarray(A.data), requires_grad=True)
    B = torch.randn(n, 4, dtype=torch.float64)
    X = ft.sparse_solve(v, B, A.pattern)
    X.sum().backward()
    g_block = v.grad.clone()
    total = torch.zeros_like(g_block)
    for j in range(4):
        vj = v.detach().clone().requires_grad_(True)
        xj = ft.sparse_solve(vj, B[:, j], A.pattern)
        assert torch.allclose(xj, X[:, j], rtol=1e-12)
        xj.sum().backward()
        total += vj.grad
    assert torch.allclose(g_block, total, rtol=1e-10, atol=1e-13)


def test_gradient_through_assembly_and_dirichlet():
    fem.generate_mesh("gen:square-tri3:4", "g")
    V = fem.FunctionSpace("g", 1)
    a = fem.Assembler(V)
    bc = fem.DirichletBC(V, {"all": lambda x: x[:, 0] + 0.5})  # inhomogeneous: the lifting depends on k too
    f = torch.from_numpy(a.vector(fem.Source(1.0)))

    def solve(k):
        values = ft.assemble(a, fem.Diffusion(), k)
        values, rhs = ft.dirichlet(values, f, a.pattern, bc)
        return ft.sparse_solve(values, rhs, a.pattern)

    k = (1 + torch.rand(V.mesh.num_cells, dtype=torch.float64)).requires_grad_(True)
    assert torch.autograd.gradcheck(solve, (k,))
    # The differentiable conditions give what DirichletBC.apply gives.
    A, rhs = bc.apply(a.matrix(fem.Diffusion(k.detach().numpy())), f.numpy())
    values, b = ft.dirichlet(ft.assemble(a, fem.Diffusion(), k), f, a.pattern, bc)
    assert np.allclose(values.detach().numpy(), A.data, rtol=1e-14, atol=1e-14)
    assert np.allclose(b.detach().numpy(), rhs, rtol=1e-14, atol=1e-14)


def test_dirichlet_refuses_conditions_of_another_space_of_the_same_size():
    fem.generate_mesh("gen:square-tri3:2", "t/coarse")
    fem.generate_mesh("gen:square-tri3:4", "t/fine")
    P2, P1 = fem.FunctionSpace("t/coarse", 2), fem.FunctionSpace("t/fine", 1)
    assert P2.num_dofs == P1.num_dofs  # 25 each
    a = fem.Assembler(P1)
    values = ft.assemble(a, fem.Diffusion(), torch.ones(P1.mesh.num_cells, dtype=torch.float64))
    f = torch.from_numpy(a.vector(fem.Source(1.0)))
    with pytest.raises(fem.InvalidArgument) as e:
        ft.dirichlet(values, f, a.pattern, fem.DirichletBC(P2, {"all": 1.0}))
    assert "P2 of mesh 't/coarse'" in str(e.value) and "P1 of mesh 't/fine'" in str(e.value), str(e.value)
    ft.dirichlet(values, f, a.pattern, fem.DirichletBC(P1, {"all": 1.0}))  # its own space


def test_only_float64_cpu_tensors():
    _, _, A = laplacian(3)
    v = torch.tensor(np.asarray(A.data))
    with pytest.raises(fem.InvalidArgument, match="float64"):
        ft.sparse_solve(v.float(), torch.ones(A.shape[0]), A.pattern)
    with pytest.raises(fem.InvalidArgument, match="float64"):
        ft.assemble(fem.Assembler(fem.FunctionSpace("m3", 1)), fem.Diffusion(), torch.ones(18, dtype=torch.float32))
