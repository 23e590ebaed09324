"""Random draws, one named stream per purpose (Gavel's per-purpose seeds).

Each purpose (a job stream's arrivals, its durations, node launch times, spot interruptions, requeue
jitter) draws from its own generator, seeded from the run's seed and the purpose's name. Two variants
of a scenario (the static baseline, a `--without` what-if) therefore see the same arrivals and
durations whatever else they draw, and adding a stream leaves the others' draws as they are.
"""

from __future__ import annotations

import hashlib
import random

ARRIVALS = "arrivals"
DURATIONS = "durations"
LAUNCHES = "launches"
INTERRUPTIONS = "interruptions"
REQUEUE_JITTER = "requeue-jitter"
TRACE_INFLATION = "trace-inflation"


def stream_seed(seed: int, purpose: str) -> int:
    """A 64-bit seed from the run's seed and the purpose's name; stable across Python versions and processes
    (hash() is salted per process, sha256 is not)."""
    digest = hashlib.sha256(f"{seed}/{purpose}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


class Streams:
    """The run's generators, made on first use and kept by name."""

    def __init__(self, seed: int):
        self.seed = seed
        self._streams: dict[str, random.Random] = {}

    def __call__(self, purpose: str, name: str = "") -> random.Random:
        key = f"{purpose}:{name}" if name else purpose
        stream = self._streams.get(key)
        if stream is None:
            stream = self._streams[key] = random.Random(stream_seed(self.seed, key))
        return stream
