"""Settings from the environment (VEIL_* variables, and DATABASE_URL)."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

# Upload slots per API process the connection pool has room for (app/db.py): a larger
# VEIL_MAX_CONCURRENT_UPLOADS was accepted and silently served as this many.
MAX_UPLOAD_SLOTS = 8
# Every duration is at most 30 days: a stall timeout of 1e13 s is no PostgreSQL interval (each
# worker exited at its first reap) and a heartbeat or grace period past threading.TIMEOUT_MAX
# (~292 years) an OverflowError; for a limit, 30 days is as good as none.
MAX_SECONDS = 30 * 24 * 3600


class Settings(BaseSettings):
    # allow_inf_nan=False: "inf" (or 1e400) passed every `gt=0`, then the reaper's SQL interval
    # refused it and the workers exited in a loop; an infinite limit or grace period is no limit
    model_config = SettingsConfigDict(env_prefix="VEIL_", extra="ignore", allow_inf_nan=False)

    # None = embedded mode: start our own PostgreSQL (pgserver) under data_dir.
    database_url: str | None = Field(None, validation_alias="DATABASE_URL")
    data_dir: Path = Path(".veil")
    host: str = "127.0.0.1"
    port: int = Field(8000, ge=1, le=65535)
    dev_api_key: str | None = None
    # /metrics counts every tenant's jobs by method and outcome: with a token set, a scraper must
    # send it as a bearer token. Checked without the database, so an outage still shows
    # veil_database_up 0. Unset: /metrics is public (keep the port off shared networks).
    metrics_token: str | None = Field(None, min_length=16, max_length=256, pattern=r"^[\x21-\x7e]+$")
    # the commit stamped on releases (app/version.py; default: the git checkout's). Bounded: a
    # release's code_version column holds 64 characters, and a longer one failed every release
    commit: str | None = Field(None, max_length=40, pattern=r"^[0-9A-Za-z][0-9A-Za-z._-]*$")
    workers: int = Field(2, ge=0)  # worker processes started by `veil serve` in embedded mode
    # API processes (uvicorn workers) behind one port: one process uses at most one core.
    api_processes: int = Field(2, ge=1, le=64)
    # Worker processes (and their job processes) run at this lower CPU priority so that a
    # backlog of CPU-heavy jobs cannot starve the API (Linux nice, 0-19).
    worker_nice: int = Field(10, ge=0, le=19)

    # Upload and parsing limits (each answered by a clear 4xx).
    max_upload_bytes: int = Field(512 * 1024 * 1024, ge=1)
    max_rows: int = Field(5_000_000, ge=1)
    max_columns: int = Field(2_000, ge=1)
    max_cell_length: int = Field(65_536, ge=1)
    # categories declared over all of a dataset's columns (a schema of 1.2 million held an API
    # process at 1 GB for 11 s, was echoed back, and weighed on every list page)
    max_declared_categories: int = Field(100_000, ge=1)
    max_hierarchy_bytes: int = Field(16 * 1024 * 1024, ge=1)
    # Uploads stream in without holding a database connection or a general request slot; at
    # most this many per API process receive at once, and one whose body stalls this long
    # between two chunks is answered 408 (a slow client cannot pin the service).
    max_concurrent_uploads: int = Field(4, ge=1, le=MAX_UPLOAD_SLOTS)
    body_idle_timeout_s: float = Field(30.0, gt=0, le=MAX_SECONDS)
    # An upload is read in a child process (app/datasets/isolated.py), killed when it needs
    # more memory than this (413) or takes longer (422): the API process keeps none of it.
    upload_memory_limit_mb: int = Field(2048, ge=1)
    upload_parse_time_limit_s: float = Field(300.0, gt=0, le=MAX_SECONDS)

    # Jobs.
    job_time_limit_s: float = Field(900.0, gt=0, le=MAX_SECONDS)
    job_memory_limit_mb: int = Field(4096, ge=1)
    max_attempts: int = Field(3, ge=1)
    stall_timeout_s: float = Field(30.0, gt=0, le=MAX_SECONDS)
    heartbeat_interval_s: float = Field(2.0, gt=0, le=MAX_SECONDS)
    # A worker told to stop (SIGTERM/SIGINT) takes no new job and lets a running one finish for
    # this long; then it stops the job's process and queues the job again without using one of
    # its attempts. `veil serve` waits this long plus 5 s before it kills a worker.
    worker_shutdown_grace_s: float = Field(8.0, ge=0, le=MAX_SECONDS)
    tenant_max_active_jobs: int = Field(50, ge=1)

    # Reproducible test mode: seeds accepted, releases marked "not private".
    test_mode: bool = False

    log_level: str = "INFO"

    @field_validator("database_url")
    @classmethod
    def _postgres_url(cls, value: str | None) -> str | None:
        if value and not value.startswith(("postgresql://", "postgres://", "postgresql+psycopg://")):
            raise ValueError("must be a postgresql:// URL")
        if value:
            from sqlalchemy.engine import make_url

            try:  # a port that is not a number was a traceback from the first connection
                make_url(value)
            except ValueError:  # never the URL in the message: it holds the password
                raise ValueError("cannot be read as postgresql://user:password@host:port/database "
                                 "(the port must be a number)") from None
        return value or None  # set but empty: embedded mode, as when unset

    @field_validator("data_dir", "host", mode="before")
    @classmethod
    def _not_empty(cls, value):
        # set but empty: a data directory of '.' (PostgreSQL and the development key in whatever
        # directory the command ran in), a host of '' (uvicorn listens on every interface)
        if isinstance(value, str) and not value.strip():
            raise ValueError("must not be empty (unset it for the default)")
        return value

    @field_validator("dev_api_key")
    @classmethod
    def _key_shape(cls, value: str | None) -> str | None:
        # a key is found by its prefix (app.auth.service): any other string was refused only
        # once `veil serve` had migrated, in a traceback
        if value and not re.fullmatch(r"veil_[^_]{1,16}_.+", value, re.DOTALL):
            raise ValueError("must look like veil_<prefix>_<secret>: a prefix of 1 to 16 characters "
                             "without '_', then a secret")
        return value or None

    @field_validator("metrics_token", "commit", mode="before")
    @classmethod
    def _empty_is_none(cls, value):
        # compose passes ${VEIL_METRICS_TOKEN:-}, the image an unset build argument VEIL_COMMIT:
        # set but empty = not set
        return value or None

    @field_validator("log_level")
    @classmethod
    def _known_level(cls, value: str) -> str:
        # logging takes upper-case names only: "info" or a typo failed later, in a traceback
        level = value.strip().upper()
        if level not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
            raise ValueError("must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL")
        return level

    @model_validator(mode="after")
    def _heartbeat_inside_stall_timeout(self) -> Settings:
        # a job heartbeats every half interval: a stall timeout within one interval would
        # requeue jobs whose worker is alive and well
        if self.stall_timeout_s <= self.heartbeat_interval_s:
            raise ValueError(f"VEIL_STALL_TIMEOUT_S ({self.stall_timeout_s:g}) must be longer than "
                             f"VEIL_HEARTBEAT_INTERVAL_S ({self.heartbeat_interval_s:g})")
        return self


@lru_cache
def get_settings() -> Settings:
    return Settings()
