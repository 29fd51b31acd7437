"""Prometheus metrics: request latency (in-process histogram) and, read from the database
at scrape time, jobs by state, finished jobs and their run times, and queue depth (so every
API replica reports the same, whole-service figures)."""

from __future__ import annotations

import os
from itertools import groupby

from prometheus_client import CollectorRegistry, Histogram, generate_latest, multiprocess
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.utils import floatToGoString

REGISTRY = CollectorRegistry()
REQUEST_LATENCY = Histogram("veil_request_duration_seconds", "HTTP request latency",
                            ["method", "route", "status"], registry=REGISTRY,
                            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))


class JobCollector:
    def collect(self):
        from sqlalchemy.exc import TimeoutError as PoolTimeout

        from app.db import DATABASE_AWAY, transaction
        from app.jobs import repository

        try:
            with transaction() as session:
                counts = repository.counts_by_status(session)
                outcomes = repository.outcome_counts(session)
                depth = repository.queue_depth(session)
        except (*DATABASE_AWAY, PoolTimeout):
            # the database is away (lost, refused, timed out, or no pooled connection free): say
            # so, rather than drop the job figures silently. Any other exception is a defect
            # here, not an outage: it propagates (a 500, logged with its traceback).
            yield GaugeMetricFamily("veil_database_up", "1 when the database answered this scrape", value=0)
            return
        yield GaugeMetricFamily("veil_database_up", "1 when the database answered this scrape", value=1)
        jobs = GaugeMetricFamily("veil_jobs", "jobs by state", labels=["status"])
        for status in ("queued", "running", "succeeded", "failed", "cancelled"):
            jobs.add_metric([status], counts.get(status, 0))
        yield jobs
        yield GaugeMetricFamily("veil_queue_depth", "queue entries waiting for a worker", value=depth)
        yield from job_outcome_metrics(outcomes, repository.DURATION_BOUNDS)


def job_outcome_metrics(outcomes, bounds):
    """Counters that only grow: finishes by method and outcome, and a histogram of the run
    time (first start to finish) of those that ran. ``outcomes``: (method, status, le, jobs,
    seconds) rows, le = -inf for a job that never ran."""
    finished = CounterMetricFamily("veil_jobs_finished", "jobs that reached a terminal state, "
                                   "by method and outcome (a retried job counts each time)",
                                   labels=["method", "status"])
    hist = HistogramMetricFamily("veil_job_duration_seconds", "run time of finished jobs, from "
                                 "their first start to their finish", labels=["method", "status"])
    for (method, status), rows in groupby(outcomes, key=lambda r: (r[0], r[1])):
        by_le = {le: (n, sec) for _, _, le, n, sec in rows}
        finished.add_metric([method, status], sum(n for n, _ in by_le.values()))
        ran = {le: v for le, v in by_le.items() if le != float("-inf")}
        if not ran:
            continue
        cumulative, buckets = 0, []
        for bound in sorted({*bounds, float("inf"), *ran}):  # bounds counted under older code too
            cumulative += ran.get(bound, (0, 0.0))[0]
            # the exposition format's bounds: "+Inf" (str() gave "inf"), "1.0" as the request histogram's
            buckets.append((floatToGoString(bound), cumulative))
        hist.add_metric([method, status], buckets, sum(sec for _, sec in ran.values()))
    yield finished
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
