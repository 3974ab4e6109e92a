"""torch.nn.utils.rnn: batches of variable-length sequences, padded
(pad_sequence) or packed (PackedSequence: the valid steps, time-major,
with the batch size at each step), as PyTorch's; of's recurrent layers
take either (a packed batch runs on its padded form, each sequence's state
held once it has ended)."""

import collections

import numpy as np

from ... import _ops
from ..._tensor import Tensor


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """The sequences (each L_i x *) stacked into one L x B x * tensor (B x L
    x * with batch_first), padded with `padding_value` on `padding_side`
    to the longest L."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got "
                         f"{padding_side}.")
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    if any(not isinstance(s, Tensor) for s in sequences):
        raise TypeError("pad_sequence: expected a sequence of tensors")
    tail = tuple(sequences[0].shape[1:])
    if any(tuple(s.shape[1:]) != tail for s in sequences):
        raise RuntimeError("pad_sequence: the sequences' trailing dimensions differ: " +
                           ", ".join(str(list(s.shape)) for s in sequences))
    longest = max(s.shape[0] for s in sequences)
    rows = []
    for s in sequences:
        missing = longest - s.shape[0]
        if missing:
            pad = _ops.full((missing,) + tail, padding_value, dtype=s.dtype, device=s.device)
            s = _ops.cat([s, pad] if padding_side == "right" else [pad, s], 0)
        rows.append(s)
    return _ops.stack(rows, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The sequences pad_sequence stacked, each cut to its length."""
    x = padded_sequences if batch_first else _ops.transpose(padded_sequences, 0, 1)
    return [_ops.narrow(x[i], 0, 0, int(n)) for i, n in enumerate(_lengths(lengths))]


_Fields = collections.namedtuple("PackedSequence_",
                                 ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])


class PackedSequence(_Fields):
    """A packed batch (torch.nn.utils.rnn.PackedSequence): `data` holds the
    valid steps of the sorted batch, time-major (step t of every sequence
    longer than t, then step t + 1, ...), `batch_sizes` (int64, CPU) how
    many sequences step t has, `sorted_indices` the batch's order by
    decreasing length and `unsorted_indices` its inverse (None when the
    batch was given sorted)."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = _invert(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def cpu(self):
        return self.to("cpu")

    def float(self):
        return type(self)(self.data.float(), *self[1:])

    def double(self):
        return type(self)(self.data.double(), *self[1:])

    @property
    def is_cuda(self):
        return self.data.device.type == "cuda"

    def is_pinned(self):
        return False


def _lengths(lengths):
    if isinstance(lengths, Tensor):
        if lengths._program is not None:
            raise RuntimeError("the lengths of a packed sequence must be known values (a list "
                               "or an eager tensor), not a value of a traced program")
        return [int(v) for v in lengths.numpy().reshape(-1)]
    return [int(v) for v in np.asarray(lengths).reshape(-1)]


def _invert(permutation):
    p = permutation.numpy() if isinstance(permutation, Tensor) else np.asarray(permutation)
    inverse = np.empty_like(p)
    inverse[p] = np.arange(len(p))
    return _ops.tensor(inverse.astype(np.int64))


def _batch_sizes(lengths):
    """Sequences longer than t, for each step t of the longest."""
    lengths = np.asarray(lengths)
    return np.array([(lengths > t).sum() for t in range(int(lengths.max()))], np.int64)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):  # noqa: A002
    """The valid steps of a padded batch (T x B x *, B x T x * with
    batch_first) of sequences of `lengths`, packed."""
    lengths = _lengths(lengths)
    if enforce_sorted:
        if any(a < b for a, b in zip(lengths, lengths[1:])):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when "
                               "`enforce_sorted` is True. You can pass `enforce_sorted=False` "
                               "to pack_padded_sequence and/or pack_sequence to sidestep this "
                               "requirement if you do not need ONNX exportability.")
        sorted_indices = None
    else:
        order = np.argsort(-np.asarray(lengths), kind="stable")
        sorted_indices = _ops.tensor(order.astype(np.int64))
        lengths = [lengths[i] for i in order]
        input = _ops.index_select(input, 0 if batch_first else 1, sorted_indices)
    if min(lengths, default=0) <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    if batch_first:
        input = _ops.transpose(input, 0, 1)
    steps, batch = input.shape[0], input.shape[1]
    if len(lengths) != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{len(lengths)} (batch_size={batch})")
    if max(lengths) > steps:
        raise RuntimeError(f"a length ({max(lengths)}) is longer than the padded batch's "
                           f"{steps} steps")
    sizes = _batch_sizes(lengths)
    rows = np.concatenate([t * batch + np.arange(n) for t, n in enumerate(sizes)])
    flat = _ops.reshape(input, (steps * batch,) + tuple(input.shape[2:]))
    data = _ops.index_select(flat, 0, _ops.tensor(rows.astype(np.int64)))
    return PackedSequence(data, _ops.tensor(sizes), sorted_indices, None)


def _padded(sequence, padding_value=0.0, total_length=None):
    """A packed batch as T x B x * in its sorted order, and the sorted lengths."""
    data, sizes = sequence.data, sequence.batch_sizes.numpy()
    steps, batch = len(sizes), int(sizes[0])
    total = steps if total_length is None else total_length
    if total < steps:
        raise ValueError(f"Expected total_length to be at least the length of the longest "
                         f"sequence in input, but got total_length={total_length} and max "
                         f"sequence length being {steps}")
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    index = np.full((total, batch), data.shape[0], np.int64)  # the padding row
    for t in range(steps):
        index[t, :sizes[t]] = offsets[t] + np.arange(sizes[t])
    tail = tuple(data.shape[1:])
    pad = _ops.full((1,) + tail, padding_value, dtype=data.dtype, device=data.device)
    rows = _ops.index_select(_ops.cat([data, pad], 0), 0, _ops.tensor(index.reshape(-1)))
    lengths = [int((sizes > b).sum()) for b in range(batch)]
    return _ops.reshape(rows, (total, batch) + tail), lengths


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """A packed batch padded again: (T x B x * or B x T x *, the lengths as
    an int64 tensor), in the batch's original order."""
    padded, lengths = _padded(sequence, padding_value, total_length)
    lengths = np.asarray(lengths, np.int64)
    if sequence.unsorted_indices is not None:
        padded = _ops.index_select(padded, 1, sequence.unsorted_indices)
        lengths = lengths[sequence.unsorted_indices.numpy()]
    if batch_first:
        padded = _ops.transpose(padded, 0, 1)
    return padded, _ops.tensor(lengths.astype(np.int64))


def pack_sequence(sequences, enforce_sorted=True):
    """Sequences (each L_i x *) packed: pad_sequence, then pack_padded_sequence."""
    sequences = list(sequences)
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)


def _repack(padded, sequence):
    """A T x B x * result of a packed batch's padded form packed as `sequence` is."""
    sizes = sequence.batch_sizes.numpy()
    batch = padded.shape[1]
    rows = np.concatenate([t * batch + np.arange(n) for t, n in enumerate(sizes)])
    flat = _ops.reshape(padded, (padded.shape[0] * batch,) + tuple(padded.shape[2:]))
    data = _ops.index_select(flat, 0, _ops.tensor(rows.astype(np.int64)))
    return PackedSequence(data, sequence.batch_sizes, sequence.sorted_indices,
                          sequence.unsorted_indices)



__all__ = ["PackedSequence", "pack_padded_sequence", "pack_sequence", "pad_packed_sequence",
           "pad_sequence", "unpack_sequence", "unpad_sequence"]
