"""Shared set-up of the package tests (run by scripts/test.sh in the virtual environment that
scripts/setup_python.sh --torchrec builds). The TorchRec tests skip only when torchrec cannot be
imported *and* EMBSHARD_REQUIRE_TORCHREC is unset; the test script sets it, so CI never skips."""

import logging
import os
import pathlib
import warnings

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
DATA = REPO / "tests" / "data"


def torchrec_or_skip():
    try:
        import torchrec.distributed.types  # noqa: F401
    except Exception as error:  # ImportError, or a broken native library (OSError)
        if os.environ.get("EMBSHARD_REQUIRE_TORCHREC") == "1":
            raise
        pytest.skip(f"torchrec cannot be imported: {error!r}")
    warnings.filterwarnings("ignore")
    logging.getLogger("torchrec").setLevel(logging.ERROR)


@pytest.fixture
def torchrec():
    torchrec_or_skip()
    import torchrec as module
    return module
