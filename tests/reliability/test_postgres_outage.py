"""PostgreSQL stopped abruptly (`pg_ctl stop -m immediate`: no shutdown checkpoint, every
connection cut) while 200 requests are in flight against a real `veil serve` with a worker,
then started again. While the database is away the API answers 503 (never 500), and every
request it acknowledged with a 2xx is there after the restart; the accepted jobs then run.

A separate pgserver instance (its own data folder) is used, so the session's database is
not disturbed."""

from __future__ import annotations

import collections
import threading
import time
import uuid
from urllib.parse import parse_qs, urlparse

import httpx
import pytest

from tests.support.server import LiveServer

REQUESTS = 200
THREADS = 4
SPACING_S = 0.24  # per thread: the 200 requests span ~12 s; the database is away from 3 s to 7 s


class Postgres:
    """A pgserver instance that can be stopped abruptly and started again."""

    def __init__(self, data_dir) -> None:
        from app.db import embedded_server, to_sqlalchemy_url

        self.server = embedded_server(data_dir, owner=True)
        self.pgdata = self.server.pgdata
        self.url = to_sqlalchemy_url(self.server.get_uri())
        self.socket_dir = parse_qs(urlparse(self.server.get_uri()).query)["host"][0]

    def _pg_ctl(self, *args: str) -> None:
        from pgserver._commands import pg_ctl

        pg_ctl(list(args), pgdata=self.pgdata, user=self.server.system_user, timeout=60)

    def stop_immediately(self) -> None:
        self._pg_ctl("-m", "immediate", "-w", "stop")

    def start(self) -> None:
        self._pg_ctl("-w", "-o", '-h ""', "-o", f"-k {self.socket_dir}", "-l", str(self.pgdata / "log"), "start")

    def close(self) -> None:
        # pgserver only stops the postmaster it started, and that one died at the immediate
        # stop: stop the restarted one here.
        try:
            self._pg_ctl("-m", "fast", "-w", "stop")
        finally:
            self.server.cleanup()


@pytest.fixture
def outage_service(tmp_path):
    pg = Postgres(tmp_path / "outage")
    service = LiveServer(tmp_path / "serve", database_url=pg.url, workers=1,
                         env={"VEIL_PLUGINS": ""}, ready_path="/readyz")
    yield pg, service
    service.stop()
    try:
        pg.close()
    except Exception:  # already stopped by a failed test
        pass


def test_postgres_stopped_abruptly_during_200_requests(outage_service):
    pg, service = outage_service
    with service.client(headers=service.headers) as c:
        base = c.post("/v1/datasets", files={"file": ("base.csv", b"b,n\nx,1\ny,2\nx,3\ny,4\n")}).json()
    outcomes: list[tuple[str, int, str | None, float, float]] = []  # (kind, status, id, sent, done)
    lock = threading.Lock()
    window: dict[str, float] = {}
    started = time.monotonic()

    def worker(thread: int) -> None:
        with service.client(headers=service.headers, timeout=60) as c:
            for i in range(REQUESTS // THREADS):
                time.sleep(max(started + i * SPACING_S - time.monotonic(), 0))
                sent = time.monotonic() - started
                kind = ("upload", "read", "submit", "list")[(i + thread) % 4]
                try:
                    if kind == "upload":
                        r = c.post("/v1/datasets", files={"file": (f"d{thread}-{i}.csv", f"a,b\n{i},x\n{thread},y\n")})
                    elif kind == "read":
                        r = c.get(f"/v1/datasets/{base['id']}")
                    elif kind == "submit":
                        r = c.post("/v1/jobs", json={"dataset_id": base["id"], "method": "errph",
                                                     "params": {"p0": 0.5, "columns": ["b"]}},
                                   headers={"Idempotency-Key": str(uuid.uuid4())})
                    else:
                        r = c.get("/v1/jobs", params={"limit": 5})
                    status = r.status_code
                    ident = r.json().get("id") if status in (200, 201, 202) and kind in ("upload", "submit") else None
                except httpx.HTTPError as exc:
                    status, ident = -1, type(exc).__name__
                with lock:
                    outcomes.append((kind, status, ident, sent, time.monotonic() - started))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
    [t.start() for t in threads]
    time.sleep(3.0)
    pg.stop_immediately()
    window["down"] = time.monotonic() - started  # the server is gone from here...
    time.sleep(4.0)
    window["starting"] = time.monotonic() - started  # ...until at least here
    pg.start()
    window["up"] = time.monotonic() - started
    [t.join(120) for t in threads]

    statuses = collections.Counter(o[1] for o in outcomes)
    print(f"\nPostgreSQL down from {window['down']:.1f} s to {window['up']:.1f} s; "
          f"{len(outcomes)} requests; statuses {dict(statuses)}")
    assert len(outcomes) == REQUESTS
    assert set(statuses) <= {200, 201, 202, 503}, statuses  # no 500, no dropped connection
    # sent and answered while the server was surely down: 503, each one
    during = [s for _, s, _, sent, done in outcomes if window["down"] < sent and done < window["starting"]]
    assert during and all(s == 503 for s in during), collections.Counter(during)
    assert not service.server_errors(), service.server_errors()[:5]
    # recovered: the 200 requests may all have been sent before the restart ended (a loaded
    # machine took 8 s to start PostgreSQL), so the service is asked again until it answers
    recovered = {"upload": None, "submit": None}
    with service.client(headers=service.headers) as c:
        deadline = time.monotonic() + 60
        while None in recovered.values():
            assert time.monotonic() < deadline, (recovered, service.log_tail())
            r = (c.post("/v1/datasets", files={"file": ("after.csv", b"a,b\n1,x\n2,y\n")})
                 if recovered["upload"] is None else
                 c.post("/v1/jobs", json={"dataset_id": base["id"], "method": "errph",
                                          "params": {"p0": 0.5, "columns": ["b"]}}))
            assert r.status_code in (201, 202, 503), r.text
            if r.status_code != 503:
                recovered["upload" if recovered["upload"] is None else "submit"] = r.json()["id"]
            else:
                time.sleep(0.25)
    outcomes += [("upload", 201, recovered["upload"], 0.0, 0.0), ("submit", 202, recovered["submit"], 0.0, 0.0)]

    acknowledged = [(k, i) for k, s, i, _, _ in outcomes if s in (201, 202) and i]
    with service.client(headers=service.headers) as c:
        for kind, ident in acknowledged:  # every acknowledged write survived the crash
            path = f"/v1/datasets/{ident}" if kind == "upload" else f"/v1/jobs/{ident}"
            assert c.get(path).status_code == 200, (kind, ident)
        jobs = [i for k, i in acknowledged if k == "submit"]
        deadline = time.monotonic() + 90  # and the accepted jobs run once the database is back
        while True:
            states = collections.Counter(c.get(f"/v1/jobs/{j}").json()["status"] for j in jobs)
            if set(states) <= {"succeeded", "failed", "cancelled"}:
                break
            assert time.monotonic() < deadline, (states, service.log_tail())
            time.sleep(0.5)
    assert states == {"succeeded": len(jobs)}, states
    print(f"acknowledged writes: {len(acknowledged)} (all present); jobs: {dict(states)}")
