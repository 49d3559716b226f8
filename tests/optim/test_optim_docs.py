"""The library snippet in docs/solvers.md runs as written."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "solvers.md"


def test_solvers_doc_snippet_runs(capsys):
    code = re.search(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert code is not None
    exec(compile(code.group(1), str(DOC), "exec"), {"__name__": "docs_snippet"})
    printed = capsys.readouterr().out.split()
    assert len(printed) == 5 and float(printed[-1]) == 1.0
