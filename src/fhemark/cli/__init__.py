"""The `fhemark` command line: application.py holds the app and its one-line error handling; each
other module adds its commands to it."""

import sys

try:  # importing numpy, matplotlib and the drivers' plumbing takes seconds on a loaded host
    from . import advice, compare, lists, results, run, security
    from .application import app, main
except KeyboardInterrupt:  # Ctrl-C before any command ran: one line, no traceback, nothing stored
    sys.stderr.write("interrupted while starting: nothing ran\n")
    sys.exit(130)

__all__ = ["app", "main", "advice", "compare", "lists", "results", "run", "security"]
