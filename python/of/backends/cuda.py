"""torch.backends.cuda: `matmul.allow_tf32` (see of.backends)."""

import types

matmul = types.SimpleNamespace(allow_tf32=False)
