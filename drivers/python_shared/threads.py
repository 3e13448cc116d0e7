"""The thread count a Python driver was started with (FHEMARK_THREADS, protocol/PROTOCOL.md),
handed to OpenMP before any library or numpy starts its pool: no numpy here, so a driver can
import this first. A value that is no positive integer counts as 1."""

import os


def wanted() -> int:
    try:
        threads = max(1, int(os.environ.get("FHEMARK_THREADS") or 1))
    except ValueError:
        threads = 1
    os.environ["OMP_NUM_THREADS"] = str(threads)  # read when an OpenMP runtime starts
    return threads
