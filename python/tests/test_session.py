"""The Python module against mbsc: every call compared with the CLI's result for the same model
(bit-identical where the same run is done), and the errors with their places."""

import math
import signal
import threading
import os
import time

import numpy as np
import pytest

import mbs
from conftest import EXAMPLES, MODELS, read_csv, run_mbsc

MSD = str(EXAMPLES / "mass_spring_damper.mbs")


def test_version_is_the_cli_version():
    out = run_mbsc("--version").stdout
    assert out.split()[-1] == mbs.__version__


def test_simulate_is_bit_identical_to_mbsc(tmp_path):
    csv = tmp_path / "msd.csv"
    run_mbsc(MSD, "--simulate", "--set", "k=200", "--start", "x=0.2", "--t-end", "0.5", "--step",
             "2e-3", "--solver", "newmark", "--output", csv)
    names, rows = read_csv(csv)
    m = mbs.load(MSD, set={"k": 200}, start={"x": 0.2})
    r = m.simulate(t_end=0.5, step=2e-3, solver="newmark")
    assert r.names == names
    assert r.data.shape == rows.shape
    assert np.array_equal(r.data, rows)
    # columns are views of the one buffer, not copies
    assert r["x"].base is r.data or r["x"].base is r.data.base
    assert np.array_equal(r.time, rows[:, 0])
    assert r.units[names.index("x")] == "m"
    assert r.status == "ok" and r.solver == "newmark"
    assert r.statistics["steps"] == 250


def test_outputs_choose_the_columns_of_mbsc_outputs(tmp_path):
    csv = tmp_path / "msd.csv"
    run_mbsc(MSD, "--simulate", "--t-end", "0.2", "--outputs", "v", "--output", csv)
    names, rows = read_csv(csv)
    assert names == ["time", "v"]
    m = mbs.load(MSD)
    r = m.simulate(t_end=0.2, outputs=["v"])
    assert r.names == names and r.units == ["s", "m/s"]
    assert np.array_equal(r.data, rows)
    full = m.simulate(t_end=0.2)
    assert np.array_equal(r["v"], full["v"])
    assert m.simulate(t_end=0.2, outputs="?").names == full.names
    with pytest.raises(mbs.UsageError, match="did you mean 'v'"):
        m.simulate(t_end=0.2, outputs=["vv"])


def test_set_and_start_match_the_cli_and_keep_their_checks(tmp_path):
    csv = tmp_path / "msd.csv"
    run_mbsc(MSD, "--simulate", "--set", "d=1.5", "--start", "v=-1", "--t-end", "0.2",
             "--output", csv)
    _, rows = read_csv(csv)
    m = mbs.load(MSD)
    m.set(d=1.5).start({"v": -1})
    assert np.array_equal(m.simulate(t_end=0.2).data, rows)
    p = m.parameters
    assert p["d"].value == 1.5 and p["k"].unit == "N/m" and p["k"].description == "stiffness"
    assert p["k"].declared.endswith("mass_spring_damper.mbs:12")
    assert p["omega"].value == 10.0  # derived from k and m
    assert m.variables["v"].value == -1 and m.variables["x"].unit == "m"
    # the REPL's message, with the nearest name
    with pytest.raises(mbs.UsageError, match="has no parameter or variable 'kk'; did you mean 'k'"):
        m.set(kk=1)
    with pytest.raises(mbs.UsageError, match="is not a finite number"):
        m.set(k=math.inf)
    with pytest.raises(mbs.UsageError, match="is not a number"):
        m.set(k="stiff")
    with pytest.raises(mbs.UsageError, match="start value with start"):
        m.set(x=1)
    assert m.parameters["k"].value == 100  # nothing changed by the failed calls


def test_options_by_the_option_tables_names():
    m = mbs.load(MSD)
    r = m.simulate(t_end=0.1, step=1e-2, rho_inf=0.5, output_every=5)
    assert len(r) == 3  # t0, 0.05, 0.1
    with pytest.raises(mbs.UsageError, match="rho"):
        m.simulate(rho_inf=2)
    with pytest.raises(mbs.UsageError, match="nosuch"):
        m.simulate(nosuch=1)
    assert "t_end" in mbs.options()


def test_model_error_carries_each_diagnostic_with_its_place():
    with pytest.raises(mbs.ModelError) as e:
        mbs.load(str(MODELS / "undefined.mbs"))
    d = e.value.diagnostics[0]
    assert (d.level, d.line, d.column) == ("error", 4, 13)
    assert d.file.endswith("undefined.mbs") and "'c'" in d.message
    cli = run_mbsc(MODELS / "undefined.mbs", check=False)
    assert cli.returncode == 1 and str(e.value) == cli.stderr.rstrip("\n")


def test_usage_errors_of_load():
    with pytest.raises(mbs.UsageError) as e:
        mbs.load(MSD, set={"nosuch": 1})
    assert e.value.diagnostics and e.value.diagnostics[0].kind == "unknown_override"
    with pytest.raises(mbs.UsageError):
        mbs.load(MSD, model="NoSuchModel")
    with pytest.raises(mbs.ModelError):
        mbs.load(str(MODELS / "no_such_file.mbs"))


def test_solver_error_says_where_and_keeps_the_rows_before():
    m = mbs.load(str(MODELS / "blowup.mbs"))
    with pytest.raises(mbs.SolverError) as e:
        m.simulate(t_end=2, step=1e-3)
    err = e.value
    # the solution 1/(1 - t) leaves every bound before t = 1
    assert 0.9 < err.time < 1.0 and err.step > 0
    r = err.result
    assert r.status == "failed" and len(r) > 0 and r.time[-1] <= err.time
    assert np.allclose(r["x"][:100], 1 / (1 - r.time[:100]), rtol=1e-5)
    cli = run_mbsc(MODELS / "blowup.mbs", "--simulate", "--t-end", "2", "--output", os.devnull,
                   check=False)
    assert cli.returncode == 3 and str(err).splitlines()[0] in cli.stderr


def test_ctrl_c_raises_keyboard_interrupt_with_the_rows_so_far():
    m = mbs.load(MSD)
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt) as e:
        m.simulate(t_end=1e5, step=1e-3, output_every=1000)
    timer.join()
    r = e.value.result
    assert r.status == "interrupted" and 0 < len(r) < 100001
    # Python's own handler is back: a SIGINT now is a KeyboardInterrupt again
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)


def test_events_are_the_bounces_of_the_ball():
    m = mbs.load(str(EXAMPLES / "bouncing_ball.mbs"))
    r = m.simulate(t_end=1.5, step=1e-3)
    assert len(r.events) == r.statistics["events"] > 0
    g = 9.81
    h0 = m.variables["h"].value if "h" in m.variables else None
    if h0:  # the first bounce of a ball dropped from rest at h0
        assert r.events[0] == pytest.approx(math.sqrt(2 * h0 / g), rel=1e-6)


def test_pandas_and_matplotlib_are_optional():
    r = mbs.load(MSD).simulate(t_end=0.01)
    try:
        import pandas  # noqa: F401
        assert list(r.to_pandas().columns) == r.names[1:]
    except ImportError:
        with pytest.raises(ImportError, match="pandas"):
            r.to_pandas()
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="matplotlib"):
            r.plot("x")


def test_static_linearize_and_eigen_against_the_analytic_oscillator(tmp_path):
    m = mbs.load(MSD, set={"F0": 5})
    s = m.static()
    assert s.names[0] == "load" and s["x"][-1] == pytest.approx(5 / 100, rel=1e-12)
    lin = m.linearize(sparse=False)
    assert lin.M.shape == (1, 1)
    assert (lin.M[0, 0], lin.K[0, 0], lin.D[0, 0]) == (1.0, 100.0, 0.4)
    sparse = m.linearize()
    assert sparse.K.toarray()[0, 0] == 100.0  # scipy is installed here
    modes = m.eigen()
    # m x'' + d x' + k x = 0: lambda = -zeta w +- i w sqrt(1 - zeta^2), w = sqrt(k/m)
    zeta, w = 0.4 / (2 * math.sqrt(100)), 10.0
    assert modes.damping_ratio[0] == pytest.approx(zeta, rel=1e-12)
    assert modes.frequency_hz[0] == pytest.approx(w * math.sqrt(1 - zeta**2) / (2 * math.pi),
                                                  rel=1e-12)
    assert abs(modes.eigenvalues[0]) == pytest.approx(w, rel=1e-12)
    # the CLI's matrices
    run_mbsc(MSD, "--set", "F0=5", "--linearize", "--output", tmp_path / "msd.csv")
    assert "100" in (tmp_path / "msd_K.mtx").read_text().splitlines()[-1]


def test_a_controller_in_the_loop_against_the_same_controller_in_the_model():
    T, K, a = 0.1, 2.0, 1.0
    plant = mbs.load(str(MODELS / "plant.mbs"))
    run = plant.start_run(t_end=1.0, step=1e-3)
    xs = []
    for k in range(10):
        x = run.values("x")
        xs.append(x)
        run.set_input("u", -K * x)
        run.advance_to((k + 1) * T)
    xs.append(run.values("x"))
    ref = mbs.load(str(MODELS / "sampled.mbs")).simulate(t_end=1.0, step=1e-3)
    at = [np.flatnonzero(np.isclose(ref.time, k * T, atol=1e-9))[-1] for k in range(11)]
    assert np.allclose(xs, ref["x"][at], rtol=1e-9, atol=1e-12)
    # and the exact discrete solution of the zero-order hold: x+ = x (e^-aT - K (1 - e^-aT)/a)
    exact = [(math.exp(-a * T) - K * (1 - math.exp(-a * T)) / a) ** k for k in range(11)]
    assert np.allclose(xs, exact, rtol=1e-5)
    with pytest.raises(mbs.UsageError, match="has no input 'v'"):
        run.set_input("v", 1)
    with pytest.raises(mbs.UsageError, match="already"):
        run.advance_to(0.5)


def test_a_compile_time_parameter_compiles_again_like_the_cli(tmp_path):
    csv = tmp_path / "s.csv"
    run_mbsc(MODELS / "sampled.mbs", "--simulate", "--set", "T=0.25", "--set", "K=3", "--t-end", "1",
             "--output", csv)
    _, rows = read_csv(csv)
    m = mbs.load(str(MODELS / "sampled.mbs"))
    assert m.parameters["T"].compile_time  # the sample interval is used by the compiler
    m.set(K=3)  # at run time
    m.set(T=0.25)  # a new compile, K kept
    r = m.simulate(t_end=1)
    assert np.array_equal(r.data, rows)
    assert m.parameters["K"].value == 3 and m.parameters["T"].value == 0.25
    assert len(r.events) == 4  # the instants 0.25, 0.5, 0.75, 1 (the one at 0 fires at the start)


def test_progress_reaches_a_callable_and_its_exception_stops_the_run():
    m = mbs.load(MSD)
    seen = []
    r = m.simulate(t_end=2000, step=1e-3, output_every=1000, progress=seen.append,
                   progress_interval=0.01)
    assert r.status == "ok" and seen
    fractions = [p["fraction"] for p in seen]
    assert fractions == sorted(fractions) and 0 <= fractions[0] and fractions[-1] <= 1
    assert all(p["t_end"] == 2000 for p in seen)

    class Stop(Exception):
        pass

    def stop(p):
        raise Stop(p["t"])

    with pytest.raises(Stop):
        m.simulate(t_end=2000, progress=stop, progress_interval=0.01)


def test_overlapping_runs_on_two_threads_give_back_pythons_handler():
    # run a starts, run b starts, a ends, b ends: the handler before a is back after b
    a, b = mbs.load(MSD), mbs.load(MSD)
    a_running, b_running, a_done = threading.Event(), threading.Event(), threading.Event()
    results = []

    def in_a(p):
        a_running.set()
        b_running.wait(10)

    def in_b(p):
        b_running.set()
        a_done.wait(10)

    def run_a():
        results.append(a.simulate(t_end=2000, output_every=1000, progress=in_a,
                                  progress_interval=0.001))
        a_done.set()

    def run_b():
        a_running.wait(10)
        results.append(b.simulate(t_end=2000, output_every=1000, progress=in_b,
                                  progress_interval=0.001))

    threads = [threading.Thread(target=run_a), threading.Thread(target=run_b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [r.status for r in results] == ["ok", "ok"]
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)


def test_the_experiment_annotation_gives_what_a_call_does_not(tmp_path):
    path = str(MODELS / "decay_experiment.mbs")
    m = mbs.load(path)
    r = m.simulate()
    assert np.allclose(r.time, [0.0, 0.1, 0.2, 0.3, 0.4, 0.5], atol=1e-12, rtol=0)
    assert abs(r["x"][-1] - math.exp(-0.5)) < 1e-6
    assert len(m.simulate(t_end=0.2).time) == 3
    # the same rows as mbsc, which applies the annotation the same way
    csv = tmp_path / "decay.csv"
    run_mbsc(path, "--simulate", "--solver", "dopri5", "--output", csv)
    names, rows = read_csv(csv)
    r = m.simulate(solver="dopri5")
    assert np.array_equal(r.data, rows)
    assert abs(r["x"][-1] - math.exp(-0.5)) < 5e-11
