"""Simulated time: seconds since the workload's start on a SimPy clock, and the wall-clock time they stand for.

Every timer is a SimPy timeout with a plain callback (no process per object): a trace of tens of
thousands of tasks stays within memory and time. Each object carries a `generation` its timers check,
so an evicted workload's old timers do nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import simpy


class _Halt(Exception):
    """Raised by `Clock.halt` inside an action: the run stops there."""


class Clock:
    def __init__(self, start: datetime, end: float):
        self.env = simpy.Environment()
        self.start = start
        self.end = end
        self.events = 0
        self.halted_at: float | None = None  # when an action stopped the run before its end

    @property
    def now(self) -> float:
        return float(self.env.now)

    def wall(self, at: float | None = None) -> datetime:
        return self.start + timedelta(seconds=self.now if at is None else at)

    def call(self, delay: float, action: Callable[..., Any], *args: Any) -> None:
        """Run `action(*args)` after `delay` simulated seconds (nothing past the end)."""
        if self.now + delay > self.end:
            return
        timeout = self.env.timeout(delay)
        timeout.callbacks.append(lambda _event: self._run(action, args))

    def _run(self, action: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.events += 1
        action(*args)

    def every(self, period: float, action: Callable[[], Any], first: float = 0.0) -> None:
        """Run `action()` at `first` and then every `period` seconds until the end."""

        def tick() -> None:
            action()
            self.call(period, tick)

        self.call(first, tick)

    def halt(self) -> None:
        """Stop the run now, from inside an action: nothing scheduled after this action runs."""
        raise _Halt()

    def run(self) -> None:
        try:
            self.env.run(until=self.end)
        except _Halt:
            self.halted_at = self.now
