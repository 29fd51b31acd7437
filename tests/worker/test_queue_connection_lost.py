"""PostgreSQL going away under procrastinate's own loop ends the worker in one log line and exit
status 1 (`veil serve` restarts it), not a traceback (the outage test counts tracebacks)."""

from __future__ import annotations

import logging

import pytest
from procrastinate.exceptions import ConnectorException

from app.worker import main


class _LostQueue:
    def run_worker(self, **_):
        try:
            raise OSError("server closed the connection unexpectedly")
        except OSError as exc:
            raise ConnectorException() from exc


def test_a_lost_queue_connection_exits_the_worker_in_one_line(monkeypatch, caplog, database):
    monkeypatch.setattr(main.runner, "warm_up", lambda: None)
    monkeypatch.setattr(main.queue, "worker_app", lambda: _LostQueue())
    with caplog.at_level(logging.ERROR, logger="veil.worker"), pytest.raises(SystemExit) as ended:
        main.run()
    assert ended.value.code == 1
    assert [r.getMessage() for r in caplog.records if r.name == "veil.worker"] == [
        "queue connection lost (OSError): the worker exits to be restarted"]
