"""pytest fixtures of the end-to-end tests.

Every run draws fresh random inputs from one seed, printed in the test
report header and with each failure; set OF_TEST_SEED=<seed> to reproduce.
"""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))

SEED = int(os.environ.get("OF_TEST_SEED") or
           int.from_bytes(os.urandom(8), "little") >> 1)


def pytest_report_header(config):
    return f"OF_TEST_SEED={SEED} tools={os.environ.get('OF_TOOLS_DIR', '/work/main/build/bin')}"


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
