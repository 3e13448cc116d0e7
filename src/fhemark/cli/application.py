"""The `fhemark` application: its commands' shared way out (one line for bad input, exit statuses),
the consoles, and the helpers every command uses for its files and its store."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.text import Text
from typer._click.exceptions import ClickException, NoArgsIsHelpError
from typer.core import TyperGroup, TyperOption

from ..errors import UserError
from ..locations import default_db, settle_environment
from ..store.sqlite import Store, inspect

# Exit status of a bug in fhemark itself (never of bad input: that is 2, one line).
INTERNAL_ERROR = 3


def _say_error(line: str) -> None:
    """The one line bad input gets on stderr; user text is never read as console markup."""
    err_console.print(Text.assemble(("error:", "red"), " ", " ".join(line.split())), highlight=False, soft_wrap=True)


_value_placeholder = TyperOption.display_type_rich


def _no_placeholder_for_flags(self: TyperOption, ctx: Any) -> str | None:
    """A flag takes no value, but typer 0.29's rich help prints its type beside it (`--help <bool>`,
    `--resume --no-resume <bool>`), as if it took one (its plain help prints none). Flags show none;
    options that take a value keep their placeholder (`--db <path>`)."""
    return None if self.is_flag and not self.count else _value_placeholder(self, ctx)


TyperOption.display_type_rich = _no_placeholder_for_flags  # type: ignore[method-assign]


class _Commands(TyperGroup):
    """Every command's way out: a UserError (bad input, an unusable store or output path) is one line
    and exit status 2; a wrong flag or argument is one line too; a bug is one line and status 3
    (FHEMARK_DEBUG=1 shows its traceback). Nothing reaches the user as a traceback."""

    def main(self, args: Any = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        try:
            settle_environment()
            code = super().main(args=args, prog_name=prog_name, complete_var=complete_var, standalone_mode=False,
                                **extra)
        except NoArgsIsHelpError as exc:
            console.print(exc.ctx.get_help(), markup=False, highlight=False)
            code = 0
        except ClickException as exc:
            where = getattr(getattr(exc, "ctx", None), "command_path", None) or "fhemark"
            _say_error(f"{exc.format_message().rstrip('.')}; see `{where} --help`")
            code = 2
        except UserError as exc:
            _say_error(exc.line())
            code = exc.exit_code
        except typer.Abort:
            _say_error("aborted")
            code = 1
        except BrokenPipeError:  # e.g. `fhemark export | head`: the reader left, nothing is wrong
            try:  # Python's own flush at exit would complain about the closed pipe
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            except (OSError, ValueError, AttributeError):
                pass
            code = 0
        except Exception as exc:  # noqa: BLE001 - the last line of defence
            if os.environ.get("FHEMARK_DEBUG"):
                raise
            _say_error(f"internal error: {type(exc).__name__}: {exc}; this is a bug in fhemark: "
                       "rerun with FHEMARK_DEBUG=1 to see where, and report it")
            code = INTERNAL_ERROR
        code = code if isinstance(code, int) else 0
        if standalone_mode:
            sys.exit(code)
        return code


app = typer.Typer(add_completion=False, no_args_is_help=True, cls=_Commands, pretty_exceptions_enable=False,
                  help="Benchmark FHE libraries and schemes on this machine, with checked results.")


def _version(value: bool) -> None:
    if value:
        from .. import __version__
        console.print(f"fhemark {__version__}", markup=False, highlight=False)
        raise typer.Exit(0)


@app.callback()
def _main(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="print fhemark's version and exit")) -> None:
    """Benchmark FHE libraries and schemes on this machine, with checked results."""
# Wide enough for the result table when output goes to a file or a CI log.
console = Console(width=None if sys.stdout.isatty() else 200)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 200)


# What every --run option accepts (Store.resolve_run).
RUN_REF = "a run id or unique prefix, a baseline name, `latest` or `previous`"


def fail(exc: UserError) -> None:
    raise exc


def output(path: Path, option: str) -> Path:
    """An output file the user named: its folder must exist (checked before any work is done)."""
    if path.is_dir():
        raise UserError(f"{option} {path}: is a folder", f"give {option} a file path, e.g. {path / 'out.json'}")
    parent = path.parent
    if not parent.is_dir():
        raise UserError(f"{option} {path}: folder '{parent}' does not exist", "create it first or choose another path")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UserError(f"{option} {path}: folder '{parent}' is not writable", "choose another path")
    return path


def write_out(path: Path, text: str, option: str) -> None:
    """Write under a temporary name in the same folder, then rename: never half a file."""
    output(path, option)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:40]}.", dir=path.parent)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except OSError as exc:
        raise UserError(f"{option} {path}: writing failed ({exc.strerror or exc})", "free some space or choose another path")


def open_store(db: Path | None, write: bool = False) -> Store:
    """An existing store, checked to be one before anything touches it; read-only unless `write`."""
    path = db or default_db()
    if not path.exists() and not path.is_symlink():
        raise UserError(f"store {path} does not exist", "run `fhemark run` first or pass --db")
    return Store(path, readonly=not write)


def store_to_write(path: Path, option: str) -> Path:
    """A store the command will write (given by `option`), checked before any work as opening it checks
    it (store.sqlite.inspect), but not opened: nothing is created or written. The fix names `option`."""
    inspect(path, option)
    return path


class LaterStore:
    """A store opened where the work begins (`open()`) or at its first use, not before: a command
    refused after its checks (choose's `impossible`) leaves no file. Its path is checked first
    (store_to_write); opening it at the work's start refuses, before the work, what only opening finds
    (a read-only or damaged file)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._store: Store | None = None

    def open(self) -> Store:
        if self._store is None:
            self._store = Store(self.path)
        return self._store

    def __getattr__(self, name: str) -> Any:  # what this object lacks: the store's own methods and fields
        if name.startswith("__") or name == "_store":  # not set yet (a copy being made): no store to open
            raise AttributeError(name)
        return getattr(self.open(), name)


def main() -> None:
    app()
