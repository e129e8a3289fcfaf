"""The quickstart notebook executes headless with no error (nbclient, the notebook's own
running event loop)."""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from types import ModuleType

import pytest

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "python" / "quickstart.ipynb"


def _needed(name: str) -> ModuleType:
    """The package, or a skip when it is missing, except under the test command
    (scripts/test.sh sets CONTENOX_REQUIRE_NBFORMAT=1), where a missing package fails."""
    if os.environ.get("CONTENOX_REQUIRE_NBFORMAT") == "1":
        return importlib.import_module(name)
    return pytest.importorskip(name)


def test_quickstart_notebook_executes() -> None:
    nbformat = _needed("nbformat")
    nbclient = _needed("nbclient")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3").execute(
        cwd=str(NOTEBOOK.parent)
    )
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    html = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert any("<table>" in h and "book" in h and "ask" in h for h in html), html
