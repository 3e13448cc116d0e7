"""Application workloads written once over the protocol's primitives (see workloads.py), each a
Workload of the public API (fhemark.workload)."""

from __future__ import annotations


def app(name: str):
    """The ops behind an application name (workloads.app); imported when first asked, because the
    public API the workloads are written in (fhemark.workload) itself imports this package's builder."""
    from .workloads import app as _app
    return _app(name)


__all__ = ["app"]
