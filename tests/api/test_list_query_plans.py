"""Every list a dashboard pages through reads its page from an index, in the list's order: no
sort of every row of the tenant (or dataset, release) on each page, no scan of the table.

Found by the dashboard acceptance check: with 45,200 releases (23,000 of one tenant) a page of
/v1/releases was a sequential scan and a top-N sort of all of them (23 ms in PostgreSQL, 35 ms
served, growing with the tenant's history, the same for the last page as for the first); the
report, model and dataset lists, the lists filtered by dataset or release, the admins' lists
across tenants, a dataset's audit trail and its ledger read the same way, and each refund
decision (`holds_debit`) read the whole ledger of every tenant. The audit trail filtered by
`action` or `actor` alone walked the tenant's events in order, filtering (a rare action among
300,000 events: 26–38 ms; left in session 15's note, migration 0009).

The plans are taken with sequential scans and sorts priced out (``enable_seqscan`` and
``enable_sort`` off): on the few rows of a test database PostgreSQL rightly prefers them, but a
plan that still holds one has no index to read the page from."""

from __future__ import annotations

import re
import uuid
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy import event, text
from sqlalchemy.orm import Session

from app.audit import repository as audit
from app.budgets import repository as budgets
from app.datasets import repository as datasets
from app.db import get_engine
from app.jobs import repository as jobs
from app.models import repository as models
from app.releases import repository as releases
from app.reports import repository as reports

T = "plans"
D = uuid.uuid4()
R = uuid.uuid4()
J = uuid.uuid4()
AFTER = (datetime.now(timezone.utc) - timedelta(days=1), uuid.uuid4())  # a page within the jobs below
NONE: dict[str, Any] = {}


def _nodes(plan: dict[str, Any]):
    yield plan
    for child in plan.get("Plans", []):
        yield from _nodes(child)


# Ten tenants' jobs over many datasets and releases, analysed (rolled back with the test's
# transaction): on empty tables the tenant's index, read backwards and filtered, costs the same
# as the dataset's, which is the one that stays short when the tenant's history grows.
_MANY_JOBS = text(
    "INSERT INTO jobs (id, tenant, created_by, method, kind, dataset_id, release_id, params, status, "
    "max_attempts, created_at) SELECT gen_random_uuid(), CASE WHEN n % 10 = 1 THEN :t ELSE 'other' || n % 10 END, "
    "gen_random_uuid(), 'errph', 'release', "
    "CASE WHEN n = 1 THEN :d ELSE md5((n % 50)::text)::uuid END, "
    "CASE WHEN n = 1 THEN :r ELSE md5((n % 1000)::text)::uuid END, '{}', 'succeeded', 3, "
    "now() - n * interval '1 minute' FROM generate_series(1, 5000) AS n")


# Ten tenants' audit events, one action and one key in a hundred: with few events (or stale
# statistics after other tests) the tenant's (txn, id) index, read in order and filtered, is
# priced like the action's or the key's own; with a history it is not.
_MANY_EVENTS = text(
    "INSERT INTO audit_events (tenant, actor, action, subject_type, subject_id, details) "
    "SELECT CASE WHEN n % 10 = 1 THEN :t ELSE 'other' || n % 10 END, "
    "CASE WHEN n % 100 = 1 THEN 'k1' ELSE 'k' || n % 97 + 2 END, "
    "CASE WHEN n % 100 = 1 THEN 'key.created' ELSE 'job.submitted' END, 'job', n::text, '{}' "
    "FROM generate_series(1, 20000) AS n")


def _plan(run, many_jobs: bool = False, many_events: bool = False) -> list[dict[str, Any]]:
    """The plan of the last statement ``run(session)`` executes."""
    engine = get_engine()
    seen: list[tuple[str, Any]] = []

    def capture(conn, cursor, statement, parameters, context, executemany):
        seen.append((statement, parameters))

    with Session(engine) as session:
        session.execute(text("SET LOCAL enable_seqscan = off"))
        session.execute(text("SET LOCAL enable_sort = off"))
        if many_jobs:
            session.execute(_MANY_JOBS, {"t": T, "d": D, "r": R})
            session.execute(text("ANALYZE jobs"))
        if many_events:
            session.execute(_MANY_EVENTS, {"t": T})
            session.execute(text("ANALYZE audit_events"))
        event.listen(engine, "before_cursor_execute", capture)
        try:
            run(session)
        finally:
            event.remove(engine, "before_cursor_execute", capture)
        statement, parameters = seen[-1]
        (plan,), = session.connection().exec_driver_sql("EXPLAIN (FORMAT JSON) " + statement,
                                                        parameters).fetchall()
        session.rollback()
    return list(_nodes(plan[0]["Plan"]))


def _page(**filters):
    return {"after": None, "limit": 50, **filters}


CASES = {
    # name: (what runs the repository's query, columns the index must be searched by: a
    # dataset's, release's or job's rows; a tenant's may be read from the index of every tenant's
    # when the tenant holds most of them, the page still in order)
    "datasets": (lambda s: datasets.list_page(s, T, **_page()), []),
    "datasets, a later page": (lambda s: datasets.list_page(s, T, after=AFTER, limit=50), []),
    "jobs": (lambda s: jobs.list_page(s, tenant=T, status=None, method=None, dataset_id=None, **_page()), []),
    "jobs, a later page": (lambda s: jobs.list_page(s, tenant=T, status=None, method=None, dataset_id=None,
                                                    after=AFTER, limit=50), []),
    "jobs of a dataset": (lambda s: jobs.list_page(s, tenant=T, status=None, method=None, dataset_id=D,
                                                   **_page()), ["dataset_id"]),
    "jobs on a release": (lambda s: jobs.list_page(s, tenant=T, status=None, method=None, dataset_id=None,
                                                   release_id=R, **_page()), ["release_id"]),
    "jobs of every tenant (admins)": (lambda s: jobs.list_page(s, tenant=None, status=None, method=None,
                                                               dataset_id=None, **_page()), []),
    "releases": (lambda s: releases.list_page(s, T, dataset_id=None, method=None, **_page()), []),
    "releases, a later page": (lambda s: releases.list_page(s, T, dataset_id=None, method=None,
                                                            after=AFTER, limit=50), []),
    "releases of a dataset": (lambda s: releases.list_page(s, T, dataset_id=D, method=None, **_page()),
                              ["dataset_id"]),
    "reports": (lambda s: reports.list_page(s, T, dataset_id=None, release_id=None, kind=None, **_page()),
                []),
    "reports, as an analyst": (lambda s: reports.list_page(s, T, dataset_id=None, release_id=None, kind=None,
                                                           raw_data=False, **_page()), []),
    "reports of a release": (lambda s: reports.list_page(s, T, dataset_id=None, release_id=R, kind=None,
                                                         **_page()), ["release_id"]),
    "reports of a dataset": (lambda s: reports.list_page(s, T, dataset_id=D, release_id=None, kind=None,
                                                         **_page()), ["dataset_id"]),
    "models": (lambda s: models.list_page(s, T, release_id=None, method=None, **_page()), []),
    "models of a release": (lambda s: models.list_page(s, T, release_id=R, method=None, **_page()),
                            ["release_id"]),
    "audit trail": (lambda s: audit.list_events(s, tenant=T, dataset_id=None, release_id=None, actor=None,
                                                action=None, since=None, until=None, after=(5, 7), limit=50,
                                                settled=True), []),
    "audit trail of a dataset": (lambda s: audit.list_events(s, tenant=T, dataset_id=D, release_id=None,
                                                             actor=None, action=None, since=None, until=None,
                                                             after=None, limit=50), ["dataset_id"]),
    "audit trail of a release": (lambda s: audit.list_events(s, tenant=T, dataset_id=None, release_id=R,
                                                             actor=None, action=None, since=None, until=None,
                                                             after=None, limit=50), ["release_id"]),
    "audit trail of one action": (lambda s: audit.list_events(s, tenant=T, dataset_id=None, release_id=None,
                                                              actor=None, action="key.created", since=None,
                                                              until=None, after=None, limit=50), ["action"]),
    "audit trail of one action, every tenant (admins)": (lambda s: audit.list_events(
        s, tenant=None, dataset_id=None, release_id=None, actor=None, action="key.created", since=None, until=None,
        after=None, limit=50), ["action"]),
    "audit trail of one key": (lambda s: audit.list_events(s, tenant=T, dataset_id=None, release_id=None,
                                                           actor="k1", action=None, since=None, until=None,
                                                           after=None, limit=50), ["actor"]),
    "audit trail of every tenant (admins)": (lambda s: audit.list_events(
        s, tenant=None, dataset_id=None, release_id=None, actor=None, action=None, since=None, until=None,
        after=None, limit=50), []),
    "budget's latest ledger entries": (lambda s: budgets.latest_entries(s, D, 100), ["dataset_id"]),
    "a page of the ledger": (lambda s: budgets.entries_after(s, D, 10, 200), ["dataset_id"]),
    "whether the ledger holds a job's debit": (lambda s: budgets.holds_debit(s, J), ["job_id"]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_list_page_is_read_from_an_index_in_order(database, name):
    run, searched_by = CASES[name]
    # every audit trail case over the many events: the release's (and the dataset's) with the
    # statistics other tests left (few events, none of this tenant) once planned on the tenant's
    # (txn, id) index filtered by release_id — a full-suite run, not this file alone
    nodes = _plan(run, many_jobs=name.startswith("jobs"), many_events=name.startswith("audit trail of"))
    kinds = [n["Node Type"] for n in nodes]
    assert not {"Seq Scan", "Sort", "Incremental Sort"} & set(kinds), (name, kinds)
    conditions = " ".join(n.get("Index Cond", "") for n in nodes)
    for column in searched_by:
        assert re.search(rf"\b{column}\b", conditions), (name, column, [(n["Node Type"], n.get("Index Name"),
                                                             n.get("Index Cond"), n.get("Filter"))
                                                            for n in nodes])
