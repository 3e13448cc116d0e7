"""The client side of a Python driver's smoke test (drivers/<lib>/smoke_test.py): starts the
driver from its cached virtual environment and speaks protocol v2 to it, one line each way.
Standalone (numpy only): smoke tests run without fhemark installed."""

from __future__ import annotations

import json
import os
import subprocess

import numpy as np
from jsonl_driver import vec_in, vec_out

CACHE = os.environ.get("FHEMARK_CACHE") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "fhemark")


def venv_python(name: str) -> str:
    """The interpreter of the driver's virtual environment in the build cache (venv-<name>)."""
    return os.path.join(CACHE, f"venv-{name}", "bin", "python")


class Driver:
    def __init__(self, python: str, folder: str):
        env = dict(os.environ, FHEMARK_THREADS=os.environ.get("FHEMARK_THREADS", "1"))
        self.p = subprocess.Popen([python, "driver.py"], cwd=folder, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True, env=env)
        self.i = 0

    def req(self, **kw):
        self.i += 1
        kw.setdefault("v", 2)
        kw.update(id=self.i)
        self.p.stdin.write(json.dumps(kw) + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError("driver died")
        rep = json.loads(line)
        assert rep["id"] == self.i and rep["v"] == 2, rep
        return rep

    def close(self):
        r = self.req(type="shutdown")
        assert r["ok"], r
        assert self.p.wait(timeout=30) == 0


def enc(a) -> dict:
    """A vector as the protocol carries it: integers as i64, anything else as f64."""
    return vec_out(np.asarray(a).astype(np.int64) if np.asarray(a).dtype.kind in "iu" else np.asarray(a, dtype=np.float64))


dec = vec_in


FAILS: list = []
PASSES: list = []


def check(name: str, ok: bool, detail="") -> None:
    """One smoke check, printed as it passes or fails; main() exits 1 when any FAILS."""
    (PASSES if ok else FAILS).append(name)
    print("%-44s %s %s" % (name, "ok" if ok else "FAIL", str(detail)[:200]), flush=True)


def step(out: str, op: str, *args, **attrs) -> dict:
    d = {"out": out, "op": op, "args": list(args)}
    if attrs:
        d["attrs"] = attrs
    return d
