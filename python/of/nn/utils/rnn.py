"""torch.nn.utils.rnn: padding a batch of variable-length sequences.
(PackedSequence and pack_padded_sequence are not provided yet: of's
recurrent layers take padded batches.)"""

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
    lengths = lengths.tolist() if isinstance(lengths, Tensor) else list(lengths)
    return [_ops.narrow(x[i], 0, 0, int(n)) for i, n in enumerate(lengths)]


__all__ = ["pad_sequence", "unpad_sequence"]
