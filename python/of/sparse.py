"""of.sparse and sparse COO tensors (torch.sparse_coo_tensor, Tensor.to_sparse).

of stores a sparse tensor densely: `sparse_coo_tensor` and `to_sparse`
give a tensor whose `layout` is `of.sparse_coo` and whose value is the
dense one (duplicate indices summed, as PyTorch's coalesce does), so every
operation and gradient is the dense one and the results are PyTorch's;
what differs is memory (N x N elements for an N-node graph's adjacency) and
that results of operations are dense (strided) tensors. `indices()`,
`values()` and `_nnz()` are read from the value's non-zero elements, in
PyTorch's coalesced (row-major) order. Programs such as pytorch/examples'
GCN, which build a normalised adjacency with sparse_coo_tensor and multiply
it with torch.spmm, run unchanged."""

import numpy as np

from . import _dtype as dt
from . import _ops
from ._tensor import Tensor


def _flagged(t):
    """`t`'s value as a tensor whose layout is sparse_coo."""
    out = t.clone()
    out._layout = dt.sparse_coo
    return out


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None,
                      requires_grad=False, check_invariants=None, is_coalesced=None):
    """A sparse COO tensor of `size` with `values[k]` at column k of
    `indices` (ndim x nnz); values at the same index are summed. Without
    `size` the smallest that holds every index."""
    del check_invariants, is_coalesced  # of's indices are always checked; the value is coalesced
    idx = np.asarray(indices.numpy() if isinstance(indices, Tensor) else indices)
    if idx.dtype.kind not in "iu":
        raise TypeError(f"sparse_coo_tensor: indices must be integers, not {idx.dtype}")
    if idx.ndim != 2:
        raise ValueError(f"sparse_coo_tensor: indices must be 2-D (sparse dims x nnz), "
                         f"not of shape {list(idx.shape)}")
    if isinstance(values, Tensor):
        if values.requires_grad:
            raise NotImplementedError(
                "sparse_coo_tensor: values that require gradients are not supported "
                "(of stores sparse tensors densely; build the dense tensor with index_put)")
        vals = values.numpy()
        dtype = dtype or values.dtype
    else:
        vals = np.asarray(values)
        dtype = dtype or dt.default_for(vals.reshape(-1)[0].item() if vals.size else 0.0)
    sparse_dims, nnz = idx.shape
    if vals.shape[:1] != (nnz,):
        raise ValueError(f"sparse_coo_tensor: {nnz} indices but values of shape "
                         f"{list(vals.shape)}")
    if size is None:
        size = tuple(int(m) + 1 for m in (idx.max(axis=1) if nnz else [0] * sparse_dims))
        size += vals.shape[1:]
    size = tuple(int(s) for s in size)
    if len(size) != sparse_dims + vals.ndim - 1 or tuple(size[sparse_dims:]) != vals.shape[1:]:
        raise ValueError(f"sparse_coo_tensor: size {list(size)} does not match indices of "
                         f"{sparse_dims} sparse dims and values of shape {list(vals.shape)}")
    if nnz and ((idx < 0).any() or (idx >= np.array(size[:sparse_dims]).reshape(-1, 1)).any()):
        raise IndexError(f"sparse_coo_tensor: an index is outside size {list(size)}")
    dense = np.zeros(size, dtype.np)
    np.add.at(dense, tuple(idx), vals.astype(dtype.np, copy=False))
    t = Tensor(dense, dtype=dtype, device=device)
    t._layout = dt.sparse_coo
    return t.requires_grad_() if requires_grad else t


def _to_sparse(self, *args, layout=None, **kwargs):
    if args or kwargs or layout not in (None, dt.sparse_coo):
        raise NotImplementedError("to_sparse: of has the sparse COO layout only "
                                  "(to_sparse() with no arguments)")
    return _flagged(self)


def _to_dense(self, dtype=None, *, masked_grad=True):
    del masked_grad
    if self._layout is not dt.sparse_coo:
        return self if dtype is None else _ops.cast(self, dtype)
    out = self.clone()
    return out if dtype is None else _ops.cast(out, dtype)


def _require_sparse(self, what):
    if self._layout is not dt.sparse_coo:
        raise RuntimeError(f"{what}: expected a sparse COO tensor, got a strided one")


def _nonzero_positions(self):
    return np.nonzero(self.detach().numpy())


def _indices(self):
    _require_sparse(self, "indices")
    return _ops.tensor(np.stack(_nonzero_positions(self)).astype(np.int64))


def _values(self):
    _require_sparse(self, "values")
    value = self.detach().numpy()
    return _ops.tensor(value[_nonzero_positions(self)], dtype=self.dtype)


def _nnz(self):
    _require_sparse(self, "_nnz")
    return int(np.count_nonzero(self.detach().numpy()))


def _coalesce(self):
    _require_sparse(self, "coalesce")
    return self


def mm(mat1, mat2, reduce="sum"):
    """torch.sparse.mm: the matrix product (dense, as of's results are)."""
    if reduce != "sum":
        raise NotImplementedError(f"sparse.mm: reduce={reduce!r} (of has 'sum')")
    return _ops.mm(mat1, mat2)


def spmm(input, mat2):  # noqa: A002
    """torch.spmm: `input` (sparse or dense) times dense `mat2`."""
    return _ops.mm(input, mat2)


def sum(input, dim=None, dtype=None):  # noqa: A001,A002
    """torch.sparse.sum: the sum over `dim` (all by default), dense."""
    out = _ops.sum(input) if dim is None else _ops.sum(input, dim)
    return out if dtype is None else _ops.cast(out, dtype)


Tensor._layout = dt.strided
Tensor.layout = property(lambda self: self._layout)
Tensor.is_sparse = property(lambda self: self._layout is dt.sparse_coo)
Tensor.to_sparse = _to_sparse
Tensor.to_sparse_coo = lambda self: _to_sparse(self)
Tensor.to_dense = _to_dense
Tensor.indices, Tensor._indices = _indices, _indices
Tensor.values, Tensor._values = _values, _values
Tensor._nnz = _nnz
Tensor.coalesce = _coalesce
Tensor.is_coalesced = lambda self: (_require_sparse(self, "is_coalesced"), True)[1]

__all__ = ["mm", "sum"]
