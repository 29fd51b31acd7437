"""Following the audit trail with `cursor` and `settled=true` misses nothing: an event is listed
only once every transaction that began writing before its own has ended, in that order (the
dashboard check of session 9 missed a `job.submitted` that committed after a later event was
already listed)."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.orm import Session

from app.audit.service import record
from app.db import get_engine
from tests.support.api import assert_problem, auth, upload


def _after(client, owner, cursor, settled=True):
    r = client.get("/v1/audit", headers=auth(owner), params={"cursor": cursor, "limit": 1000,
                                                             "settled": settled})
    assert r.status_code == 200, r.text
    return r.json()["items"]


def test_an_event_that_commits_late_is_not_passed_by_a_cursor(client, owner):
    upload(client, owner, b"a\n1\n2\n", "before.csv")
    start = client.get("/v1/audit", headers=auth(owner), params={"limit": 1000}).json()["items"][-1]
    with Session(get_engine()) as late:
        record(late, tenant=owner["X-Tenant"], actor="system", action="budget.set",
               subject_type="dataset", subject_id="late")
        late.flush()  # inserted (its id and transaction taken), not committed
        upload(client, owner, b"a\n1\n2\n", "meanwhile.csv")  # a later event, committed at once
        # listing it now would let a follower's cursor pass the one still to commit
        assert _after(client, owner, start["position"]) == []
        # without settled=true every committed event is listed at once (read your writes)
        assert [e["action"] for e in _after(client, owner, start["position"], settled=False)] == [
            "dataset.uploaded"]
        late.commit()
    events = _after(client, owner, start["position"])
    assert [(e["action"], e["subject"]) for e in events][:1] == [("budget.set", "late")]
    assert [e["action"] for e in events][1:] == ["dataset.uploaded"]
    positions = [tuple(map(int, e["position"].split("."))) for e in events]
    assert positions == sorted(positions)


def test_a_cursor_that_is_not_a_position_is_refused(client, owner):
    for bad in ("1.x", "1.2.3", "-1.2", "-12", f"{2**63}.1", str(2**63)):
        assert_problem(client.get("/v1/audit", headers=auth(owner), params={"cursor": bad}), 422,
                       "cursor must be the `next` value of a previous page")


def test_a_cursor_kept_from_before_positions_resumes_after_its_event(client, owner):
    """Before migration 0003 a page's `next` was its last event's id, and the events written then
    were given txn 0: a follower that kept such a cursor across the upgrade resumes after that
    event (it was refused as not a `next` value — which it was — and the follower was stuck)."""
    with get_engine().begin() as conn:  # two events as an older version wrote them
        old = [conn.execute(text(
            "INSERT INTO audit_events (tenant, actor, action, subject_type, subject_id, details, txn) "
            "VALUES (:tenant, 'system', 'budget.set', 'dataset', :subject, '{}', 0) RETURNING id"),
            {"tenant": owner["X-Tenant"], "subject": subject}).scalar_one() for subject in ("old1", "old2")]
    upload(client, owner, b"a\n1\n2\n", "after.csv")
    events = _after(client, owner, str(old[0]))
    assert (events[0]["subject"], events[0]["position"]) == ("old2", f"0.{old[1]}")
    assert events[-1]["action"] == "dataset.uploaded"
    assert old[0] not in [e["id"] for e in events]
