"""The package's imports run one way: no circles, and no stage importing from a stage above it
(lazy imports inside functions count too)."""

import ast
import functools
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "mirage"

#: the stages from the bottom up; a stage may import from its own floor and the floors below
FLOORS = [
    {"errors", "fingerprint", "units", "options"},
    {"features", "outcomes"},
    {"traces", "policies", "config", "notebooks"},
    {"sim", "evaluate"},
    {"figures"},  # draws tables: reads evaluate, traces and outcomes, never live or samples
    {"samples", "report"},
    {"twin"},
    {"live"},
    {"bench"},  # every benchmark: may run any stage
    {"cli"},
    {"__main__"},
]
FLOOR = {stage: i for i, names in enumerate(FLOORS) for stage in names}


def module_name(path: Path) -> str:
    parts = ("mirage",) + path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """The mirage modules ``path`` imports, anywhere in it (module level or inside functions)."""
    me = module_name(path)
    package = me if path.name == "__init__.py" else me.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("mirage")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith("mirage"):
                out.add(target)
                # `from mirage.x import y` where y is a module of package x
                for a in node.names:
                    if (SRC.parent / (target + "." + a.name).replace(".", "/")).with_suffix(".py").exists():
                        out.add(f"{target}.{a.name}")
    return {m for m in out if m != me}


@functools.cache
def graph() -> dict[str, frozenset[str]]:
    mods = {module_name(p): p for p in SRC.rglob("*.py")}
    return {m: frozenset(t for t in imports(p) if t in mods) for m, p in mods.items()}


def stage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_every_stage_has_a_floor():
    stages = {stage(m) for m in graph()} - {"__init__"}
    assert stages <= set(FLOOR), f"put {sorted(stages - set(FLOOR))} on a floor of FLOORS"


def test_no_import_circles():
    g = graph()
    seen, stack, circles = set(), [], []

    def visit(m):
        if m in stack:
            circles.append(stack[stack.index(m):] + [m])
            return
        if m in seen:
            return
        seen.add(m)
        stack.append(m)
        for t in sorted(g[m]):
            if not (m.startswith(t + ".") or t.count(".") == 0):  # a package's own __init__
                visit(t)
        stack.pop()

    for m in sorted(g):
        visit(m)
    assert not circles, "import circles: " + "; ".join(" -> ".join(c) for c in circles)


@pytest.mark.parametrize("module", sorted(graph()))
def test_no_module_imports_from_a_stage_above_it(module):
    mine = stage(module)
    if mine == "__init__":
        return
    above = sorted(t for t in graph()[module]
                   if stage(t) != "__init__" and FLOOR[stage(t)] > FLOOR[mine])
    assert not above, f"{module} (floor {FLOOR[mine]}) imports from above: {above}"


def test_every_name_a_package_exports_resolves():
    # mirage.policies resolves its names lazily (torch loads only when asked): each must exist
    import mirage.policies

    for name in mirage.policies.__all__:
        assert getattr(mirage.policies, name) is not None, name
