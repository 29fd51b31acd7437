"""Budget races through HTTP against a real server (uvicorn in its own process, its own thread
pool and connection pool): concurrent job submissions on one dataset never overspend its ε
budget, and exactly as many are accepted as fit.

errph on one binary column costs ε = ln(1 + 2·p0/(1−p0)); p0 is chosen so that the charged ε
(computed by the method's own pricing function) is at most the target, so that 10 × 0.1 fits
a budget of 1.0 exactly and 2 × 0.6 does not.

`make test` runs 20 trials of the two-request race and one 50-request race; `make stress`
runs 1,000 trials and five 50-request races."""

from __future__ import annotations

import collections
import math
import os
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal

import pytest

from app.datasets.schema import column_infos

BINARY = b"b,n\nx,1\ny,2\nx,3\n"


def _charged(columns: list[dict], p0: float) -> float:
    from app.privacy import registry

    spec = registry.get("errph")
    return spec.epsilon_cost(spec.params(p0=p0, columns=["b"]), column_infos(columns))


def p0_for(columns: list[dict], target: float) -> tuple[float, float]:
    """A p0 whose charged ε is ≤ target and within 10⁻¹² of it (and the charge). Bisection: the
    charge is the realized-threshold bound, a few 2⁻³² above the formula, so stepping down from
    the formula's p0 one float at a time would take millions of steps."""
    def fits(p0: float) -> bool:
        return Decimal(repr(_charged(columns, p0))) <= Decimal(repr(target))

    lo, hi = 0.0, (math.exp(target) - 1) / (math.exp(target) + 1)
    if fits(hi):
        return hi, _charged(columns, hi)
    while hi - lo > 1e-13:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo, _charged(columns, lo)


class Racer:
    """n threads, each with its own keep-alive HTTP connection to the server, released at
    once by a barrier for every race."""

    def __init__(self, live, n: int) -> None:
        self.live, self.n = live, n
        self.pool = ThreadPoolExecutor(max_workers=n)
        self.local = threading.local()

    def _client(self):
        if getattr(self.local, "client", None) is None:
            self.local.client = self.live.client(timeout=60)
        return self.local.client

    def race(self, headers: dict, body: dict) -> list[int]:
        barrier = threading.Barrier(self.n)

        def one(_):
            c = self._client()
            c.get("/healthz")  # the connection is open before the barrier
            barrier.wait()
            return c.post("/v1/jobs", json=body, headers=headers)

        return [r for r in self.pool.map(one, range(self.n))]

    def close(self) -> None:
        self.pool.shutdown()


def _auth(headers: dict) -> dict:
    return {"Authorization": headers["Authorization"]}


def _dataset(c, headers, total: float) -> dict:
    ds = c.post("/v1/datasets", headers=_auth(headers), files={"file": ("b.csv", BINARY)}).json()
    r = c.put(f"/v1/datasets/{ds['id']}/budget", headers=_auth(headers), json={"epsilon_total": total})
    assert r.status_code == 200, r.text
    return ds


def run_pair_trials(live, make_key, trials: int) -> dict:
    """Two concurrent 0.6 requests on a 1.0 budget, ``trials`` times: exactly one accepted."""
    headers = make_key("owner")
    racer = Racer(live, 2)
    outcomes = collections.Counter()
    started = time.monotonic()
    with live.client(timeout=60) as c:
        first = _dataset(c, headers, 1.0)
        p0, eps = p0_for(_full_columns(first["id"], headers), 0.6)
        assert eps <= 0.6 and 2 * eps > 1.0
        for trial in range(trials):
            ds = first if trial == 0 else _dataset(c, headers, 1.0)
            body = {"dataset_id": ds["id"], "method": "errph", "params": {"p0": p0, "columns": ["b"]}}
            responses = racer.race(_auth(headers), body)
            statuses = sorted(r.status_code for r in responses)
            outcomes[tuple(statuses)] += 1
            assert statuses == [202, 409], (trial, [r.text[:200] for r in responses])
            assert "budget" in next(r for r in responses if r.status_code == 409).json()["detail"]
            budget = c.get(f"/v1/datasets/{ds['id']}/budget", headers=_auth(headers)).json()
            assert Decimal(repr(budget["epsilon_spent"])) == Decimal(repr(eps)), (trial, budget)
            assert [e["kind"] for e in budget["entries"]] == ["debit"], (trial, budget)
            accepted = next(r for r in responses if r.status_code == 202).json()
            # keep the tenant under its active-job limit (no worker runs here): cancel, refunded
            assert c.post(f"/v1/jobs/{accepted['id']}/cancel", headers=_auth(headers)).status_code == 202
    racer.close()
    return {"trials": trials, "outcomes": {str(k): v for k, v in outcomes.items()},
            "seconds": round(time.monotonic() - started, 1)}


def _full_columns(dataset_id: str, headers: dict) -> list[dict]:
    """The stored column schema (with categories), as the service prices a job from it."""
    from app.datasets import repository
    from app.db import transaction

    with transaction() as s:
        return repository.get(s, headers["X-Tenant"], uuid.UUID(dataset_id))["columns"]


def run_fifty(live, make_key, repetitions: int) -> list[dict]:
    """50 concurrent 0.1 requests on a 1.0 budget: exactly 10 accepted."""
    racer = Racer(live, 50)
    out = []
    with live.client(timeout=60) as c:
        for _ in range(repetitions):
            headers = make_key("owner")  # a fresh tenant: 50 submissions stay under its job limit
            ds = _dataset(c, headers, 1.0)
            p0, eps = p0_for(_full_columns(ds["id"], headers), 0.1)
            assert 10 * Decimal(repr(eps)) <= 1 < 11 * Decimal(repr(eps))
            body = {"dataset_id": ds["id"], "method": "errph", "params": {"p0": p0, "columns": ["b"]}}
            statuses = collections.Counter(r.status_code for r in racer.race(_auth(headers), body))
            budget = c.get(f"/v1/datasets/{ds['id']}/budget", headers=_auth(headers)).json()
            assert statuses == {202: 10, 409: 40}, statuses
            assert Decimal(repr(budget["epsilon_spent"])) == 10 * Decimal(repr(eps)) <= 1, budget
            assert len(budget["entries"]) == 10
            out.append(dict(statuses))
    racer.close()
    return out


def test_budget_race_pairs_small(live, make_key):
    print("\n2 × 0.6 on 1.0:", run_pair_trials(live, make_key, trials=20))


def test_budget_race_fifty_small(live, make_key):
    offset = live.log_offset()
    print("\n50 × 0.1 on 1.0:", run_fifty(live, make_key, repetitions=1))
    assert not live.server_errors(offset)


@pytest.mark.long
def test_budget_race_pairs_1000(live, make_key):
    offset = live.log_offset()
    result = run_pair_trials(live, make_key, trials=int(os.environ.get("VEIL_RACE_TRIALS", "1000")))
    print("\n2 × 0.6 on 1.0:", result)
    assert result["outcomes"] == {"(202, 409)": result["trials"]}
    assert not live.server_errors(offset)


@pytest.mark.long
def test_budget_race_fifty_repeated(live, make_key):
    offset = live.log_offset()
    print("\n50 × 0.1 on 1.0, 5 times:", run_fifty(live, make_key, repetitions=5))
    assert not live.server_errors(offset)


def test_tenant_active_job_cap_holds_under_a_race(live, make_key):
    """60 concurrent submissions by a fresh tenant whose cap is 50 (no worker runs them):
    exactly 50 accepted, the other 10 get 429 — the cap is read under a per-tenant lock."""
    from app.config import get_settings

    cap = get_settings().tenant_max_active_jobs
    headers = make_key("owner")
    racer = Racer(live, cap + 10)
    with live.client(timeout=60) as c:
        ds = _dataset(c, headers, 1000.0)
        body = {"dataset_id": ds["id"], "method": "errph", "params": {"p0": 0.05, "columns": ["b"]}}
        responses = racer.race(_auth(headers), body)
        statuses = collections.Counter(r.status_code for r in responses)
        assert statuses == {202: cap, 429: 10}, statuses
        refused = [r for r in responses if r.status_code == 429]
        assert all("queued or running jobs" in r.json()["detail"] for r in refused)
        # A client that backs off needs to know for how long (RFC 6585 §4 allows Retry-After).
        assert {r.headers.get("retry-after") for r in refused} == {"5"}
        active = c.get("/v1/jobs", params={"status": "queued", "limit": 200}, headers=_auth(headers)).json()
        assert len(active["items"]) == cap
    racer.close()


async def _slow_app(scope, receive, send):
    """An ASGI app that answers 200 after 0.3 s."""
    import asyncio

    await asyncio.sleep(0.3)
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


def test_in_flight_limit_queues_a_burst_then_answers_503():
    """The limit that keeps a burst from starving the threads (app/middleware.py): requests
    beyond it wait in the event loop, and get a 503 problem+json only after ``wait_s``."""
    import asyncio

    import httpx

    from app.middleware import InFlightLimit

    async def burst(wait_s: float) -> list[int]:
        app = InFlightLimit(_slow_app, limit=2, wait_s=wait_s)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
            responses = await asyncio.gather(*(c.get("/v1/x") for _ in range(6)))
        for r in responses:
            if r.status_code == 503:
                assert r.headers["content-type"] == "application/problem+json" and r.headers["retry-after"]
        return sorted(r.status_code for r in responses)

    assert asyncio.run(burst(wait_s=5)) == [200] * 6  # queued, then served two at a time
    assert asyncio.run(burst(wait_s=0.1)) == [200, 200, 503, 503, 503, 503]


def test_schema_changes_share_the_upload_slots():
    """A schema change runs a child under the upload memory limit (a784fd3) but took a general
    slot: 30 at once on different datasets could each hold that limit, where the docs say one
    API process holds at most upload_limit such children (session review)."""
    import asyncio

    import httpx

    from app.middleware import InFlightLimit

    async def burst() -> tuple[list[int], list[int]]:
        app = InFlightLimit(_slow_app, limit=10, upload_limit=1, wait_s=0.1)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
            schema = await asyncio.gather(*(c.put(f"/v1/datasets/{i}/schema", json={}) for i in range(3)))
            other = await asyncio.gather(*(c.put(f"/v1/datasets/{i}/budget", json={}) for i in range(3)))
        return sorted(r.status_code for r in schema), sorted(r.status_code for r in other)

    schema, other = asyncio.run(burst())
    assert schema == [200, 503, 503]  # one upload slot
    assert other == [200, 200, 200]  # the general slots
