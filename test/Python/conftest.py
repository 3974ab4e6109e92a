"""pytest setup of the Python frontend tests.

The `of` package is imported from the build tree (PYTHONPATH, set by
ctest). Plans are cached in a fresh folder per session, so every run
compiles for real. Inputs come from one seed per run, printed in the
header; OF_TEST_SEED=<seed> reproduces a run.

The reference is PyTorch (CPU). Where torch is not installed, the tests
that need it are skipped, and a session where nothing ran but skips exits
with 77, which ctest reports as skipped, not passed.
"""

import os
import sys
import tempfile

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))

SEED = int(os.environ.get("OF_TEST_SEED") or int.from_bytes(os.urandom(8), "little") >> 1)
_CACHE = tempfile.TemporaryDirectory(prefix="of-cache-")
os.environ["OF_CACHE_DIR"] = _CACHE.name
os.environ.setdefault("OF_LOG", "quiet")


def pytest_report_header(config):
    return f"OF_TEST_SEED={SEED} of cache={_CACHE.name}"


@pytest.fixture
def rng(request):
    print(f"OF_TEST_SEED={SEED}")
    key = [SEED] + list(request.node.nodeid.encode())
    return np.random.default_rng(key)


_outcomes = {"passed": 0, "skipped": 0, "failed": 0}


def pytest_runtest_logreport(report):
    if report.when == "call" or report.outcome == "skipped":
        _outcomes[report.outcome] = _outcomes.get(report.outcome, 0) + 1


def pytest_sessionfinish(session, exitstatus):
    if exitstatus == 0 and _outcomes["passed"] == 0 and _outcomes["skipped"] > 0:
        session.exitstatus = 77


def launch(script, nproc, *args, timeout=600):
    """Runs `script` under `python -m of.distributed.launch --nproc N`;
    returns the completed process (stdout+stderr in .stdout)."""
    import subprocess
    cmd = [sys.executable, "-m", "of.distributed.launch", "--nproc", str(nproc), script,
           *map(str, args)]
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout, env=dict(os.environ))
