"""Two uploads of one column's hierarchy at once (race acceptance check: 6 uploads of two
hierarchies for Adult's education at once, 10 rounds; in 1 the hierarchy in force was not the
one the trail's last dataset.hierarchy_set event names). The trail is ordered by (txn, id) and
an upload's transaction id was taken when it locked the dataset row, before it checked the
file against the data: an upload that began first but finished its check last overwrote the
other while its event stayed listed before it. The race is made deterministic by holding the
first upload in its check until the second has finished or waits."""

from __future__ import annotations

import hashlib
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from sqlalchemy import text

from app.db import transaction
from tests.support.api import auth, upload

A = "x;letters;*\ny;letters;*\n"
B = "x;first;*\ny;second;*\n"


def _someone_waits_on_a_lock() -> bool:
    with transaction() as s:
        return s.execute(text("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                              "AND datname = current_database()")).scalar_one() > 0


def _position(event) -> tuple[int, int]:
    txn, event_id = event["position"].split(".")
    return int(txn), int(event_id)


def test_the_last_hierarchy_event_in_the_trail_names_the_hierarchy_in_force(client, owner, monkeypatch):
    from app.privacy.anonymity import hierarchies

    ds = upload(client, owner, b"v\nx\ny\nx\n", "h.csv").json()
    url = f"/v1/datasets/{ds['id']}/hierarchies/v"
    headers = {**auth(owner), "Content-Type": "text/csv"}
    in_check, second_done = threading.Event(), threading.Event()
    real_findings = hierarchies.hierarchy_findings

    def findings(hierarchy, values, *rest):
        if not in_check.is_set():  # the first upload: wait in its check for the second one
            in_check.set()
            deadline = time.monotonic() + 30
            while not second_done.is_set() and not _someone_waits_on_a_lock():
                assert time.monotonic() < deadline, "the second upload neither finished nor waited"
                time.sleep(0.02)
        return real_findings(hierarchy, values, *rest)

    monkeypatch.setattr(hierarchies, "hierarchy_findings", findings)
    with ThreadPoolExecutor(1) as pool:
        first = pool.submit(client.put, url, content=A.encode(), headers=headers)
        assert in_check.wait(30)
        second = client.put(url, content=B.encode(), headers=headers)
        second_done.set()
        assert first.result(timeout=30).status_code == 200 and second.status_code == 200
    in_force = client.get(url, headers=auth(owner)).text
    events = client.get("/v1/audit", headers=auth(owner),
                        params={"dataset_id": ds["id"], "action": "dataset.hierarchy_set"}).json()["items"]
    assert len(events) == 2
    last = max(events, key=_position)
    assert last["details"]["sha256"] == hashlib.sha256(in_force.encode()).hexdigest()
