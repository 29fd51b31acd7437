"""Abuse: oversized and malicious uploads against a real server with its default limits
(the server's resident memory is sampled while it is attacked), pathological job parameters
refused before any work, and seeds refused outside the reproducible test mode."""

from __future__ import annotations

import io
import socket
import time
import zlib

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sqlalchemy import text

from app.db import transaction
from tests.reliability.conftest import run_in_process
from tests.support.api import assert_problem, auth, submit, upload
from tests.support.server import RssSampler

MiB = 1024 * 1024
GiB = 1024 * MiB


def _raw_upload(live, total: int | None, chunk: int = MiB) -> dict:
    """POST /v1/datasets over a raw socket, streaming ``total`` bytes of a multipart body
    (chunked transfer encoding when total is None: up to 1 GiB, the size never announced).
    Stops sending as soon as the server answers; returns status, seconds, bytes sent."""
    boundary = b"veilabuse"
    head = (b"--" + boundary + b"\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.csv\"\r\n"
            b"Content-Type: text/csv\r\n\r\na,b\r\n")
    headers = ["POST /v1/datasets HTTP/1.1", f"Host: 127.0.0.1:{live.port}",
               f"Authorization: Bearer {live.key}",
               f"Content-Type: multipart/form-data; boundary={boundary.decode()}"]
    headers.append(f"Content-Length: {total}" if total is not None else "Transfer-Encoding: chunked")
    sock = socket.create_connection(("127.0.0.1", live.port))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 * MiB)
    started = time.monotonic()
    sent, response = 0, b""
    payload = (b"1,2\n" * (chunk // 4))[:chunk]
    limit = total if total is not None else GiB
    try:
        sock.sendall(("\r\n".join(headers) + "\r\n\r\n").encode())
        body_chunks = [head] + [payload] * (limit // chunk)
        sock.setblocking(False)
        for piece in body_chunks:
            framed = piece if total is not None else b"%x\r\n%s\r\n" % (len(piece), piece)
            view = memoryview(framed)
            while view:
                try:
                    response += sock.recv(65536)
                except BlockingIOError:
                    pass
                except ConnectionResetError:
                    break
                if response:
                    break
                try:
                    n = sock.send(view)
                    view, sent = view[n:], sent + n
                except BlockingIOError:
                    time.sleep(0.0005)
                except (BrokenPipeError, ConnectionResetError):
                    break
            if response:
                break
        sock.setblocking(True)
        sock.settimeout(30)
        while b"\r\n\r\n" not in response:
            more = sock.recv(65536)
            if not more:
                break
            response += more
    finally:
        sock.close()
    status = int(response.split(b" ", 2)[1]) if response.startswith(b"HTTP/1.1 ") else None
    return {"status": status, "seconds": round(time.monotonic() - started, 3), "sent_mib": round(sent / MiB, 1),
            "problem_json": b"application/problem+json" in response.split(b"\r\n\r\n")[0]}


def test_1gib_upload_with_content_length_is_refused_at_once(live):
    with RssSampler(live.pid) as rss:
        out = _raw_upload(live, total=GiB)
    print(f"\n1 GiB upload (Content-Length): {out}, server RSS growth {rss.growth_mib:.1f} MiB")
    assert out["status"] == 413 and out["problem_json"]
    assert out["seconds"] < 1.0 and out["sent_mib"] < 64
    assert rss.growth_mib < 50


def test_1gib_chunked_upload_is_refused_while_it_streams(live):
    """No Content-Length: the limit (512 MiB by default) is enforced on the bytes received."""
    offset = live.log_offset()
    with RssSampler(live.pid) as rss:
        out = _raw_upload(live, total=None)
    print(f"\n1 GiB upload (chunked): {out}, server RSS growth {rss.growth_mib:.1f} MiB")
    assert out["status"] == 413 and out["problem_json"]
    assert out["sent_mib"] < 512 + 64  # refused once the limit passed, not after the whole GiB
    assert rss.growth_mib < 50
    with live.client() as c:  # and the server is fine, and logged no error
        assert c.get("/healthz").status_code == 200
    assert not live.server_errors(offset), live.server_errors(offset)


def _upload_live(live, data: bytes, filename: str, headers: dict | None = None):
    with live.client(headers={**live.headers, **(headers or {})}, timeout=120) as c:
        return c.post("/v1/datasets", files={"file": (filename, io.BytesIO(data))})


def _datasets_count() -> int:
    with transaction() as s:
        return s.execute(text("SELECT count(*) FROM datasets")).scalar_one()


def test_gzip_bomb_is_refused_unopened(live):
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)  # gzip framing
    zeros = bytes(MiB)
    bomb = b"".join(comp.compress(zeros) for _ in range(1024)) + comp.flush()  # 1 GiB of zeros
    assert len(bomb) < 2 * MiB
    before = _datasets_count()
    with RssSampler(live.pid) as rss:
        plain = _upload_live(live, bomb, "bomb.csv")
        encoded = _upload_live(live, bomb, "bomb.csv", {"Content-Encoding": "gzip"})
    for r in (plain, encoded):
        assert_problem(r, 415, "compressed uploads are not accepted")
    assert rss.growth_mib < 50 and _datasets_count() == before
    print(f"\ngzip bomb ({len(bomb) / MiB:.1f} MiB → 1 GiB): 415, server RSS growth {rss.growth_mib:.1f} MiB")


def _timed_upload(live, data: bytes, filename: str):
    """Upload to the live server; returns the response, the seconds it took and the server's
    peak memory growth meanwhile."""
    with RssSampler(live.pid) as rss:
        started = time.monotonic()
        r = _upload_live(live, data, filename)
        took = time.monotonic() - started
    return r, took, rss.growth_mib


def test_a_million_columns_csv_is_refused(live):
    header = ",".join(f"c{i}" for i in range(1_000_000)).encode()
    data = header + b"\n" + b"1," * 999_999 + b"1\n"
    r, took, growth = _timed_upload(live, data, "wide.csv")
    assert_problem(r, 422, "header line is longer than")
    print(f"\n10^6-column CSV ({len(data) / MiB:.1f} MiB): 422 in {took:.2f} s, RSS growth {growth:.1f} MiB")
    assert growth < 100


def test_a_100mb_cell_is_refused(live):
    data = b"a,b\n1,short\n2," + b"x" * (100 * 1000 * 1000) + b"\n"
    r, took, growth = _timed_upload(live, data, "cell.csv")
    assert_problem(r, 422, "longer than")
    print(f"\n100 MB cell: 422 in {took:.2f} s, RSS growth {growth:.1f} MiB")
    assert growth < 100  # the parser reads 4 MiB blocks; the body spools to disk


def test_parquet_declaring_more_rows_than_the_limit_is_refused_from_its_metadata(live):
    table = pa.table({"z": pa.array(np.zeros(5_000_001, dtype=np.int8))})
    buf = io.BytesIO()
    pq.write_table(table, buf)
    assert buf.tell() < MiB  # a small file declaring 5,000,001 rows
    r = _upload_live(live, buf.getvalue(), "rows.parquet")
    assert_problem(r, 422, "5000001 rows; the limit is 5000000")


def test_parquet_dictionary_bombs_stay_small(live):
    """A few KB that decode to 2 × 10^5 cells of 60 KB each (12 GB as plain strings): read as a
    dictionary, it is one value. Accepted (it is within every limit) without the memory."""
    values = pa.DictionaryArray.from_arrays(pa.array(np.zeros(200_000, dtype=np.int32)),
                                            pa.array(["y" * 60_000]))
    buf = io.BytesIO()
    pq.write_table(pa.table({"s": values, "n": pa.array(np.arange(200_000) % 7)}), buf, store_schema=False)
    assert buf.tell() < MiB
    with RssSampler(live.pid) as rss:
        r = _upload_live(live, buf.getvalue(), "dict.parquet")
    print(f"\nParquet dictionary bomb ({buf.tell() / 1024:.0f} KiB, 12 GB as plain strings): "
          f"{r.status_code}, RSS growth {rss.growth_mib:.1f} MiB")
    assert r.status_code == 201, r.text
    assert r.json()["rows"] == 200_000
    assert rss.growth_mib < 300


def test_parquet_declaring_a_huge_decoded_size_is_refused(client, make_key, monkeypatch):
    """Fixed-width values run-length encoded: the decoded size is rows × width, whatever the
    encoded size says. Here with a lower row limit (the budget is rows × 64 × 16 bytes), so
    that the test file is quick to write: 60,000 rows × 2,000 bytes = 120 MB > 61 MB."""
    from app.config import get_settings

    monkeypatch.setattr(get_settings(), "max_rows", 60_000)
    values = pa.DictionaryArray.from_arrays(pa.array(np.zeros(60_000, dtype=np.int32)),
                                            pa.array([b"z" * 2000], pa.binary(2000)))
    buf = io.BytesIO()
    pq.write_table(pa.table({"f": values}), buf, store_schema=False)
    assert buf.tell() < MiB
    r = upload(client, make_key("owner"), buf.getvalue(), "wide.parquet")
    assert_problem(r, 413, "would decode to about")


def test_transaction_file_with_too_many_lines_is_refused_before_splitting(client, make_key, monkeypatch):
    from app.config import get_settings

    monkeypatch.setattr(get_settings(), "max_rows", 1000)
    r = upload(client, make_key("owner"), b"1 2\n" * 5000, "t.dat")
    assert_problem(r, 422, "more than 1000 transactions")


# ------------------------------------------------------------------ pathological parameters
@pytest.fixture(scope="module")
def wide(client, make_key):
    """40 columns, every one declared a quasi-identifier."""
    headers = make_key("owner")
    names = [f"q{i}" for i in range(40)]
    rows = "\n".join(",".join(str((r * (i + 1)) % 7) for i in range(40)) for r in range(50))
    schema = {n: {"role": "quasi_identifier", "type": "categorical"} for n in names}
    ds = upload(client, headers, (",".join(names) + "\n" + rows + "\n").encode(), "wide.csv",
                schema=schema)
    assert ds.status_code == 201, ds.text
    tx = upload(client, headers, b"1 2 3 4 5\n2 3 4\n1 5\n" * 10, "t.dat").json()
    return headers, ds.json(), tx, names


def _jobs_of(tenant: str) -> int:
    with transaction() as s:
        return s.execute(text("SELECT count(*) FROM jobs WHERE tenant = :t"), {"t": tenant}).scalar_one()


@pytest.mark.parametrize("method,params,where,fragment", [
    ("kanonymity", {"quasi_identifiers": [f"q{i}" for i in range(33)]}, "dataset", "quasi_identifiers"),
    ("kanonymity", {}, "dataset", "quasi-identifier"),  # 40 declared in the schema, none given
    ("risk", {"quasi_identifiers": [f"q{i}" for i in range(33)]}, "dataset", "quasi_identifiers"),
    ("frequent_itemsets", {"max_len": 11, "minsup": 0.1}, "tx", "max_len"),
    ("frequent_itemsets", {"max_candidates": 10**9, "minsup": 0.1}, "tx", "max_candidates"),
    ("kanonymity", {"quasi_identifiers": ["q0", "q1"], "max_lattice_nodes": 10**9}, "dataset", "max_lattice_nodes"),
    ("rfk_anonymity", {"sample_size": 10**8}, "dataset", "sample_size"),
])
def test_pathological_parameters_are_refused_before_any_work(client, wide, method, params, where, fragment):
    headers, ds, tx, _ = wide
    before = _jobs_of(headers["X-Tenant"])
    r = submit(client, headers, method, params, dataset_id=(ds if where == "dataset" else tx)["id"])
    body = assert_problem(r, 422)
    assert fragment in body["detail"] or fragment in str(body.get("errors")), body
    assert _jobs_of(headers["X-Tenant"]) == before  # no job, no queue entry, no debit


def test_seed_is_refused_for_every_release_method_outside_test_mode(client, wide):
    from app.privacy import registry

    headers, ds, _, _ = wide
    before = _jobs_of(headers["X-Tenant"])
    methods = [s.name for s in registry.all_methods() if s.kind == registry.MethodKind.release
               and not s.name.startswith("diag_")]
    assert len(methods) >= 10
    required = {"dppro": {"epsilon": 1.0}, "icahdp": {"epsilon": 1.0}, "png": {"ps": [0.9]},
                "mst": {"epsilon": 1.0}, "aim": {"epsilon": 1.0}, "privbayes": {"epsilon": 1.0},
                "safepub": {"epsilon": 1.0},
                "dp_statistics": {"epsilon": 1.0, "queries": [{"statistic": "count"}]}}
    for name in methods:  # valid parameters: the seed is the only thing refused
        r = submit(client, headers, name, required.get(name, {}), dataset_id=ds["id"], seed=42)
        assert_problem(r, 422, "seed")
    assert _jobs_of(headers["X-Tenant"]) == before


def test_seed_in_test_mode_is_reproducible_and_marked_not_private(client, make_key, monkeypatch):
    from app.config import get_settings

    monkeypatch.setattr(get_settings(), "test_mode", True)
    headers = make_key("owner")
    ds = upload(client, headers, b"c\n" + b"".join(f"{'abc'[i % 3]}\n".encode() for i in range(300)),
                "c.csv").json()
    outputs = []
    for _ in range(2):
        job = submit(client, headers, "errph", {"p0": 0.3}, dataset_id=ds["id"], seed=7)
        assert job.status_code == 202, job.text
        run_in_process(job.json()["id"])
        done = client.get(f"/v1/jobs/{job.json()['id']}", headers=auth(headers)).json()
        assert done["status"] == "succeeded", done
        rid = done["result"]["release_ids"][0]
        rel = client.get(f"/v1/releases/{rid}", headers=auth(headers)).json()
        assert rel["guarantees"]["private"] is False
        outputs.append(client.get(f"/v1/releases/{rid}/data", headers=auth(headers)).content)
    assert outputs[0] == outputs[1]  # the same seed, the same release


def _stalled_upload(live) -> socket.socket:
    """An upload that sends its headers and the start of its body, then nothing more."""
    sock = socket.create_connection(("127.0.0.1", live.port))
    body_start = (b"--veilslow\r\nContent-Disposition: form-data; name=\"file\"; filename=\"s.csv\"\r\n"
                  b"Content-Type: text/csv\r\n\r\na,b\r\n1,2\r\n")
    sock.sendall((f"POST /v1/datasets HTTP/1.1\r\nHost: 127.0.0.1:{live.port}\r\n"
                  f"Authorization: Bearer {live.key}\r\n"
                  "Content-Type: multipart/form-data; boundary=veilslow\r\n"
                  f"Content-Length: {10 * MiB}\r\n\r\n").encode() + body_start)
    return sock


def test_slow_uploads_neither_block_other_requests_nor_hold_on_forever(database, tmp_path):
    """Slowloris: more stalled uploads than the API process has upload slots. They hold no
    database connection and no general slot, so reads and job submissions go on; each
    stalled upload gets 408 problem+json once its body has been idle for the timeout, and
    nothing is stored for it."""
    from tests.support.server import LiveServer

    server = LiveServer(tmp_path / "slow", database_url=database,
                        env={"VEIL_PLUGINS": "", "VEIL_BODY_IDLE_TIMEOUT_S": "2",
                             "VEIL_MAX_CONCURRENT_UPLOADS": "2", "PGAPPNAME": "veil-slowloris"})
    try:
        before = _datasets_count()
        stalled = [_stalled_upload(server) for _ in range(6)]
        time.sleep(0.5)  # the first two are now receiving, the others queued for an upload slot
        with transaction() as s:  # authenticated, but no transaction stays open while they stall
            # this server's connections only (libpq names them from PGAPPNAME): the database is
            # the whole suite's, and another test's connection could be mid-transaction
            # (held, not passing: a worker's heartbeat or queue poll is idle in transaction for a
            # moment between its statements — seen once in a fresh clone's run — while a
            # transaction held by a stalled upload has been idle since it stalled, ≥ 0.5 s)
            names = s.execute(text("SELECT application_name, state, clock_timestamp() - state_change "
                                   "> interval '0.3 s' FROM pg_stat_activity WHERE "
                                   "application_name = 'veil-slowloris'")).all()
            open_tx = sum(state.startswith("idle in transaction") and held for _, state, held in names if state)
        assert names, "the server's connections are not named: the check would see nothing"
        assert open_tx == 0
        with server.client(headers=server.headers) as c:
            for _ in range(50):  # 50 reads while all six stall
                assert c.get("/v1/datasets").status_code == 200
            ds = c.post("/v1/datasets/synthetic", json={"rows": 100}).json()
            job = submit(c, server.headers, "errph", {"p0": 0.5}, dataset_id=ds["id"])
            assert job.status_code == 202, job.text
        answers = []
        for sock in stalled:
            sock.settimeout(30)
            answer = b""
            while chunk := sock.recv(65536):  # the server closes the connection after a 408
                answer += chunk
            answers.append(answer)
            sock.close()
        head = [a.split(b"\r\n\r\n")[0] for a in answers]
        assert all(h.startswith(b"HTTP/1.1 408 ") and b"application/problem+json" in h for h in head), head
        assert all(b"no part of the request body arrived for 2 s" in a for a in answers)
        assert _datasets_count() == before + 1  # the synthetic one; no stalled upload stored anything
        with server.client(headers=server.headers) as c:  # uploads work again
            assert _upload_live(server, b"a,b\n1,2\n3,4\n", "ok.csv").status_code == 201
    finally:
        server.stop()
