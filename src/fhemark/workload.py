"""The public workload API: what a user's workload file imports (`from fhemark.workload import
Uniform, Workload`). It lives in model/workload.py beside the catalog it extends; this name is the
one users write, and stays."""

from .model.workload import Circuit, Constant, Uniform, Workload
from .model.workload_file import load

__all__ = ["Circuit", "Constant", "Uniform", "Workload", "load"]
