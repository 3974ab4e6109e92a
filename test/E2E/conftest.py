"""pytest fixtures of the end-to-end tests.

Every run draws fresh random inputs from one seed, printed in the test
report header and with each failure; set OF_TEST_SEED=<seed> to reproduce.
"""

import ctypes
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))

SEED = int(os.environ.get("OF_TEST_SEED") or
           int.from_bytes(os.urandom(8), "little") >> 1)


def _cuda_devices():
    """How many CUDA devices the driver sees (0 without a driver), asked
    the way libofrt asks: libcuda.so.1's cuInit and cuDeviceGetCount."""
    try:
        cuda = ctypes.CDLL(os.environ.get("OF_CUDA_DRIVER") or "libcuda.so.1")
        count = ctypes.c_int(0)
        if cuda.cuInit(0) != 0 or cuda.cuDeviceGetCount(ctypes.byref(count)) != 0:
            return 0
        return count.value
    except (OSError, AttributeError):
        return 0


CUDA_DEVICES = _cuda_devices()


def skip_without_cuda():
    """Skips (reports unsupported) a test whose plan runs on a GPU."""
    if CUDA_DEVICES == 0:
        pytest.skip("no CUDA device here: the plan compiled but is not run "
                    "(bench/gpu/run.sh runs such plans on a GPU machine)")


def pytest_report_header(config):
    return (f"OF_TEST_SEED={SEED} tools={os.environ.get('OF_TOOLS_DIR', '/work/main/build/bin')} "
            f"cuda_devices={CUDA_DEVICES}")


@pytest.fixture
def rng(request):
    """A generator seeded from SEED and the test's id, so that each test's
    inputs are reproducible on their own."""
    print(f"OF_TEST_SEED={SEED}")
    key = [SEED] + list(request.node.nodeid.encode())
    return np.random.default_rng(key)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        report.sections.append(("seed", f"reproduce with OF_TEST_SEED={SEED}"))
