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

    def within(self, rng: SecureRandom, start: float | None = None, end: float | None = None,
               stage: str = "") -> RunContext:
        """The context of a run inside this one (an experiment's release or fit): its own
        randomness, this run's cancel and memory limit, and — given the share [start, end] of
        this run's progress it takes — its progress reported there, its stage after ``stage``.
        The inner runs had a bare context: a step of experiment_rfka on the whole Adult table
        showed 0 % for over five minutes and a cancel waited for the step to end."""
        report = None
        if self._on_progress is not None and start is not None and end is not None:
            outer = self._on_progress

            def report(fraction: float, inner_stage: str) -> None:
                outer(start + (end - start) * fraction, f"{stage}: {inner_stage}" if stage else inner_stage)
        return RunContext(rng=rng, on_progress=report, should_stop=self._should_stop,
                          memory_limit_bytes=self.memory_limit_bytes)
