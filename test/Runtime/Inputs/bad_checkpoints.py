"""Writes checkpoints of @f's inputs (Inputs/scalars.mlir) into a folder:
one valid, and ones whose data the safetensors format forbids (trailing
bytes, a tensor aliasing another, bytes that belong to no tensor, a header
that is not UTF-8)."""
import json
import struct
import sys

import numpy as np


def write(path, tensors, data):
    header = json.dumps(tensors).encode()
    header += b" " * ((8 - len(header) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header + data)


out = sys.argv[1]
n, s = np.array(5, np.int64).tobytes(), np.array(2.5, np.float32).tobytes()
good = {"n": {"dtype": "I64", "shape": [], "data_offsets": [0, 8]},
        "s": {"dtype": "F32", "shape": [], "data_offsets": [8, 12]}}
write(f"{out}/ok.safetensors", good, n + s)
write(f"{out}/trailing.safetensors", good, n + s + b"xxxx")
write(f"{out}/overlap.safetensors",
      {"n": good["n"], "s": {"dtype": "F32", "shape": [], "data_offsets": [4, 8]}}, n)
write(f"{out}/gap.safetensors",
      {"n": good["n"], "s": {"dtype": "F32", "shape": [], "data_offsets": [12, 16]}},
      n + s + s)
# \xff never occurs in UTF-8: in a metadata value, where a JSON parser that
# takes bytes as they come would accept it.
header = json.dumps({"__metadata__": {"note": "@"}, **good}).encode().replace(b"@", b"\xff")
header += b" " * ((8 - len(header) % 8) % 8)
with open(f"{out}/latin1.safetensors", "wb") as f:
    f.write(struct.pack("<Q", len(header)) + header + n + s)
