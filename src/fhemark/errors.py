"""Errors a user can act on: one line naming the problem and the fix, exit status 2."""


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
# the orchestrator assigns the rest.
DRIVER_KINDS = ("unsupported", "invalid_params", "insecure_params", "internal")
SUPERVISOR_KINDS = ("timeout", "crashed", "out_of_memory", "wrong_result")
ERROR_KINDS = DRIVER_KINDS + SUPERVISOR_KINDS


class DriverError(Exception):
    """A job-level failure; recorded with its kind, the run goes on."""

    def __init__(self, kind: str, message: str):
        assert kind in ERROR_KINDS, kind
        self.kind = kind
        self.message = message
        super().__init__(f"{kind}: {message}")
