"""Differentiable sparse solves and assembly for PyTorch (float64, CPU tensors).

    x = fem.torch.sparse_solve(values, b, pattern)

solves A x = b with A the matrix of `pattern` (a fem.CsrPattern) and `values` (one per nonzero).
The forward pass factorizes through the store: the symbolic analysis once per pattern, the
numeric factorization once per call. The backward pass solves Aᵀ g = ∂L/∂x with the *same
factorization object*, held by the autograd graph (not looked up by key: a newer matrix under
the key, an erase or an eviction cannot change it), and returns ∂L/∂values = −g[row]·x[col] on
the pattern and ∂L/∂b = g. No second factorization, of A or of Aᵀ. The graph lets the
factorization go once the backward pass has used it, so that the next forward pass refactorizes
it in place; a second backward through a retained graph factorizes the saved values again, on
its own (fem.factorize(..., publish=False)): a backward pass never writes the store, so a newer
matrix that the user put under the solve's key stays there.

Gradients through assembly: `assemble(assembler, fem.Diffusion(), k)` gives the matrix values
for a per-cell coefficient k (a tensor), with the backward pass through the cached element→slot
map; `dirichlet(values, b, pattern, bc)` imposes the conditions in differentiable form.
"""
import numpy as np
import torch

import fem

__all__ = ["SparseSolve", "sparse_solve", "assemble", "dirichlet"]


def _numpy(t):
    return t.detach().contiguous().numpy()


def _check(what, *tensors):
    for t in tensors:
        if t.dtype != torch.float64 or t.device.type != "cpu":
            raise fem.InvalidArgument(f"{what}: float64 CPU tensors wanted, not {t.dtype} on {t.device}")


class SparseSolve(torch.autograd.Function):
    @staticmethod
    def forward(ctx, values, b, pattern, key, backend):
        _check("sparse_solve", values, b)
        F = fem.factorize(pattern, _numpy(values), key=key, backend=backend)
        x = torch.from_numpy(F.solve(_numpy(b)))
        ctx.factorization = F  # the very object the backward pass solves with
        ctx.pattern, ctx.backend = pattern, F.backend  # what a second backward factorizes with
        ctx.save_for_backward(values, x)
        return x

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_x):
        values, x = ctx.saved_tensors
        F = ctx.factorization
        if F is None:
            # A second backward through a retained graph: the saved values factorized again, privately.
            # Published under the solve's key, they would replace whatever the user has put there since.
            F = fem.factorize(ctx.pattern, _numpy(values), backend=ctx.backend, publish=False)
        # Released once used: in a loop, the next forward then refactorizes it in place (fem.factorize)
        # instead of allocating new factors while this graph is still referenced.
        ctx.factorization = None
        g = torch.from_numpy(F.solve_transpose(_numpy(grad_x)))
        grad_values = None
        if ctx.needs_input_grad[0]:  # −g[row]·x[col], summed over the columns of a block
            grad_values = torch.from_numpy(ctx.pattern.outer_values(g.numpy(), _numpy(x), -1.0))
        grad_b = g if ctx.needs_input_grad[1] else None
        return grad_values, grad_b, None, None, None


def sparse_solve(values, b, pattern, key=None, backend="auto"):
    """x with A x = b, A = (pattern, values); b of shape (n,) or (n, k). Differentiable in values
    and b. `key`: where the matrix is published (default: one key per pattern)."""
    return SparseSolve.apply(values, b, pattern, key, backend)


class _Assemble(torch.autograd.Function):
    @staticmethod
    def forward(ctx, coefficient, assembler, form):
        _check("assemble", coefficient)
        ctx.assembler, ctx.form = assembler, form
        values = np.empty(assembler.pattern.nnz)
        if isinstance(form, fem.Diffusion):
            assembler.diffusion(_numpy(coefficient), out=values)
        elif isinstance(form, fem.Mass):
            assembler.mass(_numpy(coefficient), out=values)
        else:
            raise fem.InvalidArgument(f"assemble: Diffusion or Mass, not {form!r}")
        return torch.from_numpy(values)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_values):
        return torch.from_numpy(ctx.assembler.cell_gradient(ctx.form, _numpy(grad_values))), None, None


def assemble(assembler, form, coefficient):
    """The matrix values (one per nonzero of assembler.pattern) of Diffusion or Mass with the
    per-cell coefficient `coefficient` (a tensor of one value per cell), differentiable in it."""
    return _Assemble.apply(coefficient, assembler, form)


def dirichlet(values, b, pattern, bc):
    """(values', b') with the conditions of `bc` (a fem.DirichletBC) imposed as
    fem.DirichletBC.apply does (constrained rows and columns zeroed but the diagonal, b lifted),
    written with torch operations so that gradients flow to values and b. `pattern` must be the
    pattern of the conditions' space (InvalidArgument naming both spaces otherwise)."""
    bc.check_pattern(pattern, "fem.torch.dirichlet: pattern")
    n = pattern.shape[0]
    rows = torch.from_numpy(pattern.row_of_nonzeros()).long()
    cols = torch.from_numpy(np.array(pattern.indices, dtype=np.int64))
    constrained = torch.zeros(n, dtype=torch.bool)
    dofs = torch.from_numpy(bc.dofs).long()
    constrained[dofs] = True
    g = torch.zeros(n, dtype=values.dtype)
    g[dofs] = torch.from_numpy(bc.values)
    diagonal = rows == cols
    keep = ~(constrained[rows] | constrained[cols]) | diagonal
    new_values = torch.where(keep, values, torch.zeros_like(values))
    # Free rows: b_i − Σ_j A_ij g_j over the constrained columns j; constrained rows: A_kk g_k.
    lifted = (constrained[cols] & ~constrained[rows]) * values * g[cols]
    new_b = b - torch.zeros(n, dtype=values.dtype).index_add(0, rows, lifted)
    diag_values = torch.zeros(n, dtype=values.dtype).index_add(0, rows, torch.where(diagonal, values, torch.zeros_like(values)))
    new_b = torch.where(constrained, diag_values * g, new_b)
    return new_values, new_b
