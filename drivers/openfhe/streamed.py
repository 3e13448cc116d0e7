"""OpenFHE objects' serializations read through a FIFO, a chunk at a time, never whole in memory.

The driver reports key sizes as the length of their BINARY serialization, and reads the special
primes from a key (the binding says them nowhere else). Made whole in memory (`Serialize`), a 1.3 GB
set of rotation keys stood beside its copy in the library's stream buffer at setup, and the process's
peak was the driver's, not the library's (a 41-digit relinearization key's set peaked at 6.96 GB where
the library's own peak is 3.4). The reader is a process of its own: the binding keeps the GIL while it
writes, so a reader thread in this process would never run and the writer would wait on a full pipe."""

import os
import shutil
import subprocess
import sys
import tempfile
import time

import openfhe as ofhe

VECTOR_COUNT_BYTES = 8  # cereal's binary archive writes a vector's element count as a 64-bit integer

# The reader: every byte counted, the first HEAD kept; its stdout the count (a line) and then those bytes.
_COUNT = """
import sys
head, n, kept = int(sys.argv[2]), 0, bytearray()
with open(sys.argv[1], "rb") as f:
    while data := f.read(1 << 20):
        n += len(data)
        if len(kept) < head:
            kept += data[:head - len(kept)]
sys.stdout.buffer.write(b"%d\\n" % n + bytes(kept))
"""

# The reader of a JSON stream: every {"m": {"v": <modulus>}} it holds, in order (each chunk read with the
# end of the one before it, so a modulus split between two is seen whole), one a line.
_MODULI = r"""
import re, sys
pattern, tail, seen = re.compile(rb'"m"\s*:\s*\{\s*"v"\s*:\s*(\d+)'), b"", []
with open(sys.argv[1], "rb") as f:
    while data := f.read(1 << 20):
        for m in pattern.findall(tail + data):
            if m not in seen:
                seen.append(m)
        tail = data[-200:]
sys.stdout.buffer.write(b"\n".join(seen))
"""


def through_fifo(write, reader):
    """`write(path)` (a binding call that serializes to a file) into a FIFO at `path` that the command
    `reader(path)` reads in a process of its own; (what `write` returned, the reader's stdout)."""
    folder = tempfile.mkdtemp(prefix="fhemark-openfhe-")
    path = os.path.join(folder, "stream")
    try:
        os.mkfifo(path)
        proc = subprocess.Popen(reader(path), stdout=subprocess.PIPE)
        try:
            ok = write(path)
        finally:
            out = let_go(proc, path)
        return ok, out
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def let_go(proc, path):
    """The reader's stdout once it ends. A reader still waiting for a writer (the binding refused the
    object before it opened the file) is given one that opens and closes at once."""
    deadline = time.monotonic() + 600
    while True:
        try:
            return proc.communicate(timeout=0.05)[0]
        except subprocess.TimeoutExpired:
            if time.monotonic() > deadline:
                proc.kill()
                raise
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:  # ENXIO: the reader has not opened the FIFO yet
            pass


def binary(obj, head=0):
    """(the length of `obj`'s BINARY serialization, its first `head` bytes); the length is None where
    the binding would not serialize it. A list (a relinearization key's vector, which SerializeToFile
    does not take) is the sum of its keys' lengths and the vector's own count, as Serialize writes it."""
    if isinstance(obj, list):
        parts = [binary(x, head if i == 0 else 0) for i, x in enumerate(obj)]
        sizes = [n for n, _ in parts]
        total = None if None in sizes else sum(sizes) + VECTOR_COUNT_BYTES
        return total, (parts[0][1] if parts else b"")
    # Counting alone, `wc -c` (a few milliseconds to start, where a Python reader takes 25 per key read)
    reader = (lambda path: [sys.executable, "-c", _COUNT, path, str(head)]) if head else \
        (lambda path: ["sh", "-c", 'exec wc -c < "$0"', path])
    ok, out = through_fifo(lambda path: ofhe.SerializeToFile(path, obj, ofhe.BINARY), reader)
    count, _, kept = out.partition(b"\n")
    return (None if ok is False else int(count)), kept


def json_moduli(obj):
    """Every tower modulus `obj`'s JSON serialization names, in order, each once."""
    _, out = through_fifo(lambda path: ofhe.SerializeToFile(path, obj, ofhe.JSON),
                          lambda path: [sys.executable, "-c", _MODULI, path])
    return [int(m) for m in out.split()]
