"""`veil worker`: one worker process (app/worker/main.py), at the priority VEIL_WORKER_NICE gives
it and its jobs."""

from __future__ import annotations

import logging

from app.config import get_settings
from app.database_ready import database_ready


def cmd_worker(_args) -> None:
    from app import logging_setup
    from app.worker.main import lower_priority, run

    lower_priority(get_settings().worker_nice)  # before the forkserver starts: jobs inherit it

    logging_setup.configure(get_settings().log_level)
    logging.getLogger("pgserver").setLevel(logging.WARNING)
    # as an owner: the embedded PostgreSQL stops when this worker exits as its last user (one
    # started without `veil serve` left it running); under `veil serve` the serve outlives it
    database_ready(owner=True)
    run()
