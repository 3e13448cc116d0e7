"""The documentation is tested like code: the site builds, and the commands it shows work and print
what it shows.

- The site: `mkdocs build --strict` (mkdocs.yml) into a temporary folder, with no warning: a broken
  link or anchor, or a page left out of the nav, fails it. The README is its home page and the
  command reference is made from every command's `--help` at that build (docs/gen_cli.py).
- ```console blocks in README.md and docs/*.md: a line `$ COMMAND` is a command, the lines after it
  (up to the next `$ ` or the block's end) an excerpt of its output, in which a line that begins with
  `…` stands for lines left out. `$ fhemark ...` runs as shown, from the repository's root, at 200
  columns, with a store of its own. The long ones run in a short form or are only parsed, as
  SHORT_FORMS says for each.
- Output is compared by structure, not figures (numbers masked): every box-drawn table shown must
  have a table in the real output with the same header, whose first column holds the values the
  shown one does; the text shown between tables and left-out lines must appear in the real output,
  in that order (whitespace aside: rich wraps a title to its table's width).
- ```sh blocks, and console commands that are only parsed: every `fhemark` line goes through the
  CLI's own parser (the command exists, each option exists and its value has the option's type), a
  built-in suite named with `--suite` exists, so do the repository paths a line names, and `make`
  runs only the Makefile's targets.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
COLUMNS = "200"

# The quick suite's table in the shape `make run` prints it, small: one library, one scheme, two ops.
# `make run` takes minutes (every library, 85 rows); this takes seconds. Its header holds a subset of
# the library columns shown, and its first column a subset of the schemes shown.
QUICK_EXCERPT = """\
name: quick
policy: {warmup: 1, min_samples: 6, max_samples: 8, budget_s: 0.1}
cases:
  - libraries: [seal]
    schemes: [bfv]
    params: [c8192]
    ops: [add, rotate_1]
"""


@dataclass(frozen=True)
class Short:
    """How a long command shown in the docs is checked: `argv` (given a temporary folder) runs in its
    place and `subset` compares its tables as a smaller run of the same (its header's columns among
    the shown ones, the first column's values among the shown ones); with no argv the command is
    only parsed, as the ```sh blocks' commands are."""
    why: str
    argv: object = None
    subset: bool = False


def _quick_excerpt(tmp: Path) -> list[str]:
    suite = tmp / "quick.yaml"
    suite.write_text(QUICK_EXCERPT)
    return ["run", "--suite", str(suite), "--db", str(tmp / "run.db"), "--report", str(tmp / "report")]


SHORT_FORMS = {
    "make run": Short("minutes: the quick suite on every library; run as a one-library, two-op suite of the same table",
                      _quick_excerpt, subset=True),
    "fhemark choose examples/statistics.py": Short("minutes: a search and a measurement on every library; parsed, "
                                                   "and its --explain run by docs/circuit.md's block"),
}


# Reading the Markdown

FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)


@dataclass(frozen=True)
class Shown:
    page: str
    line: int
    command: str
    output: tuple[str, ...]


def _blocks(lang: str):
    for page in PAGES:
        text = page.read_text()
        for m in FENCE.finditer(text):
            if m.group(1) == lang:
                yield page.relative_to(ROOT).as_posix(), text.count("\n", 0, m.start(2)) + 1, m.group(2)


def console_commands() -> list[Shown]:
    shown = []
    for page, first, body in _blocks("console"):
        lines = body.splitlines()
        starts = [i for i, line in enumerate(lines) if line.startswith("$ ")]
        assert starts and starts[0] == 0, f"{page}:{first}: a console block begins with a `$ ` command line"
        for i, end in zip(starts, [*starts[1:], len(lines)]):
            shown.append(Shown(page, first + i, lines[i][2:].strip(), tuple(lines[i + 1:end])))
    return shown


def sh_lines() -> list[tuple[str, int, str]]:
    lines = []
    for page, first, body in _blocks("sh"):
        for i, line in enumerate(body.splitlines()):
            if line.strip() and not line.lstrip().startswith("#"):
                lines.append((page, first + i, line))
    return lines


# Comparing output by its structure

BOX = "┏┃┡┗┌│├└╭╰┠╟╞━─┳┻╇┯┷"
VERTICAL = re.compile("[┃│]")


def _mask(text: str) -> str:
    return " ".join(re.sub(r"\d+(?:[.,]\d+)*", "#", text).split())


@dataclass
class Table:
    header: tuple[str, ...]
    first: list[str]


def structure(lines) -> tuple[list[Table], list[str], str]:
    """The output's box-drawn tables, the text shown between tables and left-out lines (masked, one
    string a stretch), and all its text outside tables (masked, one string)."""
    tables, stretches, text, chunk = [], [], [], []

    def flush():
        if chunk:
            stretches.append(_mask(" ".join(chunk)))
            chunk.clear()

    lines = [line.rstrip() for line in lines]
    i = 0
    while i < len(lines):
        s = lines[i].strip()
        if s.startswith("…"):
            flush()
            i += 1
        elif s[:1] in "┏┌":
            flush()
            j = i + 1
            while j < len(lines) and lines[j].strip()[:1] in BOX and lines[j].strip():
                j += 1
            tables.append(_table(lines[i:j]))
            i = j
        else:
            if s:
                chunk.append(s)
                text.append(s)
            i += 1
    flush()
    return tables, stretches, _mask(" ".join(text))


def _cells(line: str) -> list[str]:
    return [c.strip() for c in VERTICAL.split(line.strip()[1:-1])]


def _table(lines: list[str]) -> Table:
    sep = next((k for k, line in enumerate(lines) if line.strip()[:1] in "┡├╞"), None)
    head_lines = [line for line in lines[:sep or 0] if line.strip()[:1] in "┃│"]
    body = [line for line in lines[(sep or 0) + 1:] if line.strip()[:1] in "┃│"]
    header = ()
    if head_lines:
        cols = [_cells(line) for line in head_lines]
        header = tuple(" ".join(c[k] for c in cols if k < len(c) and c[k]) for k in range(len(cols[0])))
    return Table(header, [c[0] for c in map(_cells, body) if c and c[0]])


def _subsequence(small, big) -> bool:
    it = iter(big)
    return all(any(x == y for y in it) for x in small)


def mismatches(shown: tuple[str, ...], real: str, subset: bool) -> list[str]:
    """What of the shown excerpt the real output does not have (empty: it matches)."""
    want_tables, want_text, _ = structure(shown)
    got_tables, _, got_text = structure(real.splitlines())
    problems = []
    at = 0
    for want in want_tables:
        for k in range(at, len(got_tables)):
            got = got_tables[k]
            if subset:
                same_head = got.header[:1] == want.header[:1] and _subsequence(got.header, want.header)
                rows_fit = set(got.first) <= set(want.first)
            else:
                same_head, rows_fit = got.header == want.header, set(want.first) <= set(got.first)
            if same_head and rows_fit:
                at = k + 1
                break
        else:
            problems.append(f"no table with header {list(want.header)} and first column {sorted(set(want.first))}; "
                            f"the output's: {[(list(t.header), sorted(set(t.first))) for t in got_tables]}")
    pos = 0
    for stretch in want_text:
        found = got_text.find(stretch, pos)
        if found < 0:
            problems.append(f"text not in the output (numbers masked as #): {stretch!r}")
        else:
            pos = found + len(stretch)
    return problems


# Parsing commands with the CLI's own parser


def _click_root():
    import typer.main

    from fhemark.cli import app
    return typer.main.get_command(app)


def parse_fhemark(args: list[str]) -> str | None:
    """None when the CLI's parser accepts `fhemark ARGS` (nothing runs), else why not."""
    from typer._click.exceptions import ClickException

    cmd, name, ctx, rest = _click_root(), "fhemark", None, list(args)
    try:
        while True:
            ctx = cmd.make_context(name, rest, parent=ctx)
            if not hasattr(cmd, "resolve_command"):
                break
            name, cmd, rest = cmd.resolve_command(ctx, [*getattr(ctx, "_protected_args", []), *ctx.args])
    except ClickException as exc:
        return exc.format_message()
    suite = ctx.params.get("suite")
    if isinstance(suite, str) and not suite.endswith((".yaml", ".yml")) and not (ROOT / "suites" / f"{suite}.yaml").is_file():
        return f"--suite {suite}: no built-in suite of that name (suites/)"
    return None


REPO_DIRS = ("src/", "docs/", "drivers/", "examples/", "suites/", "benchmarks/", "protocol/", "tests/")


def _variants(tokens: list[str]):
    """`list libraries|schemes` shows two commands: one a spelling of each alternative."""
    alts = [t.split("|") if "|" in t and not t.startswith("-") else [t] for t in tokens]
    for k in range(max(map(len, alts), default=1)):
        yield [a[min(k, len(a) - 1)] for a in alts]


def check_line(line: str) -> list[str]:
    """Why a command line shown in a ```sh block (or a console command only parsed) would fail."""
    tokens = shlex.split(line, comments=True)
    while tokens and re.match(r"^[A-Z_]+=", tokens[0]):
        tokens = tokens[1:]
    if not tokens:
        return []
    problems = [f"{t}: no such path in the repository" for t in tokens
                if t.startswith(REPO_DIRS) and not (ROOT / t.rstrip("/")).exists()]
    exe = tokens[0]
    if exe in ("fhemark", ".venv/bin/fhemark"):
        problems += [why for v in _variants(tokens[1:]) if (why := parse_fhemark(v))]
    elif exe == "make":
        targets = set(re.findall(r"^([\w.-]+):", (ROOT / "Makefile").read_text(), re.M))
        problems += [f"make {t}: no such target in the Makefile" for t in tokens[1:] if t not in targets]
    elif exe in ("python", ".venv/bin/python", "python3") and tokens[1:2] == ["-m"]:
        import importlib.util
        if importlib.util.find_spec(tokens[2]) is None:
            problems.append(f"python -m {tokens[2]}: no such module")
    elif exe in ("python", ".venv/bin/python", "python3", "bash") and len(tokens) > 1 and not (ROOT / tokens[1]).exists():
        problems.append(f"{tokens[1]}: no such script")
    return problems


# The tests


def test_the_site_builds_strict_without_a_warning(tmp_path):
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
                        "--site-dir", str(tmp_path / "site")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "WARNING" not in r.stdout + r.stderr, r.stdout + r.stderr
    site = tmp_path / "site"
    home = (site / "index.html").read_text()
    assert "make run" in home and 'href="usage/' in home  # the README, its docs/ links turned into the site's
    reference = (site / "cli" / "index.html").read_text()
    for command in ("fhemark run", "fhemark choose", "fhemark baseline save"):
        assert f">{command}</h2>" in reference, command
    assert "--suite" in reference and "--explain" in reference


def test_a_broken_link_fails_the_build(tmp_path):
    """The check above is only as good as its config: a README link to a page that does not exist,
    in a copy of the repository's docs, fails the strict build."""
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    (tmp_path / "README.md").write_text((ROOT / "README.md").read_text() + "\n[gone](docs/no-such-page.md)\n")
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert r.returncode != 0 and "no-such-page.md" in r.stdout + r.stderr, r.stdout + r.stderr


CONSOLE = console_commands()


def test_the_docs_show_commands_and_name_every_long_one():
    commands = {s.command for s in CONSOLE}
    assert "make run" in commands and any(c.startswith("fhemark choose") for c in commands)
    assert set(SHORT_FORMS) <= commands, "SHORT_FORMS names a command no page shows any more"


@pytest.mark.parametrize("shown", CONSOLE, ids=[f"{s.page}:{s.line}" for s in CONSOLE])
def test_a_shown_command_prints_what_the_docs_show(shown, tmp_path):
    short = SHORT_FORMS.get(shown.command)
    if short is None:
        tokens = shlex.split(shown.command)
        assert tokens[0] == "fhemark", (f"{shown.page}:{shown.line}: `{shown.command}` is not an fhemark command: "
                                        "give it a short form in SHORT_FORMS, or show it in a ```sh block")
        argv = tokens[1:]
    elif short.argv is None:
        assert check_line(shown.command) == [], f"{shown.page}:{shown.line}"
        return
    else:
        argv = short.argv(tmp_path)
    env = {**os.environ, "COLUMNS": COLUMNS, "FHEMARK_DB": str(tmp_path / "fhemark.db")}
    r = subprocess.run([sys.executable, "-m", "fhemark.cli", *argv], capture_output=True, text=True, cwd=ROOT,
                       timeout=120, env=env)
    assert r.returncode == 0, f"{shown.page}:{shown.line}: `{shown.command}` exited {r.returncode}: {r.stderr}"
    problems = mismatches(shown.output, r.stdout, subset=short is not None and short.subset)
    assert not problems, f"{shown.page}:{shown.line}: `{shown.command}`:\n" + "\n".join(problems) + "\n" + r.stdout


def test_every_command_in_a_sh_block_parses():
    lines = sh_lines()
    assert len(lines) > 30
    problems = [f"{page}:{n}: {line.strip()}: {why}" for page, n, line in lines for why in check_line(line)]
    assert not problems, "\n".join(problems)


def test_every_repository_path_the_docs_name_exists():
    """`src/fhemark/advise/advisor.py` in the prose: a file moved or renamed leaves no stale pointer
    (a path with a placeholder, `drivers/<library>/`, or a pattern, `suites/*.yaml`, is not one)."""
    named = {(page.relative_to(ROOT).as_posix(), m.group(1)) for page in PAGES
             for m in re.finditer(r"`((?:%s)[^`\s]*)`" % "|".join(REPO_DIRS), page.read_text())}
    missing = sorted(f"{page}: {path}" for page, path in named
                     if not re.search(r"[<*{]", path) and not (ROOT / path.split(":")[0]).exists())
    assert not missing, "\n".join(missing)


# The checks' own checks, on made-up output


def test_the_structure_check_masks_figures_and_catches_a_changed_header_or_text():
    real = ["title: 12.5 s of 30 s", "┏━━━┳━━━┓", "┃ a ┃ b ┃", "┡━━━╇━━━┩", "│ X │ 1 │", "│ Y │ 2 │",
            "└───┴───┘", "done in 3 s"]
    shown = ("title: 9 s of 40 s", "┏━━━┳━━━┓", "┃ a ┃ b ┃", "┡━━━╇━━━┩", "│ X │ 7 │", "  … more rows", "done in 8 s")
    assert mismatches(shown, "\n".join(real), subset=False) == []
    assert mismatches(tuple(s.replace("┃ b", "┃ c") for s in shown), "\n".join(real), subset=False)
    assert mismatches(tuple(s.replace("│ X", "│ Z") for s in shown), "\n".join(real), subset=False)
    assert mismatches(shown[:-1] + ("finished in 8 s",), "\n".join(real), subset=False)
    wrapped = ["title: 1 s", "of 2 s", *real[1:]]  # rich wraps a title to its table's width
    assert mismatches(shown, "\n".join(wrapped), subset=False) == []


def test_the_line_check_catches_an_unknown_option_suite_path_or_target():
    assert check_line(".venv/bin/fhemark run --suite quick   # a comment") == []
    assert check_line("fhemark list libraries|schemes") == []
    assert check_line("fhemark list libraries|nothing")
    assert check_line("fhemark run --suite quick --no-such-flag")
    assert check_line("fhemark run --suite no_such_suite")
    assert check_line("fhemark choose examples/no_such_file.py")
    assert check_line("make no-such-target")
    assert check_line("fhemark params --depth five")


def test_the_readme_is_a_newcomers_page():
    """Issue 48: at most 1,500 words, the two commands first (the reference lives in docs/)."""
    text = (ROOT / "README.md").read_text()
    assert len(text.split()) <= 1500, f"README.md has {len(text.split())} words: move reference text into docs/"
    first = [line for line in text.splitlines() if line.startswith(("make ", "$ make "))][:2]
    assert [line.removeprefix("$ ").split()[1] for line in first] == ["run", "test"], first
