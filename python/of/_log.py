"""The frontend's messages on stderr, as $OF_LOG asks: "debug" adds every
compile with each pass and its time, and cache hits; "quiet" silences the
progress of compiling traced functions."""

import os
import sys

from ._runtime import world

_LOG = os.environ.get("OF_LOG", "").lower()


def log_debug(message):
    if _LOG == "debug":
        print(f"[of] {message}", file=sys.stderr, flush=True)


def progress(message):
    """A compile's progress, on rank 0 unless OF_LOG=quiet."""
    if world()[0] == 0 and os.environ.get("OF_LOG", "").lower() != "quiet":
        print(f"[of] {message}", file=sys.stderr, flush=True)
