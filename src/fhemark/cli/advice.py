"""Answers: `recommend` (from the store), `params` (verified parameter proposals), `choose` (your computation)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Callable, Optional, Sequence

import typer
from rich.progress import BarColumn, Progress, ProgressColumn, Task, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Column
from rich.text import Text

from .. import report as report_files
from ..advise.recommend import load_workload, ranking_json, recommend
from ..drivers.registry import available, manifests
from ..errors import UserError
from ..locations import default_db
from ..report.text import print_recommendation
from ..store import export as export_mod
from ..store.sqlite import Store
from .application import RUN_REF, LaterStore, app, console, err_console, fail, open_store, output, store_to_write, write_out


@app.command("recommend")
def recommend_cmd(workload: Optional[Path] = typer.Argument(None, help="workload YAML (ops: {mul_relin: 10, ...}, ...)"),
                  op: list[str] = typer.Option(None, metavar="OP[=COUNT]",
                                               help="an operation and how many per evaluation, OP alone counting 1 "
                                                    "(repeatable; adds to the file's ops)"),
                  scheme: list[str] = typer.Option(None, help="only these schemes (repeatable)"),
                  min_security: Optional[int] = typer.Option(None, help="security bits required (default 128)"),
                  table: Optional[str] = typer.Option(None, help="security table: hestd2018 or guidelines2024"),
                  precision: Optional[float] = typer.Option(None, help="CKKS: precision bits required"),
                  depth: Optional[int] = typer.Option(None, help="multiplicative depth required (measured by depth_mul)"),
                  slots: Optional[int] = typer.Option(None, help="values processed together"),
                  threads: Optional[int] = typer.Option(None, help="the cores you deploy on: rank only results measured "
                                                                   "at this thread count (a suite's threads: [1, 2, max]); "
                                                                   "with --objective throughput: on a host of this many cores"),
                  objective: str = typer.Option("latency", help="latency (one evaluation alone) or throughput "
                                                                "(evaluations a second with the host busy: records "
                                                                "of a suite's mode: throughput)"),
                  db: Path = typer.Option(None, help="SQLite store"),
                  run_id: Optional[str] = typer.Option(None, "--run",
                                                       help=f"only this run: {RUN_REF} (default: the whole store)"),
                  json_out: Path = typer.Option(None, "--json", help="also write the ranking as JSON")) -> None:
    """Rank library / scheme / parameter set for a workload from the measured, checked results in the store."""
    if json_out:
        output(json_out, "--json")
    try:
        w = load_workload(workload, op or [], {"schemes": scheme or None, "min_security_bits": min_security,
                                               "security_table": table, "min_precision_bits": precision,
                                               "depth": depth, "slots": slots, "threads": threads,
                                               "objective": objective})
        store = open_store(db)
        recs = list(store.records(store.resolve_run(run_id)))
    except UserError as exc:
        fail(exc)
    cands = recommend(recs, w)
    print_recommendation(cands, w, console)
    if json_out:
        write_out(json_out, export_mod.strict_json(ranking_json(cands, w)), "--json")
    raise typer.Exit(0 if any(not c.excluded for c in cands) else 1)


@app.command("params")
def params_cmd(scheme: str = typer.Option(..., help="bfv, bgv, ckks, or any (CKKS with --precision, BFV/BGV with --plain-bits)"),
               depth: int = typer.Option(..., help="sequential multiplications the computation needs"),
               precision: Optional[float] = typer.Option(None, help="CKKS: bits of precision after the last multiplication"),
               plain_bits: Optional[int] = typer.Option(None, help="BFV/BGV: bits of the plaintext modulus t"),
               slots: int = typer.Option(1, help="values per ciphertext"),
               security: int = typer.Option(128, help="security bits (128, 192 or 256)"),
               table: str = typer.Option("hestd2018", help="security table: hestd2018 or guidelines2024"),
               library: list[str] = typer.Option(None, help="only these libraries (repeatable; default: every RLWE driver)"),
               repeats: int = typer.Option(3, min=1, max=20, help="fresh-key repetitions a set must pass"),
               db: Path = typer.Option(None, help="keep the verification runs in this store (default: a temporary one)"),
               json_out: Path = typer.Option(None, "--json", help="also write the proposals as JSON")) -> None:
    """Propose the smallest secure parameters per library for a computation, verified by running them."""
    from ..advise import advisor
    from ..report.text import print_proposals
    if json_out:
        output(json_out, "--json")
    schemes = {"any": (["ckks"] if precision is not None else []) + (["bfv", "bgv"] if plain_bits is not None else []),
               "bfv": ["bfv"], "bgv": ["bgv"], "ckks": ["ckks"]}.get(scheme)
    if not schemes:
        fail(UserError(f"--scheme {scheme}: unknown or without a requirement",
                        "use bfv, bgv or ckks, or any with --precision (CKKS) or --plain-bits (BFV/BGV)"))
    if security not in (128, 192, 256):
        fail(UserError(f"--security {security}: not a level of either security table", "use 128, 192 or 256"))
    if slots < 1:
        fail(UserError(f"--slots {slots}: a computation packs at least one value", "give --slots 1 or more"))
    if "ckks" in schemes and precision is None:
        fail(UserError("--scheme ckks needs --precision (bits of precision after the last multiplication)",
                        "e.g. --precision 20"))
    if set(schemes) & {"bfv", "bgv"} and plain_bits is None:
        fail(UserError(f"--scheme {scheme} needs --plain-bits (bits of the plaintext modulus t)", "e.g. --plain-bits 20"))
    for lib in library or []:
        if lib not in manifests():
            fail(UserError(f"--library {lib}: unknown library", f"use one of {', '.join(manifests())}"))
    needs = [advisor.Need(sch, depth, precision, plain_bits, slots, security, table) for sch in schemes]
    for need in needs:
        advisor.check_possible(need)
    store = Store(db) if db else None  # a path that is no store is refused before anything runs
    built = [lib for lib in available(library) if set(manifests()[lib].schemes) & {"bfv", "bgv", "ckks"}]
    if not built:
        fail(UserError("no RLWE driver is built here", "run `fhemark setup`, or name a built one with --library"))
    out = []
    for need in needs:
        libs = [lib for lib in built if need.scheme in manifests()[lib].schemes]
        props = advisor.advise(need, libs, repeats, store, progress=lambda line: err_console.print(line, markup=False,
                                                                                                 highlight=False))
        print_proposals(need, props, console)
        out += [(need, p) for p in props]
    if json_out:
        write_out(json_out, export_mod.strict_json([
            {"need": vars(n), "library": p.library, "params": p.spec, "rejected": p.rejected, "depth": p.depth,
             "margin": p.margin, "trajectory": p.trajectory, "effective": p.effective,
             "latency_ns": {r.op: r.median_ns for r in p.records}} for n, p in out]), "--json")
    missing = sorted({p.library for _, p in out if not p.spec})
    if missing and any(p.spec for _, p in out):
        console.print(f"no proposal from {', '.join(missing)} (each says why above); the others' stand",
                      highlight=False, markup=False)
    raise typer.Exit(0 if any(p.spec for _, p in out) else 1)  # one library without a set fails nothing


@app.command("choose")
def choose_cmd(file: Path = typer.Argument(..., help="your workload file (Python, see the README: Your own computation)"),
               explain: bool = typer.Option(False, "--explain", help="print what the program needs, run nothing"),
               precision: Optional[float] = typer.Option(None, help="CKKS: bits of precision every output needs "
                                                                   "(default: the workload's precision_bits, 20)"),
               security: int = typer.Option(128, help="security bits: 128, 192 or 256 (the tables' levels), or a "
                                                      "level between, judged by the lattice estimate"),
               table: str = typer.Option("hestd2018", help="security table: hestd2018 or guidelines2024"),
               library: list[str] = typer.Option(None, help="only these libraries (repeatable)"),
               scheme: list[str] = typer.Option(None, help="only these of the workload's schemes (repeatable)"),
               repeats: int = typer.Option(3, min=1, max=20, help="fresh-key runs of the program a set must pass"),
               budget: float = typer.Option(None, "--budget", min=0.1, help="minutes the search may take, shared "
                                            "evenly among each library's rings and bootstrapping set: no set is begun "
                                            "after its share, and what it verified is measured (deep programs)"),
               threads: int = typer.Option(1, min=1, max=1024, help="the cores you deploy on: the measurement runs the "
                                                                     "libraries at this thread count"),
               objective: str = typer.Option("latency", help="latency (one evaluation alone) or throughput (evaluations "
                                                             "a second with the host's cores busy: k at once)"),
               auto: bool = typer.Option(True, "--auto/--no-auto", help="also try each library's own parameter "
                                                                        "choice, where its driver offers one (OpenFHE's)"),
               polynomial: list[str] = typer.Option(None, help="evaluate the program's polynomials this way, log "
                                                               "(logarithmic depth) or horner; repeatable: each way "
                                                               "searched and ranked side by side"),
               db: Path = typer.Option(None, help="store for the measurement (default ./fhemark.db or $FHEMARK_DB)"),
               verify_db: Path = typer.Option(None, help="keep the search's runs in this store (default: a temporary one)"),
               out: Path = typer.Option(None, help="folder for the snippets (default ./choose/<workload>)"),
               json_out: Path = typer.Option(None, "--json", help="also write the answer as JSON"),
               at: list[str] = typer.Option(None, "--at", help="also check and measure this set as given: fherma (the "
                                                              "FHERMA challenge's expert set, data/fherma.tsv), an inline "
                                                              "set or a YAML file; repeatable"),
               compilers: list[str] = typer.Option(None, "--compilers", help="also a compiler's rows (heir: HEIR's "
                                                   "Lattigo code at its own parameters and at the set chosen for "
                                                   "Lattigo; repeatable)")) -> None:
    """Find, prove and rank the parameters each library runs YOUR computation at: smallest secure set per
    library, verified by running the program with fresh keys, then measured side by side."""
    _choose(ChooseOptions(**locals()))


@dataclass(frozen=True)
class ChooseOptions:
    """`fhemark choose`'s flags, as given."""
    file: Path
    explain: bool = False
    precision: float | None = None
    security: int = 128
    table: str = "hestd2018"
    library: list[str] | None = None
    scheme: list[str] | None = None
    repeats: int = 3
    budget: float | None = None
    threads: int = 1
    objective: str = "latency"
    auto: bool = True
    polynomial: list[str] | None = None
    db: Path | None = None
    verify_db: Path | None = None
    out: Path | None = None
    json_out: Path | None = None
    at: list[str] | None = None
    compilers: list[str] | None = None


def _choose(o: ChooseOptions) -> None:
    from ..advise import answer as answers
    from ..advise.expert import pinned
    from ..model.requirements import for_all
    from ..report.choice import print_answer, print_requirements
    if o.json_out:
        output(o.json_out, "--json")
    _check_choose_flags(o)
    w = _one_workload(o.file, o.scheme or [])
    given = tuple(pinned(w, o.at or []))  # before the search: a bad --at costs no run
    if o.explain:
        print_requirements(w.name, for_all(w), console)
        _routine_levels(w)
        raise typer.Exit(0)
    libs = _libraries(o, w)
    # Every path is checked before the search, and each store opened as the search begins (its first `say`):
    # nothing it finds is lost to a bad flag, and a refusal before it (impossible) writes nothing.
    folder = o.out or Path("choose") / report_files.safe_name(w.name)
    report_files.check_out(folder, "--out", "snippet folder")
    store = LaterStore(store_to_write(o.db or default_db(), "--db"))
    search_store = LaterStore(store_to_write(o.verify_db, "--verify-db")) if o.verify_db else None
    print_requirements(w.name, for_all(w), console)
    answer = _searched(o, w, libs, given, store, search_store)
    answers.write_snippets(answer, folder)
    print_answer(answer, console)
    _compiled_rows(o, w, answer, store)
    if o.json_out:
        write_out(o.json_out, export_mod.strict_json(answers.to_json(answer)), "--json")
    raise typer.Exit(0 if answer.ranked() else 1)


def _libraries(o: ChooseOptions, w) -> dict[str, list[str]]:
    """The libraries built here that run one of the workload's schemes (those named, where named)."""
    known = manifests()
    for lib in o.library or []:
        if lib not in known:
            fail(UserError(f"--library {lib}: unknown library", f"use one of {', '.join(known)}"))
    libs = {lib: known[lib].schemes for lib in available(o.library) if set(known[lib].schemes) & set(w.schemes)}
    if not libs:
        fail(UserError(f"no library built here runs {', '.join(w.schemes)}", "run `fhemark setup`, or name one with --library"))
    return libs


def _searched(o: ChooseOptions, w, libs: dict, given: tuple, store: LaterStore, search_store: LaterStore | None):
    """chooser.choose() under a progress line that counts down the --budget."""
    from ..advise import choose as chooser
    from ..advise.auto_params import auto_params
    opening = [x for x in (store, search_store) if x is not None]
    with Progress(*_choose_columns(), console=err_console, transient=True) as progress:
        task = progress.add_task("searching parameters", total=None, last="", since=None,
                                 deadline=time.monotonic() + o.budget * 60 if o.budget else None)
        try:
            return chooser.choose(w, libs, o.precision, o.security, o.table, o.repeats, store, search_store,
                                  say=_say(progress, task, opening), auto=auto_params if o.auto else None,
                                  threads=o.threads, objective=o.objective,
                                  polynomial=tuple(dict.fromkeys(o.polynomial or ())), at=given,
                                  budget_s=o.budget * 60 if o.budget else None)
        except KeyboardInterrupt:
            progress.stop()
            err_console.print(f"interrupted: nothing was chosen; measurements finished so far are in {store.path}",
                              highlight=False, markup=False, soft_wrap=True)
            raise typer.Exit(130)


def _compiled_rows(o: ChooseOptions, w, answer, store: LaterStore) -> None:
    """--compilers: each compiler's rows beside the answer (compile/choose.py)."""
    from ..advise.candidates import verified_specs
    from ..compile.choose import COMPILERS, beside_choose
    for comp in dict.fromkeys(o.compilers or []):
        console.print(beside_choose(w, comp, verified_specs(answer, COMPILERS[comp]),
                                    say=lambda line: err_console.print(line, highlight=False, markup=False),
                                    store=store, run_id=answer.run_id, security=(o.table, o.security)),
                      highlight=False, markup=False, soft_wrap=True)


def _check_choose_flags(o: ChooseOptions) -> None:
    """Each of choose's flags that can be wrong, refused in one line before anything is loaded or run."""
    from ..compile.choose import COMPILERS
    from ..model.security import TABLES
    from ..model.ways import WAYS
    table, security, precision, objective = o.table, o.security, o.precision, o.objective
    if table not in TABLES:
        fail(UserError(f"--table {table}: unknown security table", f"use one of {', '.join(TABLES)}"))
    if not 80 <= security <= 256:  # between the tables' rows (128, 192, 256) the estimate judges a set
        fail(UserError(f"--security {security}: outside 80..256 bits", "use 128, 192 or 256, or a level between"))
    for way in o.polynomial or []:
        if way not in WAYS:
            fail(UserError(f"--polynomial {way}: unknown way", f"use {' or '.join(WAYS)}"))
    if objective not in ("latency", "throughput"):
        fail(UserError(f"--objective {objective}: unknown objective", "use latency or throughput"))
    if precision is not None and not 1 <= precision <= 50:
        fail(UserError(f"--precision {precision:g}: CKKS precision must be 1..50 bits", "e.g. --precision 20"))
    for comp in o.compilers or []:
        if comp not in COMPILERS:
            fail(UserError(f"--compilers {comp}: unknown compiler", f"use {', '.join(COMPILERS)}"))


def _one_workload(file: Path, schemes: list[str]):
    """The file's one workload, with only the schemes asked (the same file and digest: only those are searched)."""
    from dataclasses import replace

    from ..model.workload_file import load as load_workloads
    found = load_workloads(file)
    if len(found) != 1:
        fail(UserError(f"{file}: defines {len(found)} workloads ({', '.join(w.name for w in found)}); choose takes one",
                        "keep one Workload per file for choose"))
    w = found[0]
    for s in schemes:
        if s not in w.schemes:
            fail(UserError(f"--scheme {s}: {w.name} names {', '.join(w.schemes)}", "give one of those"))
    return replace(w, schemes=tuple(schemes)) if schemes else w


def _routine_levels(w) -> None:
    """The libraries whose own routines consume more levels than the program counts (routines.py)."""
    from ..model import routines
    if "ckks" not in w.schemes:
        return
    prog = w.program("ckks")
    for lib in routines.counting():
        if extra := routines.extra_levels(prog, lib):
            console.print(f"CKKS on {lib}: its own routines consume {extra} level(s) more, {routines.levels(prog, lib)} "
                          "in all; its search gives it them", highlight=False)


# -- choose's progress: what is done and what is left ----------------------------------------------

def _choose_columns() -> list[ProgressColumn]:
    # Only the set under way may wrap: rich narrows every wrappable column, the counts among them, to fit.
    return [TextColumn("[bold]{task.description}"), BarColumn(bar_width=16, table_column=Column(no_wrap=True)),
            _Sets(Column(no_wrap=True)), TimeElapsedColumn(Column(no_wrap=True)), _Left(Column(no_wrap=True)),
            TextColumn("{task.fields[last]}", markup=False, table_column=Column())]


def _say(progress: Progress, task: TaskID, stores: Sequence[LaterStore] = ()) -> Callable[..., None]:
    """choose's `say`: the search counts the sets it begins (how many it will try is unknown: each
    library stops at its first passing set); the measurement counts its sets done of its total. Its
    first word opens `stores`: the work begins."""
    def say(stage: str, what: str, sets: int = 0, total: int | None = None) -> None:
        for store in stores:
            store.open()
        if total is not None:
            progress.update(task, total=total, completed=0, since=time.monotonic())
        progress.update(task, description=stage, last=what, advance=sets)
    return say


class _Sets(ProgressColumn):
    def render(self, task: Task) -> Text:
        done = int(task.completed)
        if task.total is None:
            return Text(f"set {done}" if done else "")
        return Text(f"{done}/{int(task.total)} sets")


class _Left(ProgressColumn):
    """The measurement's time left at its pace so far: every set runs the same policy, so the sets done
    predict the rest (larger rings run slower: an estimate, said as one). The search's is unknown."""

    def render(self, task: Task) -> Text:
        since, done, deadline = task.fields.get("since"), task.completed, task.fields.get("deadline")
        if task.total is None and deadline is not None:  # the search, under --budget
            return Text(f"{timedelta(seconds=max(0, round(deadline - time.monotonic())))} of the budget left")
        if task.total is None or since is None or not done or done >= task.total:
            return Text("")
        left = (time.monotonic() - since) / done * (task.total - done)
        return Text(f"about {timedelta(seconds=round(left))} left")
