"""The house plan, checked: fhemark's stage packages form layers, and every import (lazy ones
inside functions included) points to the same package or a lower layer. Data moves one way:
model -> plan -> drivers -> store -> measure -> analyse -> advise -> report -> cli."""

import ast
from pathlib import Path

import fhemark

ROOT = Path(fhemark.__file__).parent
# Low to high. The leaves serve every layer; workload.py is the public name of model/workload.py.
LAYERS = [("errors", "locations", "stats"), ("model",), ("plan",), ("drivers",), ("store",), ("measure",),
          ("analyse",), ("advise",), ("report",), ("workload", "cli")]
RANK = {name: i for i, names in enumerate(LAYERS) for name in names}


def _module(path: Path) -> list[str]:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def _imports(path: Path) -> list[tuple[int, list[str]]]:
    """(line, the fhemark module path imported) for every import of fhemark in the file."""
    mod = _module(path)
    pkg = mod if path.name == "__init__.py" else mod[:-1]
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = pkg[:len(pkg) - (node.level - 1)] if node.level > 1 else pkg
            if node.module:
                out.append((node.lineno, base + node.module.split(".")))
            else:
                out += [(node.lineno, base + [a.name]) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("fhemark."):
            out.append((node.lineno, node.module.split(".")[1:]))
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name.split(".")[1:]) for a in node.names if a.name.startswith("fhemark.")]
    return out


def test_every_module_belongs_to_a_layer():
    tops = {p.relative_to(ROOT).parts[0].removesuffix(".py") for p in ROOT.rglob("*.py")} - {"__init__"}
    assert tops <= set(RANK), f"not in any layer: {sorted(tops - set(RANK))}: add them to LAYERS"


def test_every_import_points_down_the_layers():
    upward = []
    for path in ROOT.rglob("*.py"):
        mine = _module(path)
        if not mine:
            continue
        for line, target in _imports(path):
            if target and target[0] != mine[0] and RANK.get(target[0], -1) > RANK[mine[0]]:
                upward.append(f"{path.relative_to(ROOT)}:{line} imports {'.'.join(target)}")
    assert not upward, "imports pointing up the layers:\n" + "\n".join(upward)


def test_the_checker_sees_an_upward_import(tmp_path, monkeypatch):
    """The test above can fail: a model module importing the store is caught."""
    pkg = tmp_path / "fhemark"
    (pkg / "model").mkdir(parents=True)
    (pkg / "model" / "bad.py").write_text("def f():\n    from ..store.sqlite import Store\n")
    monkeypatch.setattr(__import__(__name__), "ROOT", pkg)
    assert _imports(pkg / "model" / "bad.py") == [(2, ["store", "sqlite"])]
    try:
        test_every_import_points_down_the_layers()
    except AssertionError as exc:
        assert "model/bad.py:2 imports store.sqlite" in str(exc)
    else:
        raise AssertionError("an upward import went unseen")


MAX_LINES = 450  # a module longer than this mixes concerns: split it by what it does


def test_no_module_is_over_450_lines():
    long = {str(p.relative_to(ROOT)): n for p in ROOT.rglob("*.py") if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"
