"""Shared fixtures of the Python module's tests: the mbsc of the same build (MBS_MBSC, set by
ctest; else build/ci/mbsc), the examples and the test models, a scratch directory."""

import os
import pathlib
import subprocess

import numpy as np
import pytest

HERE = pathlib.Path(__file__).resolve().parent
SOURCE = HERE.parent.parent
EXAMPLES = SOURCE / "examples"
MODELS = HERE / "models"


def mbsc_path() -> str:
    return os.environ.get("MBS_MBSC", str(SOURCE / "build" / "ci" / "mbsc"))


def run_mbsc(*args, cwd=None, check=True):
    """mbsc with the arguments; returns the CompletedProcess (text)."""
    p = subprocess.run([mbsc_path(), *map(str, args), "-q"], cwd=cwd, capture_output=True,
                       text=True)
    if check and p.returncode != 0:
        raise AssertionError(f"mbsc {' '.join(map(str, args))}: exit {p.returncode}\n{p.stderr}")
    return p


def read_csv(path):
    """A result file of mbsc: its column names and its rows as an array (exact numbers)."""
    with open(path) as f:
        header = f.readline().rstrip("\n").split(",")
    data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    return [h.strip('"') for h in header], data


@pytest.fixture
def mbsc():
    return run_mbsc
