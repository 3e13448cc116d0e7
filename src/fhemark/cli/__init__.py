"""The `fhemark` command line: application.py holds the app and its one-line error handling; each
other module adds its commands to it."""

from . import advice, compare, lists, results, run
from .application import app, main

__all__ = ["app", "main", "advice", "compare", "lists", "results", "run"]
