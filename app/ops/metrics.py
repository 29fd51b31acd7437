"""Prometheus metrics: request latency (in-process histogram) and, read from the database
at scrape time, jobs by state, job durations and queue depth (so every API replica reports
the same, whole-service figures)."""

from __future__ import annotations

import os

from prometheus_client import CollectorRegistry, Histogram, generate_latest, multiprocess
from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.utils import floatToGoString
from sqlalchemy import text

REGISTRY = CollectorRegistry()
REQUEST_LATENCY = Histogram("veil_request_duration_seconds", "HTTP request latency",
                            ["method", "route", "status"], registry=REGISTRY,
                            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
_DURATION_BUCKETS = (0.1, 0.5, 1, 2, 5, 10, 30, 60, 300, 900, float("inf"))


class JobCollector:
    def collect(self):
        from app.db import transaction
        from app.jobs import repository

        try:
            with transaction() as session:
                counts = repository.counts_by_status(session)
                durations = repository.durations(session)
                depth = session.execute(text(
                    "SELECT count(*) FROM procrastinate_jobs WHERE status = 'todo'")).scalar_one()
        except Exception:
            return
        jobs = GaugeMetricFamily("veil_jobs", "jobs by state", labels=["status"])
        for status in ("queued", "running", "succeeded", "failed", "cancelled"):
            jobs.add_metric([status], counts.get(status, 0))
        yield jobs
        yield GaugeMetricFamily("veil_queue_depth", "queue entries waiting for a worker", value=depth)
        hist = HistogramMetricFamily("veil_job_duration_seconds",
                                     "run time of the last 1000 succeeded jobs", labels=["method"])
        by_method: dict[str, list[float]] = {}
        for method, seconds in durations:
            by_method.setdefault(method, []).append(seconds)
        for method, values in sorted(by_method.items()):
            # the exposition format's bounds: "+Inf" (str() gave "inf"), "1.0" as the request histogram's
            buckets = [(floatToGoString(b), sum(1 for v in values if v <= b)) for b in _DURATION_BUCKETS]
            hist.add_metric([method], buckets, sum(values))
        yield hist


JOBS = JobCollector()
REGISTRY.register(JOBS)


def render() -> bytes:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):  # several API processes (`veil serve`)
        merged = CollectorRegistry()
        multiprocess.MultiProcessCollector(merged)
        merged.register(JOBS)
        return generate_latest(merged)
    return generate_latest(REGISTRY)
