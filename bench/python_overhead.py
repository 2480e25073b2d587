#!/usr/bin/python3
"""The cost of a run from Python against the same run in mbsc (docs/performance.md, "Python").

  PYTHONPATH=build/release/python /usr/bin/python3 bench/python_overhead.py [build/release] [N]

1. One run of examples/mass_spring_damper.mbs (1 s, 1,000 gen-alpha steps, every row kept):
   the wall time of m.simulate() from Python against the solver's own time in that call
   (statistics["wall_time"]: initialize and run) -- the difference is the cost of the call --
   and against the run time mbsc reports for the same run in its process (`mbsc ... --simulate
   -v`: "run X ms", the integration and the CSV rows, without process start and compile);
   medians over N runs of each.
2. A study of 10 N runs (k over 100..200 N/m, objective maxabs(x), one thread): a Python loop of
   m.set(k=...), m.simulate(), abs(r["x"]).max(); m.vary() (mbsc's study code in the Python
   process); and `mbsc --vary k=100:200:10N --objective "maxabs(x)" -j 1` (the wall time of the
   whole process, model cache warm); best of 3 each.
"""

import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import mbs

build = sys.argv[1] if len(sys.argv) > 1 else "build/release"
n = int(sys.argv[2]) if len(sys.argv) > 2 else 100
mbsc = os.path.join(build, "mbsc")
model = "examples/mass_spring_damper.mbs"
tmp = tempfile.mkdtemp()
out = os.path.join(tmp, "out.csv")

m = mbs.load(model)
m.simulate(t_end=1, step=1e-3)
py, solver = [], []
for _ in range(n):
    t0 = time.perf_counter()
    r = m.simulate(t_end=1, step=1e-3)
    py.append((time.perf_counter() - t0) * 1e3)
    solver.append(r.statistics["wall_time"] * 1e3)
cli = []
for _ in range(n):
    p = subprocess.run([mbsc, model, "--simulate", "--t-end", "1", "--step", "1e-3", "-v",
                        "--output", out], capture_output=True, text=True, check=True)
    cli.append(float(re.search(r"run ([0-9.]+) ms", p.stderr).group(1)))
print(f"one run: Python call {statistics.median(py):.3f} ms, of which the solver "
      f"{statistics.median(solver):.3f} ms; mbsc in-process run (with the CSV) "
      f"{statistics.median(cli):.3f} ms (medians of {n})")

runs = 10 * n
ks = [100 + 100 * i / (runs - 1) for i in range(runs)]


def best_of_3(f):
    walls = []
    for _ in range(3):
        t0 = time.perf_counter()
        f()
        walls.append(time.perf_counter() - t0)
    return min(walls) * 1e3


def loop():
    for k in ks:
        m.set(k=k)
        abs(m.simulate(t_end=1, step=1e-3)["x"]).max()


m2 = mbs.load(model)
py_loop = best_of_3(loop)
py_vary = best_of_3(lambda: m2.vary("maxabs(x)", k=f"100:200:{runs}", threads=1,
                                    options={"t_end": 1, "step": 1e-3}, output=out))
study = [mbsc, model, "--vary", f"k=100:200:{runs}", "--objective", "maxabs(x)", "--t-end", "1",
         "--step", "1e-3", "-j", "1", "-q", "--output", out]
cli_vary = best_of_3(lambda: subprocess.run(study, capture_output=True, check=True))
print(f"study of {runs} runs: Python loop {py_loop:.1f} ms, m.vary {py_vary:.1f} ms, "
      f"mbsc --vary -j 1 {cli_vary:.1f} ms (whole process; best of 3 each)")
