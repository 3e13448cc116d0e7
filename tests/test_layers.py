"""The house plan, checked: fhemark's stage packages form layers, and every import (lazy ones
inside functions included) points to the same package or a lower layer. Data moves one way:
model -> plan -> drivers -> store -> measure -> analyse -> advise (and compile) -> report -> cli."""

import ast
import re
from pathlib import Path

import fhemark

ROOT = Path(fhemark.__file__).parent
# Low to high. The leaves serve every layer; workload.py is the public name of model/workload.py.
LAYERS = [("errors", "locations", "stats"), ("model",), ("plan",), ("drivers",), ("store",), ("measure",),
          ("analyse",), ("advise", "compile"), ("report",), ("workload", "cli")]
RANK = {name: i for i, names in enumerate(LAYERS) for name in names}


def _module(path: Path) -> list[str]:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def _imports(path: Path, names: bool = False) -> list[tuple[int, list[str]]]:
    """(line, the fhemark module path imported) for every import of fhemark in the file (one outside
    the package, a benchmark's, has absolute ones only). With `names`, `from a import b, c` gives
    a.b and a.c: b may be a module of a's."""
    mod = _module(path) if path.is_relative_to(ROOT) else []
    pkg = mod if path.name == "__init__.py" else mod[:-1]
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.level or node.module == "fhemark"
                                                  or (node.module or "").startswith("fhemark.")):
            if node.level:
                base = pkg[:len(pkg) - (node.level - 1)] if node.level > 1 else pkg
                base = base + (node.module.split(".") if node.module else [])
            else:
                base = node.module.split(".")[1:]
            if names or not node.module:
                out += [(node.lineno, base + [a.name]) for a in node.names]
            else:
                out.append((node.lineno, base))
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name.split(".")[1:]) for a in node.names if a.name.startswith("fhemark.")]
    return out


def _caught(check, *seen: str, unseen: str = "\0") -> None:
    """A checker shown to fail on a planted violation: `check` raises, its message naming each of `seen`
    and not `unseen`."""
    try:
        check()
    except AssertionError as exc:
        assert all(x in str(exc) for x in seen) and unseen not in str(exc), str(exc)
    else:
        raise AssertionError(f"{check.__name__} saw nothing of {seen}")


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
    _caught(test_every_import_points_down_the_layers, "model/bad.py:2 imports store.sqlite")


MAX_LINES = 450  # a module longer than this mixes concerns: split it by what it does


def test_no_module_is_over_450_lines():
    long = {str(p.relative_to(ROOT)): n for p in ROOT.rglob("*.py") if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"


# -- one door, no circles, short functions ----------------------------------------------------

BENCHMARKS = ROOT.parent.parent / "benchmarks"


def _modules() -> dict[tuple[str, ...], Path]:
    """Every fhemark module by its path (a package by its own, () for fhemark itself)."""
    return {tuple(_module(p)): p for p in ROOT.rglob("*.py")}


def _resolved(path: Path, known) -> list[tuple[int, tuple[str, ...]]]:
    """(line, module) for every import of fhemark in the file: `from a import b` is a.b where b is a
    module, else a (the package or module that defines the name)."""
    out = []
    for line, target in _imports(path, names=True):
        while tuple(target) not in known and target:
            target = target[:-1]
        out.append((line, tuple(target)))
    return out


def test_only_the_measure_package_imports_its_runner():
    """`fhemark.measure.measure` is the one door into measurement: nothing outside measure/ (the CLI,
    analyse, advise, the benchmarks) drives a Runner of its own."""
    known = _modules()
    files = [p for p in ROOT.rglob("*.py") if _module(p)[:1] != ["measure"]] + sorted(BENCHMARKS.rglob("*.py"))
    found = [f"{p}:{line}" for p in files for line, target in _resolved(p, known) if target == ("measure", "runner")]
    assert not found, "imports of measure.runner outside measure/ (use fhemark.measure.measure):\n" + "\n".join(found)


def test_the_door_checker_sees_a_lazy_import_of_the_runner(tmp_path, monkeypatch):
    """The test above can fail: a function-level `from ..measure import runner` in the CLI is caught."""
    pkg = tmp_path / "fhemark"
    for d in ("cli", "measure"):
        (pkg / d).mkdir(parents=True)
        (pkg / d / "__init__.py").write_text("")
    (pkg / "measure" / "runner.py").write_text("")
    (pkg / "cli" / "bad.py").write_text("def f():\n    from ..measure import runner\n")
    monkeypatch.setattr(__import__(__name__), "ROOT", pkg)
    monkeypatch.setattr(__import__(__name__), "BENCHMARKS", tmp_path / "benchmarks")
    _caught(test_only_the_measure_package_imports_its_runner, "cli/bad.py:2")


def _cycle(graph: dict) -> list | None:
    """One import circle in the graph, as the modules around it (the first repeated at the end)."""
    state: dict = {}  # 1: on the current path, 2: done, nothing circles back through it

    def visit(node, path):
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt, path + [nxt])):
                return found
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start, [start])):
            return found
    return None


def test_no_import_circle_among_fhemark_modules():
    """Every import counts (module level, inside functions, under TYPE_CHECKING): a circle among
    them is two modules that each need the other, which one module or a third should hold."""
    known = _modules()
    graph = {mod: {t for _, t in _resolved(path, known) if t != mod} for mod, path in known.items()}
    circles = []
    while (circle := _cycle(graph)) and len(circles) < 20:  # each one found, then its last import cut
        circles.append(" -> ".join(".".join(("fhemark", *m)) for m in circle))
        graph[circle[-2]].discard(circle[-1])
    assert not circles, "import circles:\n" + "\n".join(circles)


def test_the_circle_checker_sees_a_circle_under_type_checking(tmp_path, monkeypatch):
    """The test above can fail: a circle closed by an import under TYPE_CHECKING is caught."""
    pkg = tmp_path / "fhemark"
    (pkg / "measure").mkdir(parents=True)
    (pkg / "measure" / "a.py").write_text("from .b import f\n")
    (pkg / "measure" / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                          "    from .a import g\n")
    monkeypatch.setattr(__import__(__name__), "ROOT", pkg)
    _caught(test_no_import_circle_among_fhemark_modules, "fhemark.measure.a -> fhemark.measure.b -> fhemark.measure.a")


MAX_FUNCTION_LINES = 60  # a longer function is several steps that want names of their own


def test_no_function_in_src_is_over_60_lines():
    """Counted from the def line to the body's last line (decorators left out), nested ones apart."""
    long = [f"{p.relative_to(ROOT)}:{node.lineno} {node.name}: {n} lines"
            for p in sorted(ROOT.rglob("*.py")) for node in ast.walk(ast.parse(p.read_text()))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and (n := node.end_lineno - node.lineno + 1) > MAX_FUNCTION_LINES]
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines:\n" + "\n".join(long)


def test_the_length_checker_sees_a_long_function(tmp_path, monkeypatch):
    """The test above can fail: a 61-line function is caught; a decorator does not count."""
    pkg = tmp_path / "fhemark"
    (pkg / "measure").mkdir(parents=True)
    body = "".join(f"    x{i} = {i}\n" for i in range(59))
    (pkg / "measure" / "long.py").write_text(f"@staticmethod\ndef short():\n{body}\n\ndef long():\n{body}    return 0\n")
    monkeypatch.setattr(__import__(__name__), "ROOT", pkg)
    _caught(test_no_function_in_src_is_over_60_lines, "measure/long.py:64 long: 61 lines", unseen="short")


# -- a library's facts live in its folder ---------------------------------------------------

# The libraries, by the names code would test for (a driver's name, its package, a version pin).
LIBRARY = r"seal|lattigo|openfhe|tenseal|tfhe[-_]?rs|concrete|heir"
_NAMED = re.compile(rf"(?<![a-z])({LIBRARY})(?![a-z])", re.I)
_IS_NAME = re.compile(rf"({LIBRARY})(@.*)?", re.I)
# Where src still holds a library's facts, and why; each goes to its driver's folder and leaves this list
# (issue 49). Prose (a message, a help text's example, a docstring) may name a library; code may not.
STILL_NAMED = {
    "compile": "HEIR's compile-and-measure stack, to become drivers/heir behind measure()",
}


def _library_names(path: Path) -> list[str]:
    """`line: name` for every identifier that names a library and every string that is one's name."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        text = node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) \
            and _IS_NAME.fullmatch(node.value.strip()) else getattr(node, "id", None) or getattr(node, "attr", None) \
            or (node.name if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.alias)) else None)
        if isinstance(text, str) and _NAMED.search(text):
            out.append(f"{getattr(node, 'lineno', 0)}: {text}")
    return out


def test_src_code_names_no_library():
    """What a library is (its rings, its routines' levels, its snippets, its key switching) reaches src
    through its driver's declarations; src code that tests for a library's name holds a fact that belongs
    in the library's folder."""
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if not any(rel == k or rel.startswith(k + "/") for k in STILL_NAMED):
            found += [f"{rel}:{hit}" for hit in _library_names(path)]
    assert not found, "library names in src code (move the fact to drivers/<library>/):\n" + "\n".join(found)


def test_the_name_checker_sees_a_library_compared_in_code(tmp_path, monkeypatch):
    """The test above can fail: a comparison with a library's name, or a name for one's fact, is caught;
    the same name in a message is not."""
    pkg = tmp_path / "fhemark"
    (pkg / "advise").mkdir(parents=True)
    (pkg / "advise" / "bad.py").write_text('def f(lib):\n    if lib == "openfhe":\n        raise ValueError("OpenFHE only")\n'
                                           "OPENFHE_DEPTHS = (5, 13)\n")
    monkeypatch.setattr(__import__(__name__), "ROOT", pkg)
    _caught(test_src_code_names_no_library, "advise/bad.py:2: openfhe", "advise/bad.py:4: OPENFHE_DEPTHS", unseen="OpenFHE only")
