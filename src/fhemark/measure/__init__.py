"""Execute a plan: the only code that talks to drivers, entered through one door, `measure`
(session.py). runner.py picks the slice that runs next; each job's mode measures its slices
(mode.py: latency in latency.py, the depth probe in depth.py, k processes at once in
throughput.py), every request through checked.py, which checks every output; records.py turns
what was measured into the export contract's records."""

from .session import Measured, measure

__all__ = ["Measured", "measure"]
