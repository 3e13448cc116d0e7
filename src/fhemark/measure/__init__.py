"""Execute a plan: the only code that talks to drivers, entered through one door, `measure`
(session.py). runner.py picks the slice that runs next, sampler.py measures and checks it,
throughput.py runs k processes at once, records.py turns what was measured into the export
contract's records."""

from .session import Measured, measure

__all__ = ["Measured", "measure"]
