"""The run context a method receives: randomness, progress reporting, cooperative cancel."""

from __future__ import annotations

from collections.abc import Callable

from app.privacy.rng import SecureRandom


class Cancelled(Exception):
    """Raised inside a method when the job was cancelled."""


class RunContext:
    def __init__(
        self,
        rng: SecureRandom | None = None,
        on_progress: Callable[[float, str], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
        memory_limit_bytes: int | None = None,
    ) -> None:
        self.rng = rng if rng is not None else SecureRandom()
        self._on_progress = on_progress
        self._should_stop = should_stop
        # The memory the run may use (a job's limit), or None: a method whose need it can
        # foresee from its input refuses at once, naming what to change, rather than being
        # stopped at the limit with nothing said.
        self.memory_limit_bytes = memory_limit_bytes

    @property
    def test_mode(self) -> bool:
        return not self.rng.is_private

    def progress(self, fraction: float, stage: str) -> None:
        """Report progress in [0, 1] and the current stage; raises Cancelled if asked to stop."""
        if self._on_progress is not None:
            self._on_progress(min(max(float(fraction), 0.0), 1.0), stage)
        self.check_cancelled()

    def check_cancelled(self) -> None:
        if self._should_stop is not None and self._should_stop():
            raise Cancelled("job cancelled")
