"""Operations endpoints, the streamed body limit, raw data download, and that a refused
upload leaves nothing behind."""

from __future__ import annotations

import io

import pandas as pd
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from app.db import transaction
from tests.support.api import assert_problem, auth, upload


def test_healthz_readyz_metrics(client):
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    body = ready.json()
    assert body["checks"]["database"] == "ok" and body["checks"]["migrations"] == "ok"
    # no worker runs in the API tests: not ready, and it says why
    assert ready.status_code in (200, 503)
    if ready.status_code == 503:
        assert body["checks"]["workers"] == "no worker heartbeat" and ready.headers["retry-after"] == "2"
    client.get("/v1/methods")
    metrics = client.get("/metrics").text
    assert 'veil_jobs{status="queued"}' in metrics and "veil_queue_depth" in metrics
    assert "veil_database_up 1.0" in metrics
    assert 'veil_request_duration_seconds_count{method="GET",route="/v1/methods",status="200"}' in metrics


def test_readyz_names_the_failing_check_on_a_database_without_veils_schema(client, database):
    """An API pointed at a database nobody migrated answered 503 {"database": "ok"}: the
    heartbeat query failed on the missing table and the one handler for every check filed it
    under "database", which had passed, so the body named no failing check."""
    import os

    from sqlalchemy import create_engine
    from sqlalchemy.engine import make_url

    from app.config import get_settings
    from app.db import reset_caches

    url = make_url(database)
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text("DROP DATABASE IF EXISTS veil_not_migrated"))
        c.execute(text("CREATE DATABASE veil_not_migrated"))
    os.environ["DATABASE_URL"] = url.set(database="veil_not_migrated").render_as_string(hide_password=False)
    get_settings.cache_clear()
    reset_caches()
    try:
        ready = client.get("/readyz")
    finally:
        os.environ["DATABASE_URL"] = database
        get_settings.cache_clear()
        reset_caches()
        with admin.connect() as c:
            c.execute(text("DROP DATABASE IF EXISTS veil_not_migrated"))
        admin.dispose()
    assert ready.status_code == 503
    checks = ready.json()["checks"]
    assert checks["database"] == "ok"
    assert checks["migrations"] == "no Veil schema: run `veil migrate`"
    assert checks["workers"] == "unknown (ProgrammingError)"
    assert client.get("/readyz").json()["checks"]["migrations"] == "ok"  # back on the migrated one


def test_readyz_answers_in_bounded_time_when_the_database_hangs(client, monkeypatch):
    """A PostgreSQL whose processes are stopped (hung, not dead) accepts connections and never
    answers: /readyz hung with it (> 40 s, operator sweep), so a probe without its own timeout
    waited forever and each probe held an API thread. Now it answers 503 after
    READY_TIMEOUT_S (5 s), and while that check still waits the next probes answer at once
    instead of queueing another."""
    import threading
    import time

    from app.ops import repository, router

    resume = threading.Event()
    calls = []

    def hung(session):
        calls.append(1)
        resume.wait(30)

    monkeypatch.setattr(repository, "database_answers", hung)
    monkeypatch.setattr(router, "READY_TIMEOUT_S", 0.5)
    try:
        started = time.monotonic()
        first = client.get("/readyz")
        assert time.monotonic() - started < 5
        assert first.status_code == 503 and first.headers["retry-after"] == "2"
        assert first.json()["checks"] == {"database": "no answer within 0.5 s"}
        started = time.monotonic()
        second = client.get("/readyz")
        assert time.monotonic() - started < 0.5 and second.status_code == 503
        assert second.json()["checks"]["database"].startswith("no answer for ")  # the first check's wait
        assert len(calls) == 1  # one check waits on the database, not one per probe
    finally:
        resume.set()
    time.sleep(0.2)
    monkeypatch.undo()
    assert client.get("/readyz").json()["checks"]["database"] == "ok"


def test_concurrent_probes_of_a_database_that_answers_are_not_refused(client, monkeypatch):
    """Two probes at once (an orchestrator's and a load balancer's, or `veil serve`'s ready line
    and an operator's curl) while the database answers: the second found the first's check
    still running and answered 503 'no answer for 0 s' at once (fc007f3), so a healthy service
    looked not ready. A probe that finds a check running now waits for that check's answer
    (until that check's READY_TIMEOUT_S is up) rather than starting another."""
    import threading
    import time

    from app.ops import repository

    calls = []
    answers = repository.database_answers

    def slow(session):  # a database that answers, in 0.3 s
        calls.append(1)
        time.sleep(0.3)
        answers(session)

    monkeypatch.setattr(repository, "database_answers", slow)
    results = []
    probes = [threading.Thread(target=lambda: results.append(client.get("/readyz"))) for _ in range(2)]
    for probe in probes:
        probe.start()
        time.sleep(0.05)
    for probe in probes:
        probe.join(10)
    assert [r.json()["checks"]["database"] for r in results] == ["ok", "ok"]
    assert len(calls) == 1  # the second probe shared the first one's check


def test_request_id_is_echoed(client):
    r = client.get("/healthz", headers={"X-Request-ID": "abc123"})
    assert r.headers["x-request-id"] == "abc123"


def test_probes_are_logged_below_the_requests_people_read(client, caplog):
    """`veil serve`'s ready line polls /readyz twice a second while it starts (40 INFO lines
    before a newcomer's first request), an orchestrator every few seconds ever after."""
    import logging

    with caplog.at_level(logging.DEBUG, logger="veil.http"):
        client.get("/readyz")
        client.get("/healthz")
        client.get("/v1/methods")
    levels = {r.path: r.levelname for r in caplog.records if r.name == "veil.http"}
    assert levels == {"/readyz": "DEBUG", "/healthz": "DEBUG", "/v1/methods": "INFO"}


def test_a_request_log_line_names_the_tenant_and_key_that_made_it(client, owner, caplog):
    """An operator reading the log could not tell whose request it was (operator sweep): the
    line names the tenant and the key's id (never the key), once the key is known."""
    import json
    import logging

    from app.logging_setup import JsonFormatter

    with transaction() as session:
        key_id = str(session.execute(text("SELECT id FROM api_keys WHERE tenant = :t"),
                                     {"t": owner["X-Tenant"]}).scalar_one())
    with caplog.at_level(logging.INFO, logger="veil.http"):
        client.get("/v1/datasets", headers=auth(owner))
        client.get("/v1/datasets")  # no key: a 401, nobody to name
        client.get("/v1/methods")  # public
    lines = [json.loads(JsonFormatter().format(r)) for r in caplog.records if r.name == "veil.http"]
    assert [(line["status"], line.get("tenant"), line.get("key_id")) for line in lines] == [
        (200, owner["X-Tenant"], key_id), (401, None, None), (200, None, None)]
    assert owner["Authorization"].split()[1] not in caplog.text


def _post_streamed_csv(client, headers, *, chunks: int, lines: int):
    """A dataset upload with no Content-Length: the limit is enforced while the body streams in."""
    def body():
        yield b"--xyz\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.csv\"\r\n\r\n"
        for _ in range(chunks):
            yield b"1,2\n" * lines
        yield b"\r\n--xyz--\r\n"

    return client.post("/v1/datasets", headers={**auth(headers), "Content-Type": "multipart/form-data; boundary=xyz"},
                       content=body())


def test_body_limit_refuses_early_and_keeps_nothing(make_key, monkeypatch):
    from app.config import get_settings
    from app.main import create_app

    monkeypatch.setattr(get_settings(), "max_upload_bytes", 2000)
    small = TestClient(create_app(), raise_server_exceptions=False)
    headers = make_key("owner")
    with transaction() as s:
        before = s.execute(text("SELECT count(*) FROM datasets")).scalar_one()
    big = b"a,b\n" + b"1,2\n" * 2000
    assert_problem(upload(small, headers, big, "big.csv"), 413, "larger than the limit of 2000 bytes")

    assert_problem(_post_streamed_csv(small, headers, chunks=100, lines=50), 413, "limit")
    assert upload(small, headers, b"a,b\n1,2\n", "ok.csv").status_code == 201
    with transaction() as s:
        after = s.execute(text("SELECT count(*) FROM datasets")).scalar_one()
    assert after == before + 1


def test_the_413_says_which_limit_and_what_to_do(make_key, monkeypatch):
    """A 514 MiB CSV got "the request body is larger than the limit of 536870912 bytes": no
    setting named, nothing to do (scale acceptance run). It names the setting and, for a
    dataset, Parquet (Adult's 1,000,000 rows: 103 MiB as CSV, 11 MiB as Parquet)."""
    from app.config import get_settings
    from app.main import create_app

    monkeypatch.setattr(get_settings(), "max_upload_bytes", 2 * 1024 * 1024)
    monkeypatch.setattr(get_settings(), "max_hierarchy_bytes", 1000)
    small = TestClient(create_app(), raise_server_exceptions=False)
    headers = make_key("owner")
    big = b"a,b\n" + b"1,2\n" * 600_000
    body = assert_problem(upload(small, headers, big, "big.csv"), 413,
                          "larger than the limit of 2097152 bytes (2 MiB, VEIL_MAX_UPLOAD_BYTES)", "Parquet")

    assert assert_problem(_post_streamed_csv(small, headers, chunks=600, lines=1000), 413)["detail"] == body["detail"]
    ds = upload(small, headers, b"a,b\n1,x\n2,y\n", "h.csv").json()
    r = small.put(f"/v1/datasets/{ds['id']}/hierarchies/b", content=b"x;*\n" * 300,
                  headers={**auth(headers), "Content-Type": "text/csv"})
    assert_problem(r, 413, "larger than the limit of 1000 bytes (VEIL_MAX_HIERARCHY_BYTES)")


def test_bad_upload_leaves_no_dataset_or_blob(client, owner):
    with transaction() as s:
        before = s.execute(text("SELECT (SELECT count(*) FROM datasets), (SELECT count(*) FROM blob_chunks)")).one()
    assert_problem(upload(client, owner, b"n\n1\n2\n", "x.csv", schema={"n": {"type": "boolean"}}), 422)
    with transaction() as s:
        after = s.execute(text("SELECT (SELECT count(*) FROM datasets), (SELECT count(*) FROM blob_chunks)")).one()
    assert tuple(after) == tuple(before)


def test_owner_downloads_raw_data_and_it_is_audited(client, make_key):
    owner = make_key("owner")
    analyst = make_key("analyst", tenant=owner["X-Tenant"])
    ds = upload(client, owner, b"a,b\n1,x\n2,y\n", "r.csv").json()
    r = client.get(f"/v1/datasets/{ds['id']}/data", headers=auth(owner))
    assert r.status_code == 200
    frame = pd.read_csv(io.BytesIO(r.content))
    assert frame.to_dict("list") == {"a": [1, 2], "b": ["x", "y"]}
    assert_problem(client.get(f"/v1/datasets/{ds['id']}/data", headers=auth(analyst)), 403)
    actions = [e["action"] for e in client.get("/v1/audit", headers=auth(owner),
                                                params={"dataset_id": ds["id"]}).json()["items"]]
    assert "dataset.downloaded" in actions


def test_hierarchy_files_have_their_own_limit(make_key, monkeypatch):
    """VEIL_MAX_HIERARCHY_BYTES was documented and read but never applied: a hierarchy got the
    general 32 MiB (security acceptance check)."""
    from app.config import get_settings
    from app.main import create_app

    monkeypatch.setattr(get_settings(), "max_hierarchy_bytes", 1000)
    small = TestClient(create_app(), raise_server_exceptions=False)
    headers = make_key("owner")
    ds = upload(small, headers, b"a,b\n1,x\n2,y\n", "h.csv").json()
    url = f"/v1/datasets/{ds['id']}/hierarchies/b"
    text_h = {**auth(headers), "Content-Type": "text/csv"}
    big = b"x;*\ny;*\n" + b"".join(f"z{i};*\n".encode() for i in range(200))
    assert_problem(small.put(url, content=big, headers=text_h), 413, "larger than the limit of 1000 bytes")
    assert small.put(url, content=b"x;*\ny;*\n", headers=text_h).status_code == 200
    # other bodies keep the general limit (this one is 2.4 kB)
    domain = ["x", "y"] + [f"category-{i}" for i in range(200)]
    r = small.put(f"/v1/datasets/{ds['id']}/schema", headers=auth(headers), json={"b": {"categories": domain}})
    assert r.status_code == 200, r.text


def test_every_503_says_when_to_retry_and_the_document_declares_it(client, owner, monkeypatch):
    """The session dependency's 503 (the database went away while a request ran) had no
    Retry-After, the handler's and the busy limit's did; and the document declared none
    (clientgen acceptance check)."""
    from sqlalchemy.exc import OperationalError

    from app import deps

    def gone(session):
        raise OperationalError("COMMIT", {}, Exception("server closed the connection"))

    monkeypatch.setattr(deps.Session, "commit", gone)
    r = client.get("/v1/datasets", headers={"Authorization": owner["Authorization"]})
    monkeypatch.undo()
    assert r.status_code == 503 and r.headers["retry-after"] == "2", (r.status_code, r.headers)
    doc = client.get("/openapi.json").json()
    for path, ops in doc["paths"].items():
        for verb, op in ops.items():
            declared = op["responses"].get("503")
            if declared:  # /readyz's too (its body is the readiness report)
                assert declared["headers"]["Retry-After"]["schema"] == {"type": "integer"}, (verb, path)


def _database_away(session):
    raise OperationalError("SELECT 1", {}, Exception("connection refused"))


def test_metrics_say_when_the_database_did_not_answer(client, monkeypatch):
    """The job figures vanished from /metrics during an outage, unsaid (topology acceptance check)."""
    from app.jobs import repository

    monkeypatch.setattr(repository, "counts_by_status", _database_away)
    metrics = client.get("/metrics").text
    assert "veil_database_up 0.0" in metrics and "veil_jobs{" not in metrics


def test_a_fault_in_the_metrics_code_is_not_reported_as_the_database_down(client, monkeypatch):
    """Any exception while reading the job figures was reported as `veil_database_up 0`: a
    defect in a query sent the operator to a database that was up. It is a 500 now, logged
    with its traceback (and the scrape's `up` is 0)."""
    from app.jobs import repository

    def broken(session):
        raise KeyError("status")

    monkeypatch.setattr(repository, "counts_by_status", broken)
    assert_problem(client.get("/metrics"), 500)


def test_a_metrics_token_closes_metrics_without_the_database(client, monkeypatch):
    """/metrics counts every tenant's jobs by method and outcome; a multi-tenant deployment can
    close it with a token (leakage acceptance check). The check reads no table: during an
    outage the scraper still gets veil_database_up 0."""
    from app.config import get_settings
    from app.jobs import repository

    token = "s3cret-metrics-token-0123"
    monkeypatch.setattr(get_settings(), "metrics_token", token)
    for headers in ({}, {"Authorization": "Bearer wrong-token-000000000"}, {"Authorization": token}):
        assert_problem(client.get("/metrics", headers=headers), 401, "VEIL_METRICS_TOKEN")
    assert "veil_jobs{" in client.get("/metrics", headers={"Authorization": f"Bearer {token}"}).text

    monkeypatch.setattr(repository, "counts_by_status", _database_away)
    # any database use by the check fails as an outage does
    monkeypatch.setattr("app.db.transaction", lambda: _database_away(None))
    down = client.get("/metrics", headers={"Authorization": f"Bearer {token}"})
    assert down.status_code == 200 and "veil_database_up 0.0" in down.text
