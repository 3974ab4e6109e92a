"""DLRM (Naumov et al. 2019, facebookresearch/dlrm's dlrm_s_pytorch.py),
written against PyTorch: dense features through a bottom MLP, each sparse
feature a bag of ids pooled by an EmbeddingBag table (mode "sum", 1-D ids
cut into bags by offsets), the pairwise dot products of the bottom MLP's
output and the pooled embeddings ("dot" interaction, the strictly lower
triangle) concatenated to the bottom output, then a top MLP to one logit
and BCEWithLogits. train_dlrm.py and test/Python/test_workloads_more.py run
it under PyTorch as written and under of with only its three import lines
changed.

Under of the training script splits every table over the ranks by rows
(S(0)) and gives every rank all the ids (B): each rank looks its ids up in
its own rows (zeros for the others) and pools them, a partial sum (P) of
each bag, as OneFlow's and TorchRec's row-wise sharding do; the compiler
reduces the partial sums where the interaction needs them.

The sparse update. With plain SGD (the training script's), a table's
update touches only the rows the batch names: the compiled step's
embedding_grad of the pooled gradients, scaled by -lr, is scattered into
the table itself (canonicalization's `embedding_grad ... into`), each rank
into its own rows (S(0): the ids shifted by the rank's first row, the
others dropped, the lookup's own rule), in the table's own storage: no
rank holds a gradient of the table, dense or whole. With momentum or
weight decay every row moves each step, so there the gradient is dense
over the rank's rows, as in PyTorch's dense SGD. `nn.EmbeddingBag(
sparse=True)` (a sparse gradient tensor in eager mode) raises
NotImplementedError in of.

Beside dlrm_s_pytorch.py: the ids of all tables come as one [tables, N]
tensor and the offsets as one [tables, batch] tensor (each table the same
number N of ids per batch, the bags of any sizes), so that a compiled step
has fixed shapes; the interaction's lower triangle is an index_select of
the flattened [F, F] products.
"""

import torch
import torch.nn as nn
from torch.nn import functional as F


def mlp(sizes, sigmoid_last=False):
    """Linear layers of sizes[0] -> sizes[1] -> ..., ReLU between (and
    after the last, as DLRM's bottom MLP) unless sigmoid_last is None."""
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2 or sigmoid_last is False:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class DLRM(nn.Module):
    """table_sizes: rows per table; bottom: the bottom MLP's sizes after the
    dense features (the last is the embedding dimension); top: the top
    MLP's hidden sizes (a last layer to one logit is added)."""

    def __init__(self, dense_features=13, table_sizes=(1000, 1000), embedding_dim=16,
                 bottom=(64, 16), top=(64, 32)):
        super().__init__()
        if bottom[-1] != embedding_dim:
            raise ValueError(f"the bottom MLP ends at {bottom[-1]} features, not the "
                             f"embedding dimension {embedding_dim}")
        self.bottom = mlp((dense_features,) + tuple(bottom))
        self.tables = nn.ModuleList([nn.EmbeddingBag(n, embedding_dim, mode="sum")
                                     for n in table_sizes])
        fields = len(table_sizes) + 1
        self.pairs = [i * fields + j for i in range(fields) for j in range(i)]
        self.top = mlp((embedding_dim + len(self.pairs),) + tuple(top) + (1,), sigmoid_last=None)

    def interact(self, dense, pooled):
        """The bottom output and the pooled embeddings' pairwise dot
        products (i > j), after the bottom output: [B, D + F(F-1)/2]."""
        fields = torch.stack([dense] + pooled, 1)                    # [B, F, D]
        products = fields @ fields.transpose(1, 2)                    # [B, F, F]
        flat = products.reshape(products.shape[0], -1)
        return torch.cat([dense, flat.index_select(1, torch.tensor(self.pairs))], 1)

    def forward(self, dense, ids, offsets, labels):
        """dense [B, dense_features], ids [tables, N], offsets [tables, B],
        labels [B] (0 or 1): the mean binary cross entropy of the click
        logits."""
        x = self.bottom(dense)
        pooled = [table(ids[t], offsets[t]) for t, table in enumerate(self.tables)]
        logits = self.top(self.interact(x, pooled)).reshape(-1)
        return F.binary_cross_entropy_with_logits(logits, labels)
