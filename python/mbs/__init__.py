"""mbs from Python: load a model, set its values, simulate, analyse (docs/python.md).

    import mbs
    m = mbs.load("examples/mass_spring_damper.mbs", set={"k": 200})
    r = m.simulate(t_end=2, step=1e-3)
    r.time, r["x"]          # numpy arrays: views of the one buffer of the run

A view of the same session as mbsc and the REPL (compiler/driver/Session): the same compile
with its caches, the same checks and messages, the same option table, bit-identical results.
"""

from __future__ import annotations

import csv
import math
import numbers
import os
import tempfile
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import _mbs
from ._errors import Diagnostic, Error, Interrupted, ModelError, SolverError, UsageError

__version__: str = _mbs.__version__

__all__ = [
    "__version__", "load", "Model", "Result", "Linearization", "Run", "Entry", "Diagnostic",
    "Error", "ModelError", "UsageError", "SolverError", "Interrupted", "options", "Study",
]

Number = Union[int, float, bool]


@dataclass(frozen=True)
class Entry:
    """A parameter, variable or input: its value (a variable's start value; None when it has
    none), unit, description, declaration (``file:line``) and, for a parameter the compiler uses
    as a number, why (setting it recompiles)."""

    name: str
    value: Optional[float]
    unit: str
    description: str
    declared: str
    compile_time: str = ""


def _number(what: str, name: str, value: Any) -> float:
    if isinstance(value, (bool, numbers.Real)):
        return float(value)
    raise UsageError(f"{what} {name}: '{value}' is not a number")


def _values(what: str, given: Optional[Mapping[str, Number]], kwargs: Mapping[str, Number]
            ) -> List[Tuple[str, float]]:
    items = dict(given or {})
    items.update(kwargs)
    return [(n, _number(what, n, v)) for n, v in items.items()]


def _option_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)  # the shortest text that reads back to the same double
    return str(value)


def _options(t_end: Optional[float], step: Optional[float], solver: Optional[str],
             options: Mapping[str, Any]) -> List[Tuple[str, str]]:
    given: List[Tuple[str, str]] = []
    if t_end is not None:
        given.append(("t_end", _option_text(t_end)))
    if step is not None:
        given.append(("step", _option_text(step)))
    if solver is not None:
        given.append(("solver", _option_text(solver)))
    given += [(k, _option_text(v)) for k, v in options.items()]
    return given


def options() -> Dict[str, Tuple[str, str, str]]:
    """The solver options of mbsc's one option table: key -> (flag, unit, help, default)."""
    return {k: (f, u, h, d) for k, f, u, h, d in _mbs.option_table()}


def load(path: str, model: Optional[str] = None, include: Sequence[str] = (),
         set: Optional[Mapping[str, Number]] = None, start: Optional[Mapping[str, Number]] = None,
         cache: bool = True, reactions: bool = False) -> "Model":
    """Compiles the model ``model`` (default: the last model) of the file ``path``, like
    ``mbsc path --model model -I include... --set k=v... --start x=v...``. The object and model
    caches apply unless ``cache=False`` (``--no-cache``); ``reactions=True`` is ``--reactions``.
    Raises ModelError with the diagnostics, or UsageError for names the model does not have."""
    sets = dict(_values("set", set, {}))
    starts = dict(_values("start", start, {}))
    return Model(_mbs.load(str(path), model or "", [str(d) for d in include], sets, starts,
                           bool(cache), bool(reactions)))


class Result:
    """The rows of a run: ``time`` (or ``load`` for a static solution) and one column per
    variable, each a numpy view of the one buffer ``data`` (rows x columns, no copy per row).
    ``r["x"]`` a column, ``r.names`` and ``r.units`` the columns', ``r.statistics`` the solver's
    counters, ``r.events`` the times of events, ``r.status`` "ok", "failed" or "interrupted"."""

    def __init__(self, raw: Dict[str, Any]):
        self.names: List[str] = list(raw["names"])
        self.units: List[str] = list(raw["units"])
        self.data: np.ndarray = raw["data"]
        self.data.flags.writeable = False
        self.status: str = raw["status"]
        self.statistics: Dict[str, Union[int, float]] = dict(raw["statistics"])
        self.warnings: List[str] = list(raw["warnings"])
        self.solver: str = raw.get("solver", "")
        self.t: float = raw["t"]
        self._index = {n: i for i, n in enumerate(self.names)}
        self.summary: str = ""  # what mbsc prints about it (inverse dynamics)

    def __getitem__(self, name: str) -> np.ndarray:
        try:
            return self.data[:, self._index[name]]
        except KeyError:
            close = [n for n in self.names if name.lower() in n.lower()][:3]
            hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            raise KeyError(f"the result has no column '{name}'{hint}") from None

    def __contains__(self, name: str) -> bool:
        return name in self._index

    def __len__(self) -> int:
        return self.data.shape[0]

    @property
    def time(self) -> np.ndarray:
        """The first column: time (a run) or the load factor (a static solution)."""
        return self.data[:, 0]

    @property
    def events(self) -> np.ndarray:
        """The times of the events of the run: where rows share their time (the rows before and
        after an event, and the grid point when the event falls on it)."""
        t = self.time
        return np.unique(t[1:][t[1:] == t[:-1]])

    def to_pandas(self) -> Any:
        """The result as a pandas DataFrame indexed by the first column (needs pandas)."""
        try:
            import pandas  # type: ignore
        except ImportError as e:
            raise ImportError("Result.to_pandas() needs pandas (Debian: python3-pandas)") from e
        return pandas.DataFrame(self.data[:, 1:], index=pandas.Index(self.time, name=self.names[0]),
                                columns=self.names[1:])

    def plot(self, *names: str, vs: Optional[str] = None, ax: Any = None) -> Any:
        """Draws the columns ``names`` over time (or against ``vs``) with matplotlib, axes
        labelled with the units; returns the axes (needs matplotlib)."""
        try:
            import matplotlib.pyplot as plt  # type: ignore
        except ImportError as e:
            raise ImportError("Result.plot() needs matplotlib (Debian: python3-matplotlib)") from e
        if ax is None:
            ax = plt.figure().gca()
        x = self.names[0] if vs is None else vs
        label = lambda n: n + (f" [{self.units[self._index[n]]}]" if self.units[self._index[n]] else "")
        for n in names or self.names[1:]:
            ax.plot(self[x], self[n], label=label(n))
        ax.set_xlabel(label(x))
        ax.legend()
        return ax

    def __repr__(self) -> str:
        return (f"<mbs.Result {self.status}: {len(self)} rows x {len(self.names)} columns, "
                f"{self.names[0]} {self.time[0] if len(self) else math.nan:g} .. "
                f"{self.time[-1] if len(self) else math.nan:g}>")


class Linearization:
    """M, K, D, G, B (and E, A with ODE1 unknowns) of the linearised model at a state, as in
    ``mbsc --linearize`` (docs/analysis.md): scipy.sparse matrices (CSC) when scipy is installed
    and ``sparse`` is not False, else dense numpy arrays; ``q_names``, ``y_names``, ``z_names`` the
    columns, ``row_names`` the equations."""

    def __init__(self, raw: Dict[str, Any], sparse: Optional[bool]):
        if sparse is None or sparse:
            try:
                import scipy.sparse as sp  # type: ignore
            except ImportError:
                if sparse:
                    raise ImportError("sparse=True needs scipy (Debian: python3-scipy)") from None
                sp = None
        else:
            sp = None
        for name in ("M", "K", "D", "G", "B", "E", "A"):
            dense = raw[name]
            setattr(self, name, sp.csc_matrix(dense) if sp is not None else dense)
        self.q_names: List[str] = raw["q_names"]
        self.y_names: List[str] = raw["y_names"]
        self.z_names: List[str] = raw["z_names"]
        self.row_names: List[str] = raw["row_names"]


class Modes:
    """The eigenvalues of the constrained linearised model (``mbsc --eigen``): ``eigenvalues``
    (complex), ``frequency_hz`` (the damped frequency |Im lambda| / 2 pi) and ``damping_ratio``,
    one entry per mode."""

    def __init__(self, raw: Dict[str, Any]):
        if raw["eigen_error"]:
            raise SolverError("eigenvalue analysis: " + raw["eigen_error"])
        self.eigenvalues: np.ndarray = raw["eigenvalues"]
        self.frequency_hz: np.ndarray = raw["frequency_hz"]
        self.damping_ratio: np.ndarray = raw["damping_ratio"]

    def __len__(self) -> int:
        return len(self.eigenvalues)


class Run:
    """A run advanced piecewise (``Model.start_run``): ``advance_to(t)``, ``set_input(name, v)``
    (held from the current time on, a zero-order hold), ``values(names)`` the variables now."""

    def __init__(self, native: Any):
        self._run = native

    @property
    def time(self) -> float:
        return self._run.time

    def advance_to(self, t: float) -> None:
        """Integrates from the current time to exactly ``t`` in steps of the option ``step``.
        Raises SolverError on a failure, KeyboardInterrupt on Ctrl-C."""
        self._run.advance_to(float(t))

    def set_input(self, name: str, value: float) -> None:
        """Sets a top-level input of the model (``input Real u``) from now on."""
        self._run.set_input(name, _number("set_input", name, value))

    def values(self, names: Union[str, Iterable[str]]) -> Union[float, List[float]]:
        """The value of one variable, or of several, at the current time."""
        if isinstance(names, str):
            return self._run.values([names])[0]
        return self._run.values(list(names))

    @property
    def statistics(self) -> Dict[str, Union[int, float]]:
        return dict(self._run.statistics())


class Study:
    """The results file of a study, one row per run, as mbsc writes it (docs/studies.md, "The
    results file"): ``names`` its columns, ``s["k"]`` a column (numbers as a float array, NaN
    where empty; ``status`` and ``message`` as lists of text), ``summary`` what mbsc prints about
    it, ``derivatives`` (sensitivities only) d objective / d variable by objective and name."""

    def __init__(self, path: str, summary: str):
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
        self.path = path
        self.summary = summary
        self.names: List[str] = rows[0] if rows else []
        self._columns: Dict[str, Any] = {}
        for j, name in enumerate(self.names):
            texts = [r[j] if j < len(r) else "" for r in rows[1:]]
            try:
                self._columns[name] = np.array([float(t) if t else math.nan for t in texts])
            except ValueError:
                self._columns[name] = texts
        self.derivatives: Dict[Tuple[str, str], float] = {}

    def __getitem__(self, name: str) -> Any:
        try:
            return self._columns[name]
        except KeyError:
            raise KeyError(f"the study has no column '{name}'; its columns: "
                           f"{', '.join(self.names)}") from None

    def __len__(self) -> int:
        return len(self._columns[self.names[0]]) if self.names else 0

    def to_pandas(self) -> Any:
        """The rows as a pandas DataFrame (needs pandas)."""
        try:
            import pandas  # type: ignore
        except ImportError as e:
            raise ImportError("Study.to_pandas() needs pandas (Debian: python3-pandas)") from e
        return pandas.DataFrame({n: self._columns[n] for n in self.names})

    def __repr__(self) -> str:
        return f"<mbs.Study {len(self)} runs: {', '.join(self.names)}>"


def _axis(name: str, value: Any) -> str:
    if isinstance(value, str):
        return f"{name}={value}"
    if isinstance(value, tuple):  # (lower, upper[, start]) of an optimisation
        return f"{name}=" + ":".join(_option_text(float(v)) for v in value)
    return f"{name}=" + ",".join(_option_text(float(v)) for v in value)


def _objectives(objectives: Union[str, Sequence[str]]) -> List[str]:
    items = [objectives] if isinstance(objectives, str) else list(objectives)
    if not items:
        raise UsageError("a study needs at least one objective")
    flags: List[str] = []
    for o in items:
        flags += ["--objective", o]
    return flags


def _raise_for(result: Result, raw: Dict[str, Any]) -> Result:
    for w in result.warnings:
        warnings.warn(w, RuntimeWarning, stacklevel=3)
    if result.status == "failed":
        f = raw["failure"]
        raise SolverError(result=result, **f)
    if result.status == "interrupted":
        raise Interrupted(f"interrupted at {result.names[0]} = {result.t:g}; the {len(result)} rows "
                          "so far are in .result", result)
    return result


class Model:
    """A compiled model (``mbs.load``). ``parameters``, ``variables`` and ``inputs`` map names
    to Entry; ``set``/``start`` change values; the analyses run on the current values."""

    def __init__(self, native: Any):
        self._m = native

    @property
    def name(self) -> str:
        return self._m.name

    @property
    def file(self) -> str:
        return self._m.file

    @property
    def parameters(self) -> Dict[str, Entry]:
        """The parameters with their current values (``mbsc repl``: params)."""
        return {t[0]: Entry(*t) for t in self._m.parameters()}

    @property
    def variables(self) -> Dict[str, Entry]:
        """The variables (result columns) with their start values where they have one."""
        return {t[0]: Entry(*t) for t in self._m.variables()}

    @property
    def inputs(self) -> Dict[str, Entry]:
        """The top-level inputs with the values they hold over a run."""
        return {t[0]: Entry(*t) for t in self._m.inputs()}

    @property
    def options(self) -> Dict[str, str]:
        """The solver options of the last run (or the defaults) as the option table's texts."""
        return dict(self._m.options())

    def set(self, values: Optional[Mapping[str, Number]] = None, **kwargs: Number) -> "Model":
        """Sets parameters and inputs: ``m.set(k=200)`` or ``m.set({"s.k": 200})``, checked
        like ``mbsc --set`` and the REPL's ``set`` (the name must exist, the value be finite and
        within min/max); a parameter the compiler uses as a number recompiles. All or none."""
        self._m.set_values(_values("set", values, kwargs), False)
        return self

    def start(self, values: Optional[Mapping[str, Number]] = None, **kwargs: Number) -> "Model":
        """Sets start values: ``m.start(x=0.1)``, ``m.start({"der(x)": 0})``, like ``--start``."""
        self._m.set_values(_values("start", values, kwargs), True)
        return self

    def simulate(self, t_end: Optional[float] = None, step: Optional[float] = None,
                 solver: Optional[str] = None, progress: Optional[Callable[[Dict[str, Any]], Any]] = None,
                 progress_interval: float = 1.0, outputs: Optional[Sequence[str]] = None,
                 **options: Any) -> Result:
        """Runs the time integration, like ``mbsc --simulate --t-end T --step H --solver S``;
        ``options`` by the option table's names (``rho_inf=0.8``, ``output_every=10``; see
        ``mbs.options()``). The options stay for the next run. Raises SolverError (with the rows
        before in ``.result``), Interrupted on Ctrl-C (a KeyboardInterrupt, with the rows so far).
        ``progress``: a callable given a dict (t, t0, t_end, fraction, h, steps, elapsed, task)
        about every ``progress_interval`` seconds while the run goes; what it raises stops the
        run and is raised by simulate(). ``outputs``: the result's columns after ``time``, as
        names or globs with ``*`` and ``?`` (``["x", "der(*)"]``) like ``mbsc --outputs``; a
        pattern that matches nothing raises UsageError; by default every variable."""
        if isinstance(outputs, str):
            outputs = [outputs]
        raw = self._m.simulate(_options(t_end, step, solver, options), progress,
                               float(progress_interval), list(outputs or []))
        return _raise_for(Result(raw), raw)

    def static(self, **options: Any) -> Result:
        """The static equilibrium by load stepping (``mbsc --static``): one row per load step,
        the first column ``load``; the equilibrium state is kept for ``linearize(at="static")``."""
        raw = self._m.static(_options(None, None, None, options))
        result = _raise_for(Result(raw), raw)
        self._equilibrium = list(raw["state"])
        return result

    def _state(self, at: str) -> Optional[List[float]]:
        if at == "start":
            return None
        if at == "static":
            if getattr(self, "_equilibrium", None) is None:
                raise UsageError("no static equilibrium yet: call static() first")
            return self._equilibrium
        raise UsageError(f"at='{at}': expected 'start' or 'static'")

    def linearize(self, at: str = "start", sparse: Optional[bool] = None) -> Linearization:
        """M, K, D, G, B at the consistent start state (``at="start"``) or at the last static
        equilibrium (``at="static"``), like ``mbsc --linearize``."""
        return Linearization(self._m.linearize(self._state(at)), sparse)

    def eigen(self, at: str = "start") -> Modes:
        """The eigenvalues of the constrained linearised model, like ``mbsc --eigen``."""
        return Modes(self._m.linearize(self._state(at)))

    def start_run(self, t_end: Optional[float] = None, step: Optional[float] = None,
                  solver: Optional[str] = None, **options: Any) -> Run:
        """A run to advance piecewise from the current values (``Run.advance_to``), for a
        controller or another simulator in the loop."""
        return Run(_mbs.Run(self._m, _options(t_end, step, solver, options)))

    # ---- studies: mbsc's study flags (docs/studies.md), run by mbsc's own code

    def _study(self, flags: List[str], output: Optional[str], threads: Optional[int],
               options: Optional[Mapping[str, Any]]) -> Study:
        if threads is not None:
            flags += ["--threads", str(int(threads))]
        given = _options(None, None, None, options or {})
        if output is not None:
            return Study(str(output), self._m.study(flags, str(output), given))
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "study.csv")
            return Study(path, self._m.study(flags, path, given))

    def vary(self, objectives: Union[str, Sequence[str]], output: Optional[str] = None,
             paired: bool = False, threads: Optional[int] = None,
             options: Optional[Mapping[str, Any]] = None, **axes: Union[str, Sequence[float]]) -> Study:
        """A parameter variation, like ``mbsc --vary k=50:200:4 --vary d=0.1,0.4
        --objective ...``: each axis a list of values or mbsc's text (``"50:200:4"``,
        ``"1:100:5:log"``); the full grid, or the lists side by side with ``paired=True``. The
        rows are mbsc's results file (in ``output`` when given). ``options``: the solver options
        of the runs by the option table's names (``{"t_end": 2, "step": 1e-4}``), kept for the
        model's next run like simulate()'s; the other studies take it too."""
        flags: List[str] = []
        for name, values in axes.items():
            flags += ["--vary", _axis(name, values)]
        if paired:
            flags.append("--paired")
        return self._study(flags + _objectives(objectives), output, threads, options)

    def minimize(self, objectives: Union[str, Sequence[str]], method: str = "nelder-mead",
                 output: Optional[str] = None, threads: Optional[int] = None,
                 options: Optional[Mapping[str, Any]] = None,
                 **ranges: Tuple[float, ...]) -> Study:
        """Minimises the first objective over the variables' ranges (``k=(50, 200)`` or
        ``k=(50, 200, 120)`` with a start), like ``mbsc --optimize minimize --range ...
        --method ...``; one row per evaluation, the best in ``summary``."""
        flags = ["--optimize", "minimize", "--method", method]
        for name, r in ranges.items():
            flags += ["--range", _axis(name, tuple(r))]
        return self._study(flags + _objectives(objectives), output, threads, options)

    def genetic(self, objectives: Union[str, Sequence[str]], seed: Optional[int] = None,
                output: Optional[str] = None, threads: Optional[int] = None,
                options: Optional[Mapping[str, Any]] = None,
                **ranges: Tuple[float, float]) -> Study:
        """Genetic minimisation of the first objective (``mbsc --optimize genetic``),
        reproducible by ``seed`` with any number of threads."""
        flags = ["--optimize", "genetic"]
        if seed is not None:
            flags += ["--seed", str(int(seed))]
        for name, r in ranges.items():
            flags += ["--range", _axis(name, tuple(r))]
        return self._study(flags + _objectives(objectives), output, threads, options)

    def sensitivity(self, names: Union[str, Sequence[str]], objectives: Union[str, Sequence[str]],
                    method: str = "exact", output: Optional[str] = None,
                    threads: Optional[int] = None,
                    options: Optional[Mapping[str, Any]] = None) -> Study:
        """d objective / d name at the current values (``mbsc --sensitivity``): ``method``
        "exact" (the sensitivities of the discrete solution) or "fd" (central differences).
        ``derivatives[(objective, name)]`` holds them."""
        names = [names] if isinstance(names, str) else list(names)
        flags: List[str] = []
        for n in names:
            flags += ["--sensitivity", n]
        objs = [objectives] if isinstance(objectives, str) else list(objectives)
        study = self._study(flags + _objectives(objs) + ["--sensitivity-method", method], output,
                            threads, options)
        for line in study.summary.splitlines():
            if line.startswith("  d ") and " / d " in line:
                left, value = line[4:].rsplit(" = ", 1)
                obj, name = left.rsplit(" / d ", 1)
                study.derivatives[(obj, name)] = float(value)
        return study

    def inverse_dynamics(self, t_end: float = 1.0, step: float = 1e-3,
                         trajectory: Optional[str] = None, logged: Optional[str] = None,
                         balance: str = "tree", output: Optional[str] = None) -> Result:
        """Inverse dynamics of the prescribed motion (``mbsc --inverse-dynamics --t-end T
        --step H [--trajectory F] [--logged F] [--balance B]``, docs/inverse-dynamics.md): the
        coordinates, efforts and uniquely determined joint wrenches at every sample, NaN where
        the motion does not determine a value; mbsc's summary in ``result.summary``. The rows
        are mbsc's result file (kept in ``output`` when given)."""
        def run(path: str) -> Result:
            summary = self._m.inverse_dynamics(float(t_end), float(step), trajectory or "",
                                               logged or "", balance, path)
            with open(path) as f:
                names = f.readline().rstrip("\n").split(",")
            data = np.genfromtxt(path, delimiter=",", skip_header=1, ndmin=2)
            units = {n: e.unit for n, e in self.variables.items()}
            result = Result({"names": names, "units": ["s"] + [units.get(n, "") for n in names[1:]],
                             "data": data, "status": "ok", "statistics": {}, "warnings": [],
                             "t": float(data[-1, 0]) if len(data) else math.nan})
            result.summary = summary
            return result
        if output is not None:
            return run(str(output))
        with tempfile.TemporaryDirectory() as d:
            return run(os.path.join(d, "inverse.csv"))

    def export_fmu(self, path: str, version: int = 2, kind: str = "cs") -> str:
        """Writes the model as an FMU (``mbsc --fmu path --fmi-version version --fmu-type
        kind``; kind "cs", "me" or "both"); returns mbsc's summary line."""
        return self._m.export_fmu(["--fmu", str(path), "--fmi-version", str(int(version)),
                                   "--fmu-type", kind])

    def __repr__(self) -> str:
        return f"<mbs.Model {self.name} from {self.file}>"
