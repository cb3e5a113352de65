"""The run's notebooks (notebooks/*.ipynb): committed clean, with the documented parameters, and
executing (through mirage.notebooks) on a real results directory without an error cell."""

import argparse
import ast
import json
import os
import subprocess
import sys

import nbformat
import pytest
import yaml
from paths import REPO
from runs import TINY, snakemake

from mirage.errors import MirageError
from mirage.notebooks import PARAMETERS, register, run_notebook

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
TINY_CLUSTERS = sorted(yaml.safe_load(TINY.read_text())["clusters"])
TINY_LABELS = {c: s["label"] for c, s in yaml.safe_load(TINY.read_text())["clusters"].items()}


def _parameters_cell(nb):
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code, "no code cell"
    return code[0]


def test_every_notebook_is_documented():
    assert {p.stem for p in NOTEBOOKS} == set(PARAMETERS)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_notebook_is_clean_with_the_documented_parameters(path):
    nb = nbformat.read(str(path), as_version=4)
    nbformat.validate(nb)
    assert nb.metadata.get("kernelspec", {}).get("name") == "python3"
    cell = _parameters_cell(nb)
    for c in nb.cells:
        if c.cell_type == "code":
            assert c.outputs == [], f"cell {c.get('id')} has outputs"
            assert c.execution_count is None, f"cell {c.get('id')} has an execution count"
        expected = {"tags": ["parameters"]} if c is cell else {}
        assert dict(c.metadata) == expected, f"cell {c.get('id')} metadata {dict(c.metadata)}"
    # the first code cell is the parameters cell: plain assignments of exactly the documented names
    tree = ast.parse(cell.source)
    assert all(isinstance(s, ast.Assign) and len(s.targets) == 1 for s in tree.body)
    names = [s.targets[0].id for s in tree.body]
    assert names == list(PARAMETERS[path.stem])
    # ... each documented in the notebook's opening markdown
    intro = nb.cells[0]
    assert intro.cell_type == "markdown"
    assert all(f"`{name}`" in intro.source for name in names)


def _results(work):
    """The results directory of the tiny run: results/<run>/ (new layout) or results/ (old)."""
    for candidate in (work / "results" / TINY.stem, work / "results", work):
        if all((candidate / c / "evaluation.csv").exists() for c in TINY_CLUSTERS):
            return candidate
    pytest.fail(f"no {TINY_CLUSTERS}/evaluation.csv under {work}")


def _outputs(nb):
    return [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_executes_on_the_tiny_run(path, tiny_run, tmp_path):
    results = _results(tiny_run)
    # one cluster that the run lacks: named in the output, not an error; each cluster of the run
    # named by its label (the missing one, which has none, by its key)
    params = {"results": str(results), "clusters": ",".join(TINY_CLUSTERS + ["nowhere"]),
              "labels": json.dumps(TINY_LABELS)}
    if "seed" in PARAMETERS[path.stem]:
        params["seed"] = 7
    out, html = tmp_path / f"{path.stem}.ipynb", tmp_path / f"{path.stem}.html"
    run_notebook(path, out, html, params, cwd=tmp_path)
    nb = nbformat.read(str(out), as_version=4)
    outputs = _outputs(nb)
    assert not [o for o in outputs if o.output_type == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs), "no figure"
    shown = json.dumps([o.get("data", o.get("text")) for o in outputs])
    assert "nowhere" in shown, "the missing cluster is not named"
    page = html.read_text()
    assert page.lstrip().lower().startswith("<!doctype html") and "data:image/png;base64" in page
    for label in TINY_LABELS.values():
        assert label in shown and label in page, f"{label!r} not shown"


def _probe(tmp_path, source="import sys\nprint(sys.executable, x)"):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell(source)]
    path = tmp_path / "probe.ipynb"
    nbformat.write(nb, str(path))
    return path


def test_the_kernel_is_this_interpreter_without_an_activated_venv(tmp_path):
    probe = _probe(tmp_path)
    # a python3 kernelspec first on the Jupyter path naming another interpreter is ignored too
    spec = tmp_path / "jupyter" / "kernels" / "python3"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": ["/nonexistent/python3", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "elsewhere", "language": "python"}))
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", str(tmp_path)),
           "JUPYTER_PATH": str(tmp_path / "jupyter"), "PYTHONPATH": str(REPO / "src")}
    code = ("from mirage.notebooks import run_notebook; "
            f"run_notebook({str(probe)!r}, {str(tmp_path / 'out.ipynb')!r}, parameters={{'x': 5}})")
    res = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    assert f"{sys.executable} 5" in res.stdout


def _cli(argv):
    parser = argparse.ArgumentParser(prog="mirage")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    args.func(args)


def test_cli_runs_a_notebook_and_renders_it(tmp_path, capsys):
    probe = _probe(tmp_path, "print(repr(x), repr(y))")
    nb = nbformat.read(str(probe), as_version=4)
    nb.cells[0].source = "x = 1\ny = 'a'"
    nbformat.write(nb, str(probe))
    out, html = tmp_path / "o" / "run.ipynb", tmp_path / "o" / "run.html"
    _cli(["notebook", "run", str(probe), "--out", str(out), "--html", str(html),
          "-p", "x", "7", "-p", "y", "frontera,ls6"])
    assert "7 'frontera,ls6'" in capsys.readouterr().out
    assert out.exists() and "7 'frontera,ls6'" in html.read_text()


def test_cli_keeps_a_json_value_a_string(tmp_path, capsys):
    # the workflow passes the clusters' labels as one JSON object; the notebook parses it
    probe = _probe(tmp_path, "import json\nprint(type(x).__name__, json.loads(x))")
    labels = {"ls6": "Lonestar6 A100 (real trace)", "frontera": "Frontera RTX (synthetic stand-in)"}
    _cli(["notebook", "run", str(probe), "--out", str(tmp_path / "run.ipynb"),
          "-p", "x", json.dumps(labels)])
    assert f"str {labels}" in capsys.readouterr().out


def test_the_notebook_rule_passes_every_clusters_label():
    res = snakemake("-n", "-p", "--forceall", "results/default/notebooks/models.html")
    assert res.returncode == 0, res.stdout + res.stderr
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    labels = {c: config["clusters"][c]["label"] for c in sorted(config["clusters"])}
    assert f"-p labels '{json.dumps(labels)}'" in res.stdout


def test_unknown_parameter_is_left_out_and_a_failing_cell_is_an_error(tmp_path, capsys):
    probe = _probe(tmp_path, "print('seed' in globals())")
    run_notebook(probe, tmp_path / "a.ipynb", parameters={"x": 2, "seed": 7})
    out, err = capsys.readouterr()
    assert "takes no parameter seed" in err and out.strip() == "False"
    probe = _probe(tmp_path, "raise ValueError('boom')")
    html = tmp_path / "b.html"
    with pytest.raises(MirageError, match="ValueError: boom"):
        run_notebook(probe, tmp_path / "b.ipynb", html)
    assert html.exists() and "boom" in html.read_text()  # the traceback is there to read
