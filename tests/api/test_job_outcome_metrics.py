"""/metrics counts finished jobs cumulatively: a finish is counted once, in the transaction of
its transition, by method and outcome, with its run time in a histogram. It read the last
1,000 succeeded jobs at each scrape, so its counts went down as old jobs left the window, and
failed or cancelled jobs were not counted at all."""

from __future__ import annotations

import math

from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import text

from app.db import transaction
from app.jobs import repository
from app.ops.metrics import job_outcome_metrics
from tests.support.api import auth, submit, upload


def _samples(client) -> dict[tuple, float]:
    body = client.get("/metrics").text
    out = {}
    for family in text_string_to_metric_families(body):
        if family.name in ("veil_jobs_finished", "veil_job_duration_seconds"):
            for s in family.samples:
                out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def _delta(after, before, name, **labels) -> float:
    key = (name, tuple(sorted(labels.items())))
    return after.get(key, 0) - before.get(key, 0)


def _run_for(job_id: str, seconds: float, *, attempts_used: bool = False) -> None:
    """The job as a worker holds it: running, started ``seconds`` ago (its heartbeat as old)."""
    with transaction() as s:
        s.execute(text("UPDATE jobs SET status = 'running', attempt = CASE WHEN :last THEN max_attempts "
                       "ELSE 1 END, started_at = now() - make_interval(secs => :s), "
                       "heartbeat_at = now() - make_interval(secs => :s) WHERE id = :j"),
                  {"j": job_id, "s": seconds, "last": attempts_used})


def test_every_terminal_transition_is_counted_once_with_its_run_time(client, owner):
    ds = upload(client, owner, b"a,b\n1,x\n2,y\n3,x\n", "m.csv").json()
    ids = [submit(client, owner, "errph", {"p0": 0.5}, dataset_id=ds["id"]).json()["id"] for _ in range(4)]
    before = _samples(client)

    cancelled = client.post(f"/v1/jobs/{ids[0]}/cancel", headers=auth(owner))
    assert cancelled.status_code == 202 and cancelled.json()["status"] == "cancelled"  # never ran
    _run_for(ids[1], 3.0)
    with transaction() as s:
        repository.finish(s, ids[1], "succeeded", stage="done")
    _run_for(ids[2], 700.0, attempts_used=True)  # its worker died on the last attempt
    with transaction() as s:
        assert ids[2] in {str(j["id"]) for j in repository.fail_stalled(s, 600.0)}
    _run_for(ids[3], 1.5)
    try:  # a transition rolled back is not counted
        with transaction() as s:
            repository.finish(s, ids[3], "failed", error={"type": "x", "message": "y"})
            raise RuntimeError("rolled back")
    except RuntimeError:
        pass

    after = _samples(client)
    total = "veil_jobs_finished_total"
    assert _delta(after, before, total, method="errph", status="cancelled") == 1
    assert _delta(after, before, total, method="errph", status="succeeded") == 1
    assert _delta(after, before, total, method="errph", status="failed") == 1
    h = "veil_job_duration_seconds"
    # the cancelled job never ran: no run time of a cancelled errph job was added
    assert _delta(after, before, f"{h}_count", method="errph", status="cancelled") == 0
    # 3 s of run time: in the 5 s bucket and above, not in the 2 s one
    assert _delta(after, before, f"{h}_bucket", method="errph", status="succeeded", le="2.0") == 0
    assert _delta(after, before, f"{h}_bucket", method="errph", status="succeeded", le="5.0") == 1
    assert _delta(after, before, f"{h}_bucket", method="errph", status="succeeded", le="+Inf") == 1
    assert 2.9 < _delta(after, before, f"{h}_sum", method="errph", status="succeeded") < 10
    assert _delta(after, before, f"{h}_bucket", method="errph", status="failed", le="300.0") == 0
    assert _delta(after, before, f"{h}_bucket", method="errph", status="failed", le="900.0") == 1

    # an admin's retry of the failed job, then its success: both finishes stay counted
    with transaction() as s:
        assert repository.requeue_for_retry(s, ids[2]) is not None
    _run_for(ids[2], 0.2)
    with transaction() as s:
        repository.finish(s, ids[2], "succeeded", stage="done")
    again = _samples(client)
    assert _delta(again, before, total, method="errph", status="failed") == 1
    assert _delta(again, before, total, method="errph", status="succeeded") == 2


def test_buckets_are_cumulative_and_keep_bounds_counted_by_older_code():
    rows = [("m", "succeeded", 0.5, 2, 0.6), ("m", "succeeded", 7.0, 1, 6.5),  # 7: a retired bound
            ("m", "succeeded", math.inf, 1, 1000.0), ("m", "cancelled", -math.inf, 3, 0.0)]
    finished, hist = job_outcome_metrics(rows, (0.5, 5, 10))
    assert {tuple(s.labels.values()): s.value for s in finished.samples} == {("m", "succeeded"): 4,
                                                                              ("m", "cancelled"): 3}
    buckets = [(s.labels["le"], s.value) for s in hist.samples if s.name.endswith("_bucket")]
    assert buckets == [("0.5", 2), ("5.0", 2), ("7.0", 3), ("10.0", 3), ("+Inf", 4)]
    count = [s.value for s in hist.samples if s.name.endswith("_count")]
    assert count == [4]  # the cancelled jobs never ran: no histogram of theirs
