"""fhemark: the same FHE workload on every library that can run it, checked and measured."""

__version__ = "0.1.0"
