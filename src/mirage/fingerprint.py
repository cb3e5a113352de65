"""A fingerprint of the package code a workflow rule runs, so that Snakemake reruns the rule when
that code changes.

The rules call ``python -m mirage ...``, whose source is no input of theirs: Snakemake's own
rerun triggers (mtime, params, input, code) would not see an edit of, say, the DQN. Each rule
therefore passes ``fingerprint("mirage.policies.cli", ...)`` as a param; the value is a hash of
the source of the named modules and of every ``mirage`` module they import, directly or not,
at module level or inside a function; a call of a loader (:data:`LOADERS`) imports the modules
its table names as strings (``Entry.load_class()``: every policy class the policy catalogue
names, ``"mirage.policies.dqn:DQN"``), so the fits follow every policy module while a module
that reads only the catalogue's names does not. It over-approximates: a rule may rerun for a
change it does not use, never miss one it does. Only the standard library is imported here, so the
Snakefile stays light.
"""

from __future__ import annotations

import ast
import hashlib
import re
from functools import lru_cache
from pathlib import Path

PACKAGE = "mirage"
ROOT = Path(__file__).resolve().parent
#: a string that names a module to import later: "mirage.x.y" or "mirage.x.y:attr"
NAMED = re.compile(rf"({PACKAGE}(?:\.\w+)+)(?::\w+)?")
#: a function that imports by name -> the module whose strings name what it may import
LOADERS = {"load_class": "mirage.policies.catalogue"}


def module_path(name: str, root: Path = ROOT) -> Path | None:
    """The source file of a ``mirage`` module (a package's ``__init__.py``), None if absent."""
    parts = name.split(".")
    if parts[0] != PACKAGE:
        return None
    base = root.joinpath(*parts[1:])
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _package_of(name: str, path: Path) -> str:
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


@lru_cache(maxsize=None)
def _imports(name: str, root: Path = ROOT) -> frozenset[str]:
    """The ``mirage`` modules one module imports anywhere in its source."""
    path = module_path(name, root)
    if path is None:
        return frozenset()
    tree = ast.parse(path.read_text(), filename=str(path))
    found = set()
    package = _package_of(name, path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            found.add(mod)
            # `from mirage.policies import dqn` imports a module, not only a name
            found.update(f"{mod}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Call) and _called(node) in LOADERS:
            found.update(_named(LOADERS[_called(node)], root))
    out = set()
    for mod in found:
        if mod.split(".")[0] != PACKAGE:
            continue
        parts = mod.split(".")
        # a module's parents run first (their __init__ is imported too)
        for i in range(1, len(parts) + 1):
            parent = ".".join(parts[:i])
            if module_path(parent, root) is not None:
                out.add(parent)
    return frozenset(out)


def _called(call: ast.Call) -> str | None:
    """The name a call calls: ``f`` of ``f(...)`` and of ``x.f(...)``."""
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)


@lru_cache(maxsize=None)
def _named(name: str, root: Path = ROOT) -> frozenset[str]:
    """The ``mirage`` modules that one module names in its strings (``"mirage.x.y:attr"``)."""
    tree = ast.parse(module_path(name, root).read_text())
    named = (NAMED.fullmatch(node.value) for node in ast.walk(tree)
             if isinstance(node, ast.Constant) and isinstance(node.value, str))
    return frozenset(m.group(1) for m in named if m and module_path(m.group(1), root) is not None)


def closure(*names: str, root: Path = ROOT) -> list[str]:
    """The named modules and every ``mirage`` module they import, transitively, sorted."""
    seen, todo = set(), [n for n in names]
    for n in names:
        if module_path(n, root) is None:
            raise ValueError(f"{n}: no such module in {root}")
    while todo:
        mod = todo.pop()
        if mod in seen:
            continue
        seen.add(mod)
        todo.extend(_imports(mod, root) - seen)
    return sorted(seen)


def fingerprint(*names: str, files=(), root: Path = ROOT) -> str:
    """A short hash of the source of ``names`` and everything they import from ``mirage``, and
    of the content (not the path) of data ``files`` the code reads."""
    h = hashlib.sha256()
    for mod in closure(*names, root=root):
        h.update(mod.encode() + b"\0" + module_path(mod, root).read_bytes() + b"\0")
    for f in files:
        h.update(Path(f).name.encode() + b"\0" + Path(f).read_bytes() + b"\0")
    return h.hexdigest()[:16]
