"""The ε budget ledger and the append-only audit trail."""

from __future__ import annotations

import json
import math
import threading
import uuid

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from app.db import transaction
from tests.support.api import assert_problem, auth, submit, upload

# errph on one binary column: ε = ln(1 + 2·p0/(1-p0)); p0 chosen so that ε = 0.6.
P0_FOR_06 = (math.exp(0.6) - 1) / (math.exp(0.6) + 1)


def _binary_dataset(client, headers):
    return upload(client, headers, b"b,n\nx,1\ny,2\nx,3\n", "b.csv").json()


def test_debit_at_acceptance_and_409_when_exhausted(client, owner):
    ds = _binary_dataset(client, owner)
    r = client.put(f"/v1/datasets/{ds['id']}/budget", headers=auth(owner), json={"epsilon_total": 1.0})
    assert r.json()["epsilon_remaining"] == 1.0
    job = submit(client, owner, "errph", {"p0": P0_FOR_06, "columns": ["b"]}, dataset_id=ds["id"])
    assert job.status_code == 202
    assert job.json()["epsilon"] == pytest.approx(0.6, abs=1e-9)
    budget = client.get(f"/v1/datasets/{ds['id']}/budget", headers=auth(owner)).json()
    assert budget["epsilon_spent"] == pytest.approx(0.6) and budget["epsilon_remaining"] == pytest.approx(0.4)
    assert [e["kind"] for e in budget["entries"]] == ["debit"]
    assert budget["entries"][0]["job_id"] == job.json()["id"]
    second = submit(client, owner, "errph", {"p0": P0_FOR_06, "columns": ["b"]}, dataset_id=ds["id"])
    assert_problem(second, 409, "budget")
    assert_problem(client.put(f"/v1/datasets/{ds['id']}/budget", headers=auth(owner),
                              json={"epsilon_total": 0.5}), 409, "already spent")
    # cancelling the queued job refunds it: nothing ran, no noise was drawn
    client.post(f"/v1/jobs/{job.json()['id']}/cancel", headers=auth(owner))
    budget = client.get(f"/v1/datasets/{ds['id']}/budget", headers=auth(owner)).json()
    assert budget["epsilon_spent"] == pytest.approx(0.0)
    assert [e["kind"] for e in budget["entries"]] == ["debit", "refund"]


def test_a_refusal_shows_enough_digits_to_tell_the_need_from_what_is_left(client, owner):
    """ε = 2.0000001 against 2 left read "the job needs ε = 2 but only 2 … remains" (the #eps
    acceptance check): the two figures now carry the digits that tell them apart."""
    ds = _binary_dataset(client, owner)
    client.put(f"/v1/datasets/{ds['id']}/budget", headers=auth(owner), json={"epsilon_total": 2.0})
    over = submit(client, owner, "icahdp", {"epsilon": 2.0000001, "columns": ["n"], "bounds": {"n": [0, 4]}},
                  dataset_id=ds["id"])
    assert_problem(over, 409, "needs ε = 2.0000001 but only 2 of")
    job = submit(client, owner, "icahdp", {"epsilon": 1.25, "columns": ["n"], "bounds": {"n": [0, 4]}},
                 dataset_id=ds["id"])
    assert job.status_code == 202, job.text
    assert_problem(client.put(f"/v1/datasets/{ds['id']}/budget", headers=auth(owner),
                              json={"epsilon_total": 1.2499999}), 409, "ε = 1.25 is already spent; "
                   "the total cannot be set below it (1.2499999 asked)")


def test_a_column_with_nothing_to_randomize_is_refused_before_the_debit(client, owner):
    """An all-missing column kept missing (it used to divide by zero while pricing: a 500) or a
    constant column: 422 naming it at submission, and nothing debited."""
    rows = b"a,c,b\n" + b"".join(b",k,%s\n" % (b"xy"[i % 2:i % 2 + 1]) for i in range(30))
    ds = upload(client, owner, rows, "empty.csv").json()
    for params in ({"columns": ["a"], "missing": "preserve"}, {"columns": ["a"]}, {"columns": ["c"]}):
        column = params["columns"][0]
        assert_problem(submit(client, owner, "errph", params, dataset_id=ds["id"]), 422,
                       f"column '{column}'", "fewer than 2 values; nothing to randomize; declare its categories")
    # the default selection (every categorical column) met the constant one: say how to skip it
    assert_problem(submit(client, owner, "errph", {}, dataset_id=ds["id"]), 422,
                   "column 'a' has fewer than 2 values", "or name the columns to randomize in 'columns'")
    budget = client.get(f"/v1/datasets/{ds['id']}/budget", headers=auth(owner)).json()
    assert budget["epsilon_spent"] == 0 and budget["entries"] == []


def test_non_finite_numbers_and_a_deleted_dataset(client, owner):
    """JSON's NaN / Infinity passed every bound check (NaN compares false) and failed at the
    database; a budget set on a deleted dataset said "ε = inf is already spent" (409), then
    was refused (404)."""
    ds = _binary_dataset(client, owner)
    url = f"/v1/datasets/{ds['id']}/budget"
    headers = {**auth(owner), "Content-Type": "application/json"}

    def job(params):  # json.dumps writes NaN / Infinity, as a careless client would
        return client.post("/v1/jobs", headers=headers, content=json.dumps(
            {"method": "errph", "dataset_id": ds["id"], "params": params}))

    for bad in (float("nan"), float("inf")):
        assert_problem(client.put(url, headers=headers, content=json.dumps({"epsilon_total": bad})),
                       422, "finite")
        assert_problem(job({"p0": bad, "columns": ["b"]}), 422, "finite")
    assert_problem(job({"p": {"b": [0.25, float("nan")]}, "columns": ["b"]}), 422, "finite")
    assert client.get(url, headers=auth(owner)).json()["entries"] == []
    assert client.delete(f"/v1/datasets/{ds['id']}", headers=auth(owner)).status_code == 204
    # DP jobs on its releases are still charged to it: its owner can still set it (it was a
    # 404 while a 409 told them to raise it; lifecycle acceptance check)
    after = client.put(url, headers=auth(owner), json={"epsilon_total": 5})
    assert after.status_code == 200 and after.json()["epsilon_total"] == 5
    assert client.get(url, headers=auth(owner)).json()["epsilon_total"] == 5


def test_concurrent_submissions_never_overspend(client, owner):
    from app.auth.service import authenticate
    from app.jobs import service
    from app.jobs.schemas import JobRequest
    from pydantic import TypeAdapter

    adapter = TypeAdapter(JobRequest)
    with transaction() as s:
        principal = authenticate(s, owner["Authorization"])
    for trial in range(20):
        ds = _binary_dataset(client, owner)
        client.put(f"/v1/datasets/{ds['id']}/budget", headers=auth(owner), json={"epsilon_total": 1.0})
        req = adapter.validate_python({"method": "errph", "dataset_id": ds["id"],
                                       "params": {"p0": P0_FOR_06, "columns": ["b"]}})
        outcomes: list[str] = []
        barrier = threading.Barrier(2)

        def attempt():
            barrier.wait()
            try:
                with transaction() as s:
                    service.submit(s, principal, req, None)
                outcomes.append("accepted")
            except Exception as exc:
                outcomes.append(type(exc).__name__)

        threads = [threading.Thread(target=attempt) for _ in range(2)]
        [t.start() for t in threads]
        [t.join() for t in threads]
        assert sorted(outcomes) == ["BudgetExhausted", "accepted"], (trial, outcomes)
        spent = client.get(f"/v1/datasets/{ds['id']}/budget", headers=auth(owner)).json()["epsilon_spent"]
        assert spent == pytest.approx(0.6)


def test_audit_trail_records_and_is_append_only(client, owner):
    ds = upload(client, owner, b"a,b\n1,x\n2,y\n", "a.csv").json()
    submit(client, owner, "errph", {}, dataset_id=ds["id"])
    items = client.get("/v1/audit", headers=auth(owner), params={"dataset_id": ds["id"]}).json()["items"]
    actions = [e["action"] for e in items]
    assert actions[:2] == ["dataset.uploaded", "job.submitted"]
    assert items[0]["details"]["sha256"] == ds["sha256"]
    for statement in ("UPDATE audit_events SET action = 'x'", "DELETE FROM audit_events",
                      "TRUNCATE audit_events"):
        with pytest.raises(DBAPIError, match="append-only"):
            with transaction() as s:
                s.execute(text(statement))


def test_infinite_epsilon_is_refused_under_a_cap_and_reported_as_infinity(client, owner):
    """warner's whole-record flip over two columns has no finite ε."""
    ds = upload(client, owner, b"a,b\nx,u\ny,v\nx,v\n", "w.csv").json()
    params = {"whole_record": True, "p": 0.8, "columns": ["a", "b"]}
    r = submit(client, owner, "warner", params, dataset_id=ds["id"])
    assert r.status_code == 202 and r.json()["epsilon"] == "Infinity"
    budget = client.get(f"/v1/datasets/{ds['id']}/budget", headers=auth(owner)).json()
    assert budget["epsilon_spent"] == "Infinity"
    assert_problem(client.put(f"/v1/datasets/{ds['id']}/budget", headers=auth(owner),
                              json={"epsilon_total": 100}), 409, "already spent")
    capped = upload(client, owner, b"a,b\nx,u\ny,v\nx,v\n", "w2.csv").json()
    client.put(f"/v1/datasets/{capped['id']}/budget", headers=auth(owner), json={"epsilon_total": 100})
    assert_problem(submit(client, owner, "warner", params, dataset_id=capped["id"]), 409, "budget")


def test_budget_shows_the_latest_entries_and_the_ledger_pages_through_all(client, owner):
    """A dataset with a long ledger: the budget view carries the latest 100 entries and the
    count; /budget/entries pages through every entry, oldest first, none twice."""
    import uuid
    from decimal import Decimal

    from app.budgets import repository

    ds = _binary_dataset(client, owner)
    job_ids = [uuid.uuid4() for _ in range(120)]
    with transaction() as s:
        repository.ensure_row(s, uuid.UUID(ds["id"]))
        for i, job in enumerate(job_ids):
            repository.add_entry(s, dataset_id=uuid.UUID(ds["id"]), job_id=job, method="errph",
                                 kind="debit", epsilon=Decimal(i + 1) / 1000, actor=uuid.uuid4())
    budget = client.get(f"/v1/datasets/{ds['id']}/budget", headers=auth(owner)).json()
    assert budget["entry_count"] == 120
    assert [e["job_id"] for e in budget["entries"]] == [str(j) for j in job_ids[20:]]
    seen, cursor, pages = [], None, 0
    while True:
        params = {"limit": 50, **({"cursor": cursor} if cursor else {})}
        page = client.get(f"/v1/datasets/{ds['id']}/budget/entries", params=params, headers=auth(owner)).json()
        seen += [e["job_id"] for e in page["items"]]
        pages += 1
        cursor = page["next"]
        if cursor is None:
            break
    assert seen == [str(j) for j in job_ids] and pages == 3
    halves = client.get(f"/v1/datasets/{ds['id']}/budget/entries", params={"limit": 60}, headers=auth(owner)).json()
    rest = client.get(f"/v1/datasets/{ds['id']}/budget/entries", params={"limit": 60, "cursor": halves["next"]},
                      headers=auth(owner)).json()
    assert len(rest["items"]) == 60 and rest["next"] is None  # an exactly full last page ends the trail
    assert_problem(client.get(f"/v1/datasets/{ds['id']}/budget/entries", params={"cursor": "x"},
                              headers=auth(owner)), 422, "cursor")


def _fail_as_invalid_input_with_refund(job: dict) -> None:
    """What the worker does with a job its method refused before drawing randomness."""
    from decimal import Decimal
    import uuid

    from app.budgets import service as budgets

    with transaction() as s:
        s.execute(text("UPDATE jobs SET status = 'failed', attempt = attempt + 1, finished_at = now(), "
                       "error = '{\"type\": \"invalid_input\", \"message\": \"m\"}' WHERE id = :j"),
                  {"j": job["id"]})
        created_by = s.execute(text("SELECT created_by FROM jobs WHERE id = :j"), {"j": job["id"]}).scalar_one()
        budgets.refund(s, dataset_id=uuid.UUID(job["dataset_id"]), job_id=uuid.UUID(job["id"]),
                       method=job["method"], epsilon=Decimal(repr(job["epsilon"])), actor=created_by)


def test_retrying_a_refunded_job_debits_its_epsilon_again(client, owner, make_key):
    """A job refused as invalid input before drawing randomness is refunded; an admin's retry
    ran it again without a debit, and each failed rerun refunded once more: the spent figure
    fell below zero (found by the API audit: three retries, spent -2.2 on a cap of 10)."""
    admin = make_key("admin")
    ds = _binary_dataset(client, owner)
    budget_url = f"/v1/datasets/{ds['id']}/budget"
    client.put(budget_url, headers=auth(owner), json={"epsilon_total": 1.0})
    job = submit(client, owner, "errph", {"p0": P0_FOR_06, "columns": ["b"]}, dataset_id=ds["id"]).json()
    _fail_as_invalid_input_with_refund(job)
    assert client.get(budget_url, headers=auth(owner)).json()["epsilon_spent"] == pytest.approx(0.0)

    retried = client.post(f"/v1/jobs/{job['id']}/retry", headers=auth(admin))
    assert retried.status_code == 202 and retried.json()["status"] == "queued", retried.text
    budget = client.get(budget_url, headers=auth(owner)).json()
    assert budget["epsilon_spent"] == pytest.approx(0.6)
    assert [e["kind"] for e in budget["entries"]] == ["debit", "refund", "debit"]
    assert budget["entries"][-1]["epsilon"] == pytest.approx(0.6)
    events = client.get("/v1/audit", headers=auth(owner), params={"action": "job.retried"}).json()["items"]
    assert [e["details"] for e in events if e["subject"] == job["id"]] == [{"epsilon_debited": pytest.approx(0.6)}]

    # the rerun is refused again and refunded: net zero, never below
    _fail_as_invalid_input_with_refund(job)
    assert client.get(budget_url, headers=auth(owner)).json()["epsilon_spent"] == pytest.approx(0.0)

    # a retry the budget cannot pay for is refused, and the job stays failed
    other = submit(client, owner, "errph", {"p0": P0_FOR_06, "columns": ["b"]}, dataset_id=ds["id"])
    assert other.status_code == 202
    assert_problem(client.post(f"/v1/jobs/{job['id']}/retry", headers=auth(admin)), 409, "budget")
    assert client.get(f"/v1/jobs/{job['id']}", headers=auth(owner)).json()["status"] == "failed"
    assert client.get(budget_url, headers=auth(owner)).json()["epsilon_spent"] == pytest.approx(0.6)


def _failed_errph_job(client, owner, ds, error_type: str) -> dict:
    """An accepted errph job marked failed with ``error_type`` (no worker runs in these tests)."""
    job = submit(client, owner, "errph", {"p0": P0_FOR_06, "columns": ["b"]}, dataset_id=ds["id"]).json()
    with transaction() as s:
        s.execute(text("UPDATE jobs SET status = 'failed', finished_at = now(), error = "
                       "jsonb_build_object('type', CAST(:t AS text), 'message', 'm') WHERE id = :j"),
                  {"t": error_type, "j": job["id"]})
    return job


def test_retrying_a_job_that_kept_its_debit_debits_nothing(client, owner, make_key):
    """A failure that is not refunded (its noise may have been drawn) keeps its one debit."""
    admin = make_key("admin")
    ds = _binary_dataset(client, owner)
    job = _failed_errph_job(client, owner, ds, "time_limit")
    assert client.post(f"/v1/jobs/{job['id']}/retry", headers=auth(admin)).status_code == 202
    entries = client.get(f"/v1/datasets/{ds['id']}/budget", headers=auth(owner)).json()["entries"]
    assert [e["kind"] for e in entries] == ["debit"]


def test_a_retry_respects_the_tenants_active_job_cap(client, owner, make_key, monkeypatch):
    """An admin's retry queued the job whatever the tenant already had active: retrying a
    tenant's failed jobs in bulk passed the cap that its own submissions are held to."""
    from app.config import get_settings

    monkeypatch.setattr(get_settings(), "tenant_max_active_jobs", 2)
    admin = make_key("admin")
    ds = _binary_dataset(client, owner)
    job = _failed_errph_job(client, owner, ds, "time_limit")
    active = [submit(client, owner, "errph", {"p0": P0_FOR_06, "columns": ["b"]}, dataset_id=ds["id"])
              for _ in range(2)]
    assert [r.status_code for r in active] == [202, 202]

    refused = client.post(f"/v1/jobs/{job['id']}/retry", headers=auth(admin))
    assert_problem(refused, 429, "2 queued or running jobs")
    assert refused.headers["retry-after"] == "5"
    assert client.get(f"/v1/jobs/{job['id']}", headers=auth(owner)).json()["status"] == "failed"

    assert client.post(f"/v1/jobs/{active[0].json()['id']}/cancel", headers=auth(owner)).status_code == 202
    retried = client.post(f"/v1/jobs/{job['id']}/retry", headers=auth(admin))
    assert retried.status_code == 202 and retried.json()["status"] == "queued", retried.text


def test_a_job_whose_dataset_was_deleted_cannot_be_retried(client, owner, make_key):
    """It would only fail again as input_deleted (the data is purged): 409 naming why."""
    admin = make_key("admin")
    ds = _binary_dataset(client, owner)
    job = _failed_errph_job(client, owner, ds, "input_deleted")
    assert client.delete(f"/v1/datasets/{ds['id']}", headers=auth(owner)).status_code == 204
    assert_problem(client.post(f"/v1/jobs/{job['id']}/retry", headers=auth(admin)), 409,
                   "cannot run again", "was deleted")
    assert client.get(f"/v1/jobs/{job['id']}", headers=auth(owner)).json()["status"] == "failed"


@pytest.mark.parametrize("cursor", ["99999999999999999999", "１２", "-1", "1e3"])
def test_a_cursor_that_no_page_gave_is_named(client, owner, cursor):
    """A cursor past the bigint range reached PostgreSQL and came back as the generic
    'a value in the request cannot be processed'; full-width digits passed `isdigit`."""
    ds = _binary_dataset(client, owner)
    for url in ("/v1/audit", f"/v1/datasets/{ds['id']}/budget/entries"):
        assert_problem(client.get(url, headers=auth(owner), params={"cursor": cursor}), 422,
                       "cursor must be the `next` value")


def test_an_empty_cursor_is_the_first_page_on_every_list(client, owner):
    """`?cursor=` with no value (a URL template before the first `next`) was the first page on
    the keyset lists and a 422 on the audit trail and the ledger (dash acceptance check)."""
    ds = _binary_dataset(client, owner)
    for url in ("/v1/audit", f"/v1/datasets/{ds['id']}/budget/entries", "/v1/jobs", "/v1/releases",
                "/v1/datasets", "/v1/reports", "/v1/models"):
        first = client.get(url, headers=auth(owner), params={"limit": 1})
        empty = client.get(url, headers=auth(owner), params={"limit": 1, "cursor": ""})
        assert empty.status_code == 200, (url, empty.text)
        assert empty.json()["items"] == first.json()["items"], url


@pytest.mark.parametrize("cursor", [f"now_{uuid.uuid4()}", f"today_{uuid.uuid4()}",
                                    f"2026-01-01T00:00:00_{uuid.uuid4()}", "2026-01-01T00:00:00+00:00_x"])
def test_a_time_cursor_that_no_page_gave_is_named(client, owner, cursor):
    """pandas read 'now' and 'today' as times: such a cursor paged from an arbitrary point."""
    for url in ("/v1/jobs", "/v1/releases", "/v1/datasets"):
        assert_problem(client.get(url, headers=auth(owner), params={"cursor": cursor}), 422,
                       "cursor must be the `next` value")


def test_cancelling_a_queued_infinite_job_gives_back_the_infinity(client, owner):
    """An ∞-priced job (mask p = 1) on a dataset without a cap is debited ∞; cancelled while
    queued it is refunded, and spent − ∞ had no value: the budget read answered 500 ever after."""
    ds = upload(client, owner, b"s,t\na,x\nb,y\na,y\n", "inf.csv").json()
    url = f"/v1/datasets/{ds['id']}/budget"
    finite = submit(client, owner, "mask", {"p": 0.9, "columns": ["s"]}, dataset_id=ds["id"]).json()
    raw = submit(client, owner, "mask", {"p": 1.0, "allow_zero_probabilities": True, "columns": ["s"]},
                 dataset_id=ds["id"]).json()
    assert client.get(url, headers=auth(owner)).json()["epsilon_spent"] == "Infinity"
    assert_problem(client.put(url, headers=auth(owner), json={"epsilon_total": 100}), 409,
                   "ε = Infinity (a step of it has no finite privacy bound) is already spent")
    assert client.post(f"/v1/jobs/{raw['id']}/cancel", headers=auth(owner)).status_code == 202
    budget = client.get(url, headers=auth(owner))
    assert budget.status_code == 200, budget.text
    assert budget.json()["epsilon_spent"] == pytest.approx(finite["epsilon"])
    assert [(e["kind"], e["epsilon"]) for e in budget.json()["entries"]][1:] == [
        ("debit", "Infinity"), ("refund", "-Infinity")]
    assert client.put(url, headers=auth(owner), json={"epsilon_total": 100}).status_code == 200
    again = submit(client, owner, "mask", {"p": 0.9, "columns": ["s"]}, dataset_id=ds["id"])
    assert again.status_code == 202
    assert client.get(url, headers=auth(owner)).json()["epsilon_spent"] == pytest.approx(2 * finite["epsilon"])


def test_audit_pages_follow_next_to_the_end_and_no_further(client, make_key):
    key = make_key("owner")
    for i in range(3):
        upload(client, key, b"a,b\n1,2\n", f"trail{i}.csv")
    everything = client.get("/v1/audit", headers=auth(key), params={"limit": 1000}).json()
    assert everything["next"] is None and len(everything["items"]) >= 3
    n = len(everything["items"])
    exact = client.get("/v1/audit", headers=auth(key), params={"limit": n}).json()
    assert len(exact["items"]) == n and exact["next"] is None  # full, and nothing after it
    seen, cursor = [], None
    while True:
        page = client.get("/v1/audit", headers=auth(key),
                          params={"limit": 2, **({"cursor": cursor} if cursor else {})}).json()
        assert page["items"], "a page was promised by `next` and came back empty"
        seen += [e["id"] for e in page["items"]]
        if not (cursor := page["next"]):
            break
    assert seen == [e["id"] for e in everything["items"]]


def test_only_a_private_central_dp_release_of_every_column_makes_later_steps_free():
    from app.jobs.service import covering_dp_release
    from app.privacy.data import SourceRelease

    def release(rid, notion, private=True, epsilon=1.0, unprotected=(), chain=()):
        g = {"notion": notion, "private": private, "epsilon": epsilon, "unprotected_columns": list(unprotected)}
        return SourceRelease(release_id=rid, method="m", params={}, guarantees=g, metadata={}, chain=chain)

    def step(r):
        return {"release_id": r.release_id, "method": "m", "params": {}, "guarantees": r.guarantees,
                "metadata": {}}

    assert covering_dp_release(None) is None
    assert covering_dp_release(release("a", "central_dp")) == "a"
    assert covering_dp_release(release("a", "central_dp", private=False)) is None  # seeded test mode
    assert covering_dp_release(release("a", "central_dp", unprotected=["label"])) is None
    assert covering_dp_release(release("a", "central_dp", epsilon=math.inf)) is None
    assert covering_dp_release(release("a", "local_dp")) is None  # its unprotected columns are raw
    later = release("b", "k_anonymity", chain=(step(release("a", "central_dp")),))
    assert covering_dp_release(later) == "a"  # anything after a DP release stays post-processing
