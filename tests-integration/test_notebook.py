"""A notebook run headlessly (nbclient, a kernel of this environment's Python): generation and
materialize show progress widgets, and a group from ``open_rfs`` displays as its tree."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).parent / "notebooks" / "where_scientists_work.ipynb"
WIDGET = "application/vnd.jupyter.widget-view+json"


@pytest.fixture
def kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A kernel spec of this interpreter, found first: the notebook runs in this venv."""
    spec = tmp_path / "jupyter" / "kernels" / "shadowzarr-tests"
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    document = {"argv": argv, "display_name": "shadowzarr tests", "language": "python"}
    (spec / "kernel.json").write_text(json.dumps(document))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    return "shadowzarr-tests"


def _outputs(cell: nbformat.NotebookNode) -> list[dict]:
    return [dict(output) for output in cell.get("outputs", [])]


def _widgets(cell: nbformat.NotebookNode) -> int:
    return sum(1 for output in _outputs(cell) if WIDGET in output.get("data", {}))


def test_the_notebook_shows_progress_widgets_and_the_tree(tmp_path: Path, kernel: str) -> None:
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(NOTEBOOK, work / NOTEBOOK.name)
    notebook = nbformat.read(work / NOTEBOOK.name, as_version=4)
    NotebookClient(
        notebook,
        kernel_name=kernel,
        timeout=300,
        resources={"metadata": {"path": str(work)}},
    ).execute()
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    errors = [o for cell in code for o in _outputs(cell) if o.get("output_type") == "error"]
    assert errors == []
    _, generate, materialize, tree, traffic = code
    assert _widgets(generate) == 1  # the bar of datasets, an ipywidgets widget
    assert _widgets(materialize) == 2  # copy, then verify
    assert "21 arrays materialized" in "".join(
        o.get("text", "") for o in _outputs(materialize) if o.get("output_type") == "stream"
    )
    # no text bar was printed: the progress went to the widgets
    assert not any(o.get("name") == "stderr" for o in _outputs(generate))
    shown = [o["data"]["text/html"] for o in _outputs(tree) if "text/html" in o.get("data", {})]
    assert len(shown) == 1
    assert "acquisition/" in shown[0]
    assert "data" in shown[0]
    assert "(20,000, 32)" in shown[0]
    assert "trace19" in shown[0]
    assert "int16" in shown[0]
    # the text beside it (a terminal's display): zarr's line, then the same tree
    plain = [o["data"]["text/plain"] for o in _outputs(tree) if "text/plain" in o.get("data", {})]
    assert plain[0].startswith("<Group RfsStore(")
    assert "data  int16  (20,000, 32)  chunks (16, 32)" in plain[0]
    assert "trace19" in plain[0]
    traffic_html = [
        o["data"]["text/html"] for o in _outputs(traffic) if "text/html" in o.get("data", {})
    ]
    assert "requests" in traffic_html[0]
    assert (work / "session.zarr" / "zarr.json").is_file()
    # the widgets' last state (kept by nbclient): every bar full, saying what it counted
    state = notebook.metadata["widgets"][WIDGET.replace("view", "state")]["state"]
    bars = [w["state"] for w in state.values() if w["model_name"] == "FloatProgressModel"]
    assert len(bars) == 3
    assert all(bar["value"] == bar["max"] > 0 for bar in bars)
    labels = " ".join(
        str(w["state"].get("value")).replace("\u2007", " ")  # tqdm: figure spaces
        for w in state.values()
        if w["model_name"] == "HTMLModel"
    )
    for text in ("generate session.h5: 100%", "21/21 datasets", "materialize copy: 100%"):
        assert text in labels
    assert "materialize verify: 100%" in labels
    assert labels.count("21/21 arrays") == 2
