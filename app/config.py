"""Settings from the environment (VEIL_* variables, and DATABASE_URL)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="VEIL_", extra="ignore")

    # None = embedded mode: start our own PostgreSQL (pgserver) under data_dir.
    database_url: str | None = Field(None, validation_alias="DATABASE_URL")
    data_dir: Path = Path(".veil")
    host: str = "127.0.0.1"
    port: int = 8000
    dev_api_key: str | None = None
    workers: int = 2  # worker processes started by `veil serve` in embedded mode
    # API processes (uvicorn workers) behind one port: one process uses at most one core.
    api_processes: int = Field(2, ge=1, le=64)
    # Worker processes (and their job processes) run at this lower CPU priority so that a
    # backlog of CPU-heavy jobs cannot starve the API (Linux nice, 0-19).
    worker_nice: int = Field(10, ge=0, le=19)

    # Upload and parsing limits (each answered by a clear 4xx).
    max_upload_bytes: int = 512 * 1024 * 1024
    max_rows: int = 5_000_000
    max_columns: int = 2_000
    max_cell_length: int = 65_536
    max_hierarchy_bytes: int = 16 * 1024 * 1024
    # Uploads stream in without holding a database connection or a general request slot; at
    # most this many per API process receive at once, and one whose body stalls this long
    # between two chunks is answered 408 (a slow client cannot pin the service).
    max_concurrent_uploads: int = Field(4, ge=1, le=64)
    body_idle_timeout_s: float = Field(30.0, gt=0)
    # An upload is read in a child process (app/datasets/isolated.py), killed when it needs
    # more memory than this (413) or takes longer (422): the API process keeps none of it.
    upload_memory_limit_mb: int = Field(2048, ge=1)
    upload_parse_time_limit_s: float = Field(300.0, gt=0)

    # Jobs.
    job_time_limit_s: float = 900.0
    job_memory_limit_mb: int = 4096
    max_attempts: int = 3
    stall_timeout_s: float = 30.0
    heartbeat_interval_s: float = 2.0
    tenant_max_active_jobs: int = 50

    # Reproducible test mode: seeds accepted, releases marked "not private".
    test_mode: bool = False

    log_level: str = "INFO"


@lru_cache
def get_settings() -> Settings:
    return Settings()
