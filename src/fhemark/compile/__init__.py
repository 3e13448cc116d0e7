"""Compilers as rows beside the hand-driven libraries: a workload's cleartext meaning handed to a
compiler (HEIR: mlir.py emits its input, heir.py runs it and builds what it emits), then measured
like a library (measure.py), every output checked against the same cleartext replay."""
