"""Writes corrupted copies of a binary plan, one per kind of damage.

usage: corrupt_plan.py PLAN OUTDIR
"""
import pathlib
import sys

plan = bytearray(pathlib.Path(sys.argv[1]).read_bytes())
out = pathlib.Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)


def write(name, data):
    (out / f"{name}.ofp").write_bytes(bytes(data))


flipped = bytearray(plan)
flipped[len(plan) // 2] ^= 0x5A  # inside the blobs
write("flipped", flipped)
flipped_meta = bytearray(plan)
flipped_meta[80] ^= 0x01  # inside the FlatBuffer
write("flipped-metadata", flipped_meta)
write("truncated", plan[: len(plan) - 100])
write("header-only", plan[:64])
write("empty", b"")
version = bytearray(plan)
version[8] = 9  # format version 9
write("version", version)
magic = bytearray(plan)
magic[0:4] = b"NOPE"
write("magic", magic)
write("trailing", plan + b"\0" * 16)
