"""Application workloads written once over the protocol's primitives (see workloads.py)."""

from .workloads import app

__all__ = ["app"]
