"""The run's parameterised notebooks (``notebooks/*.ipynb``): execute one with papermill, render
it to HTML.

Every notebook takes the papermill parameters of ``PARAMETERS`` (its first code cell, tagged
``parameters``): ``results``, a run's results directory (``results/<run>``, holding
``<cluster>/trace/``, ``<cluster>/<mode>/samples/``, ``<cluster>/evaluation.csv``, ...),
``clusters``, comma-separated cluster keys, ``labels``, a JSON object mapping a cluster key to
the label that names it in headings, tables and figures (the config's ``clusters.<key>.label``;
default ``{}``: a cluster it lacks is named by its key), and for ``report`` the ``seed`` of its
bootstrap intervals, their equivalence margin ``equivalence_h`` and their blocks
(``block_hours``, ``every_hours``: the config's ``evaluation`` and ``samples.every_hours``). A
file a cluster lacks is named in the output, never an error.

The kernel is ipykernel in the interpreter running this module, whatever kernelspecs the
Jupyter paths hold, so ``/path/to/venv/bin/python -m mirage notebook run ...`` executes in that
venv even when it is not activated.

    mirage notebook run notebooks/traces.ipynb --out traces.ipynb --html traces.html \\
        -p results results/default -p clusters frontera,longhorn,ls6 \\
        -p labels '{"ls6": "Lonestar6 A100 (real trace)"}'
"""

from __future__ import annotations

import sys
from pathlib import Path

from mirage.errors import MirageError

#: The documented parameters of each notebook in ``notebooks/`` (tests/workflow/test_notebooks.py
#: checks every notebook's ``parameters`` cell against this).
PARAMETERS: dict[str, tuple[str, ...]] = {
    "report": ("results", "clusters", "labels", "seed", "equivalence_h", "block_hours",
               "every_hours"),
    "traces": ("results", "clusters", "labels"),
    "models": ("results", "clusters", "labels"),
    "provisioning": ("results", "clusters", "labels"),
}
KERNEL = "python3"


def _kernel_manager_class():
    """An nbclient kernel manager whose ``python3`` kernel is ipykernel of ``sys.executable``.

    jupyter_client already swaps a kernelspec's bare ``python`` for sys.executable, but a
    ``python3`` kernelspec elsewhere on the Jupyter path (JUPYTER_PATH, ~/.local/share/jupyter)
    may name another interpreter by its full path; this ignores every such spec.
    """
    from ipykernel.kernelspec import RESOURCES, get_kernel_dict
    from jupyter_client import AsyncKernelManager
    from jupyter_client.kernelspec import KernelSpecManager
    from traitlets import default

    class ThisInterpreterSpecs(KernelSpecManager):
        def get_kernel_spec(self, kernel_name):
            if kernel_name == KERNEL:
                return self.kernel_spec_class(resource_dir=RESOURCES, **get_kernel_dict())
            return super().get_kernel_spec(kernel_name)

    class ThisInterpreterKernelManager(AsyncKernelManager):
        @default("kernel_spec_manager")
        def _kernel_spec_manager_default(self):
            return ThisInterpreterSpecs(data_dir=self.data_dir)

    return ThisInterpreterKernelManager


def run_notebook(notebook, out, html=None, parameters: dict | None = None, cwd=None,
                 timeout: float | None = None) -> Path:
    """Execute ``notebook`` with papermill into ``out`` (.ipynb) and, with ``html``, render the
    executed notebook there (no input/output prompts).

    ``parameters`` are names of the notebook's ``parameters`` cell; others are left out with a
    warning on stderr (the workflow passes its seed to every notebook). ``cwd`` (default: the
    current directory) is the kernel's working directory, against which relative paths such as
    ``results`` resolve. The cells' printed output goes to this process's stdout/stderr.
    A failing cell raises MirageError after the executed notebook (and its HTML) is written,
    so the traceback can be read there. Returns ``out``.
    """
    import papermill as pm
    from papermill.exceptions import PapermillExecutionError

    notebook, out = Path(notebook), Path(out)
    if not notebook.is_file():
        raise MirageError(f"no notebook {notebook}")
    parameters = dict(parameters or {})
    known = pm.inspect_notebook(str(notebook))
    unknown = sorted(set(parameters) - set(known))
    if unknown:  # the workflow passes its seed to every notebook; not every one takes it
        print(f"{notebook.name} takes no parameter {', '.join(unknown)} (its parameters: "
              f"{', '.join(known) or 'none'}); ignored", file=sys.stderr)
        parameters = {k: v for k, v in parameters.items() if k in known}
    out.parent.mkdir(parents=True, exist_ok=True)
    failed = None
    try:
        pm.execute_notebook(
            str(notebook), str(out), parameters=parameters, cwd=str(cwd or Path.cwd()),
            kernel_name=KERNEL, progress_bar=False, log_output=False,
            stdout_file=sys.stdout, stderr_file=sys.stderr,
            execution_timeout=timeout, kernel_manager_class=_kernel_manager_class(),
        )
    except PapermillExecutionError as exc:
        failed = exc
    if html is not None:
        render_html(out, html)
    if failed is not None:
        raise MirageError(f"{notebook.name} failed in cell {failed.exec_count}: {failed.ename}: "
                          f"{failed.evalue} (the traceback is in {out})") from None
    return out


def render_html(executed, html) -> Path:
    """The executed notebook ``executed`` as one standalone HTML page ``html``."""
    import nbformat
    from nbconvert import HTMLExporter

    nb = nbformat.read(str(executed), as_version=4)
    exporter = HTMLExporter(exclude_input_prompt=True, exclude_output_prompt=True)
    body, _ = exporter.from_notebook_node(nb)
    html = Path(html)
    html.parent.mkdir(parents=True, exist_ok=True)
    html.write_text(body, encoding="utf-8")
    return html


def parse_value(text: str):
    """A ``-p`` value as papermill's own ``-p`` reads it: True/False/None, an int, a float, or
    the string itself (a JSON object such as ``labels`` stays a string: the notebook parses it)."""
    if text in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[text]
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _run(args) -> None:
    parameters = {key: parse_value(value) for key, value in args.parameters}
    run_notebook(args.notebook, args.out, args.html, parameters, cwd=args.cwd,
                 timeout=args.timeout)
    print(f"{args.notebook} -> {args.out}" + (f", {args.html}" if args.html else ""))


def register(sub) -> None:
    p = sub.add_parser("notebook", help="the run's parameterised notebooks")
    nsub = p.add_subparsers(dest="notebook_command", required=True)
    p = nsub.add_parser("run", help="execute a notebook with papermill and render it to HTML")
    p.add_argument("notebook", help="the notebook, e.g. notebooks/traces.ipynb")
    p.add_argument("--out", required=True, help="the executed notebook (.ipynb)")
    p.add_argument("--html", help="the executed notebook rendered to HTML")
    p.add_argument("-p", "--parameter", dest="parameters", nargs=2, action="append", default=[],
                   metavar=("KEY", "VALUE"),
                   help="a parameter (repeatable); VALUE is read as papermill's -p reads it")
    p.add_argument("--cwd", default=".", help="the kernel's working directory (default: .)")
    p.add_argument("--timeout", type=float, help="seconds one cell may run (default: no limit)")
    p.set_defaults(func=_run)
