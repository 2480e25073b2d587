"""Studies and FMU export from Python against mbsc: the same results file byte for byte."""

import re
import zipfile

import numpy as np
import pytest

import mbs
from conftest import EXAMPLES, MODELS, run_mbsc

MSD = str(EXAMPLES / "mass_spring_damper.mbs")


def test_vary_writes_the_results_file_of_mbsc(tmp_path):
    cli = tmp_path / "cli.csv"
    run_mbsc(MSD, "--vary", "k=50:200:4", "--vary", "d=0.1,0.4", "--objective", "maxabs(x)",
             "--objective", "final(x)", "--t-end", "0.5", "-j", "2", "--output", cli)
    m = mbs.load(MSD)
    s = m.vary(["maxabs(x)", "final(x)"], k="50:200:4", d=[0.1, 0.4], threads=2,
               options={"t_end": 0.5}, output=str(tmp_path / "py.csv"))
    assert (tmp_path / "py.csv").read_bytes() == cli.read_bytes()
    assert len(s) == 8 and s["status"] == ["ok"] * 8
    # released from rest at x = 0.1: the largest |x| is the start
    assert np.all(s["maxabs(x)"] == 0.1)
    assert "8 runs" in s.summary
    with pytest.raises(mbs.UsageError, match="nosuch"):
        m.vary("maxabs(x)", nosuch=[1, 2])
    with pytest.raises(mbs.ModelError):
        m.vary("maxabs(nosuch)", k=[1, 2])


def test_minimize_finds_the_static_deflection_of_a_spring():
    # F0/k = 0.05 at k = 100 for F0 = 5: minimise (final(x) - 0.05)^2 over k, heavily damped
    m = mbs.load(MSD, set={"F0": 5, "d": 200})
    s = m.minimize("final((x - 0.05)^2)", k=(50, 200, 80), options={"t_end": 20, "step": 1e-2})
    assert "smallest" in s.summary
    best = s["k"][np.nanargmin(s["final((x - 0.05)^2)"])]
    assert best == pytest.approx(100, rel=1e-3)


def test_sensitivity_of_the_static_deflection():
    # x(T) -> F0/k for a heavily damped spring: d x(T) / d F0 = 1/k
    m = mbs.load(MSD, set={"F0": 5, "d": 200})
    s = m.sensitivity("F0", "final(x)", method="fd", options={"t_end": 20, "step": 1e-2})
    assert s.derivatives[("final(x)", "F0")] == pytest.approx(1 / 100, rel=1e-4)


def test_export_fmu_is_mbscs_export(tmp_path):
    model = str(EXAMPLES / "fmu" / "pendulum.mbs")
    run_mbsc(model, "--fmu", tmp_path / "cli.fmu")
    mbs.load(model).export_fmu(str(tmp_path / "py.fmu"))
    cli, py = zipfile.ZipFile(tmp_path / "cli.fmu"), zipfile.ZipFile(tmp_path / "py.fmu")
    assert sorted(cli.namelist()) == sorted(py.namelist())
    # the same description but for the time of the export
    when = re.compile(rb'generationDateAndTime="[^"]*"')
    assert when.sub(b"", cli.read("modelDescription.xml")) == when.sub(b"", py.read("modelDescription.xml"))


def test_inverse_dynamics_is_mbscs_result_file(tmp_path):
    model = MODELS / "swing.mbs"
    cli = tmp_path / "cli.csv"
    run_mbsc(model, "--inverse-dynamics", "--t-end", "0.5", "--step", "0.01", "--output", cli)
    r = mbs.load(str(model)).inverse_dynamics(t_end=0.5, step=0.01, output=str(tmp_path / "py.csv"))
    assert (tmp_path / "py.csv").read_bytes() == cli.read_bytes()
    assert len(r) == 51 and r.names[0] == "time" and "rank of the scaled balance" in r.summary
    # a point mass driven at a constant rate: the torque holds it against gravity only
    assert np.allclose(r["pivot.tau"], 2 * 9.81 * 0.5 * np.cos(3 * r.time), rtol=1e-9, atol=1e-12)
