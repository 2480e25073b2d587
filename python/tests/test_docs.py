"""docs/python.md's session runs as written: its ```python blocks in order, in one namespace,
from the source tree (the paths in the text are relative to it)."""

import os
import re

from conftest import SOURCE


def test_the_worked_session_of_docs_python_md_runs(capsys):
    text = (SOURCE / "docs" / "python.md").read_text()
    blocks = re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)
    assert len(blocks) >= 4
    namespace = {}
    cwd = os.getcwd()
    os.chdir(SOURCE)
    try:
        for block in blocks:
            exec(compile(block, "docs/python.md", "exec"), namespace)
    finally:
        os.chdir(cwd)
    out = capsys.readouterr().out
    assert "<mbs.Result ok: 2001 rows" in out
    assert "undefined.mbs 4 13" in out
