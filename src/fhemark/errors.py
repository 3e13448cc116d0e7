"""Errors a user can act on: one line naming the problem and the fix, exit status 2; and the one
way a validation error becomes the field and the words of such a line."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError


class UserError(Exception):
    """Bad input (suite, parameters, flags): shown as one line, never a traceback."""

    exit_code = 2

    def __init__(self, problem: str, fix: str | None = None):
        self.problem = problem
        self.fix = fix
        super().__init__(self.line())

    def line(self) -> str:
        return f"{self.problem}; {self.fix}" if self.fix else self.problem


class StoreError(UserError):
    """The store cannot be used: not an fhemark store, read-only, full, locked or damaged. One line
    like any bad input; whatever was committed before stays in it."""


# Error kinds of protocol v1 (PROTOCOL.md). Drivers send the first four;
# the orchestrator assigns the rest (workload_error: a user's computation failed to build or
# replay at a job's parameter set, in fhemark, before or after the library ran).
DRIVER_KINDS = ("unsupported", "invalid_params", "insecure_params", "internal")
SUPERVISOR_KINDS = ("timeout", "crashed", "out_of_memory", "wrong_result", "workload_error")
ERROR_KINDS = DRIVER_KINDS + SUPERVISOR_KINDS


class DriverError(Exception):
    """A job-level failure; recorded with its kind, the run goes on."""

    def __init__(self, kind: str, message: str, refusal: dict | None = None):
        assert kind in ERROR_KINDS, kind
        self.kind = kind
        self.message = message
        self.refusal = refusal  # what a search reads: {"kind": ..., its numbers} (PROTOCOL.md "Refusals")
        super().__init__(f"{kind}: {message}")


def field_error(exc: ValidationError, top: str = "(top level)") -> tuple[str, str]:
    """The field (dotted, with [i] indexes; `top` for the model itself) and the message of the most
    useful of a validation error's errors."""
    err = _first(exc.errors())
    return _loc(err) or top, _msg(err)


def _loc(err: dict) -> str:
    out = ""
    for x in err["loc"]:
        if isinstance(x, int):
            out += f"[{x}]"
        elif "[" in x or "-" in x or x in ("str", "int", "float", "dict", "list"):
            continue  # a union member's type, not a field
        else:
            out += f".{x}" if out else str(x)
    return out


def _msg(err: dict) -> str:
    msg = err["msg"].removeprefix("Value error, ")
    if "input" in err and err["type"] not in ("missing", "extra_forbidden", "value_error") \
            and not isinstance(err["input"], (dict, list)):
        value = repr(err["input"])
        value = value if len(value) <= 60 else value[:56] + "...'"
        return f"{value}: {msg}" if not msg.startswith(str(err["input"])) else msg
    return "unknown field" if err["type"] == "extra_forbidden" else msg


def _first(errors: list[dict]) -> dict:
    """The most useful of pydantic's errors: an unknown field first (often a misspelt one, which then
    also reads as a missing one); for a union (a list or 'all'), the list member's."""
    for e in errors:
        if e["type"] == "extra_forbidden":
            return e
    for e in errors:
        if not any(isinstance(x, str) and x.startswith("literal[") for x in e["loc"]):
            return e
    return errors[0]
