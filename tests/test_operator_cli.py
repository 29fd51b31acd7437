"""The `veil` command as an operator runs it (operations acceptance check): a bad setting or
argument is one line naming it, never a traceback; one `veil serve` per data directory; the
job-duration histogram is valid Prometheus text."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import psutil
import pytest
from prometheus_client.parser import text_string_to_metric_families

from app.cli import build_parser
from tests.support.server import LiveServer

ROOT = Path(__file__).resolve().parents[1]


def _veil(*args: str, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess:
    # nor the suite's diagnostic methods (tests/conftest.py), which are for jobs: `veil serve`
    # and `veil worker` would import them first (~5 s of CPU); the plugin tests name their own
    full = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "VEIL_PLUGINS")}
    return subprocess.run([sys.executable, "-m", "app", *args], env={**full, **env}, cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("env, named", [
    ({"VEIL_WORKERS": "abc"}, "VEIL_WORKERS"),
    ({"VEIL_MAX_ROWS": "-5"}, "VEIL_MAX_ROWS"),
    ({"VEIL_JOB_TIME_LIMIT_S": "-1"}, "VEIL_JOB_TIME_LIMIT_S"),
    ({"VEIL_LOG_LEVEL": "verbose"}, "VEIL_LOG_LEVEL"),
    ({"DATABASE_URL": "mysql://db/veil"}, "DATABASE_URL"),
    ({"VEIL_STALL_TIMEOUT_S": "1", "VEIL_HEARTBEAT_INTERVAL_S": "2"}, "VEIL_STALL_TIMEOUT_S"),
    # not a key's shape: `veil serve` migrated, then stopped in a traceback (provenance check)
    ({"VEIL_DEV_API_KEY": "my-dev-key"}, "VEIL_DEV_API_KEY"),
    ({"VEIL_DEV_API_KEY": "veil_prefix-longer-than-16_secret"}, "VEIL_DEV_API_KEY"),
    # longer than a release's code_version holds: every release failed to store (provenance check)
    ({"VEIL_COMMIT": "c" * 41}, "VEIL_COMMIT"),
    ({"VEIL_COMMIT": "abc def"}, "VEIL_COMMIT"),
    # a module that is not there: the API processes restarted in a loop, a traceback each time
    ({"VEIL_PLUGINS": "no_such_veil_plugin"}, "VEIL_PLUGINS"),
    # more upload slots than the connection pool has room for were served as 8, unsaid (docsync check)
    ({"VEIL_MAX_CONCURRENT_UPLOADS": "9"}, "VEIL_MAX_CONCURRENT_UPLOADS"),
    # infinity passed `gt=0`: the reaper's SQL interval refused it and every worker exited in a
    # loop; an infinite time limit or grace period was no limit at all (operator audit)
    ({"VEIL_STALL_TIMEOUT_S": "inf"}, "VEIL_STALL_TIMEOUT_S"),
    ({"VEIL_JOB_TIME_LIMIT_S": "1e400"}, "VEIL_JOB_TIME_LIMIT_S"),
    ({"VEIL_WORKER_SHUTDOWN_GRACE_S": "inf"}, "VEIL_WORKER_SHUTDOWN_GRACE_S"),
    # finite but past what the waits can take: a stall timeout of 1e13 s is no PostgreSQL
    # interval (every worker exited at its first reap, "queue connection lost"), a heartbeat or
    # grace period past threading's TIMEOUT_MAX an OverflowError traceback (operator acceptance check)
    ({"VEIL_STALL_TIMEOUT_S": "1e13"}, "VEIL_STALL_TIMEOUT_S"),
    ({"VEIL_HEARTBEAT_INTERVAL_S": "1e10", "VEIL_STALL_TIMEOUT_S": "1e11"}, "VEIL_HEARTBEAT_INTERVAL_S"),
    ({"VEIL_WORKER_SHUTDOWN_GRACE_S": "1e10"}, "VEIL_WORKER_SHUTDOWN_GRACE_S"),
    ({"VEIL_JOB_TIME_LIMIT_S": "1e300"}, "VEIL_JOB_TIME_LIMIT_S"),
    ({"VEIL_BODY_IDLE_TIMEOUT_S": "1e300"}, "VEIL_BODY_IDLE_TIMEOUT_S"),
    ({"VEIL_UPLOAD_PARSE_TIME_LIMIT_S": "1e300"}, "VEIL_UPLOAD_PARSE_TIME_LIMIT_S"),
    # an empty host made uvicorn listen on every interface, unsaid (operator audit)
    ({"VEIL_HOST": ""}, "VEIL_HOST"),
    # a folder that is not there: every experiment_* job failed when it ran (operator audit)
    ({"VEIL_DATASETS_DIR": "/nonexistent/veil-datasets"}, "VEIL_DATASETS_DIR"),
])
def test_a_bad_setting_is_named_in_one_line(tmp_path, env, named):
    done = _veil("keys", "list", env={"VEIL_DATA_DIR": str(tmp_path), **env})
    assert done.returncode != 0
    assert "Traceback" not in done.stderr and named in done.stderr, done.stderr
    assert not (tmp_path / "pg").exists()  # refused before anything started


def test_an_empty_data_dir_is_refused(tmp_path):
    """VEIL_DATA_DIR= (set, empty) read as '.': the embedded PostgreSQL, the development key and
    the serve lock went into whatever directory the command ran in (operator audit)."""
    full = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    done = subprocess.run([sys.executable, "-m", "app", "keys", "list"], env={**full, "VEIL_DATA_DIR": ""},
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr and "VEIL_DATA_DIR" in done.stderr, done.stderr
    assert not (tmp_path / "pg").exists()


@pytest.mark.parametrize("args", [("keys", "list"), ("migrate",), ("serve", "--workers", "0")])
def test_a_data_dir_that_cannot_be_made_is_one_line(tmp_path, args):
    """A file (or a path under one) as VEIL_DATA_DIR was a traceback from mkdir (operator audit)."""
    (tmp_path / "file").write_text("")
    done = _veil(*args, env={"VEIL_DATA_DIR": str(tmp_path / "file"), "VEIL_API_PROCESSES": "1"})
    assert done.returncode != 0
    assert "Traceback" not in done.stderr and "VEIL_DATA_DIR" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_serve_that_cannot_listen_stops_before_it_starts(tmp_path):
    """A host that does not resolve, or a port already taken: `veil serve` started PostgreSQL,
    migrated, printed the development key, then uvicorn's "[Errno -2] Name or service not known"
    (naming no setting; a host with a space added a traceback from the ready announcer) and
    exit status 3 (operator audit). Now one line naming VEIL_HOST and VEIL_PORT, before anything starts."""
    import socket

    env = {"VEIL_DATA_DIR": str(tmp_path / "data"), "VEIL_API_PROCESSES": "1"}
    unresolvable = _veil("serve", "--workers", "0", env={**env, "VEIL_HOST": "no-such-host.invalid"})
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = _veil("serve", "--workers", "0", env={**env, "VEIL_PORT": str(taken.getsockname()[1])})
    for done in (unresolvable, busy):
        assert done.returncode != 0
        assert "Traceback" not in done.stderr and "VEIL_HOST" in done.stderr and "VEIL_PORT" in done.stderr, done.stderr
        assert "Veil is starting" not in done.stdout and not (tmp_path / "data" / "pg").exists()


def test_an_unreadable_database_url_is_one_line_without_its_password(tmp_path):
    """A port that is not a number was a 40-line traceback from the first connection (topology
    acceptance check); the message names the variable, never its value (it holds the password)."""
    done = _veil("keys", "list", env={"VEIL_DATA_DIR": str(tmp_path),
                                      "DATABASE_URL": "postgresql://veil:secret@127.0.0.1:notaport/veil"})
    assert done.returncode != 0
    assert "Traceback" not in done.stderr and "DATABASE_URL" in done.stderr, done.stderr
    assert "secret" not in done.stderr and "notaport" not in done.stderr


def test_an_unreachable_database_is_one_line(tmp_path):
    done = _veil("migrate", env={"DATABASE_URL": "postgresql://veil:secret@127.0.0.1:1/veil"})
    assert done.returncode != 0
    assert "Traceback" not in done.stderr and "cannot be reached" in done.stderr, done.stderr
    assert "secret" not in done.stderr


def test_a_new_data_dir_asks_for_migrate_and_keeps_no_postgresql_running(tmp_path):
    """`veil keys …` on a data directory never served was a traceback ("relation api_keys does
    not exist"), and every one-shot command that started the embedded PostgreSQL left it running."""
    env = {"VEIL_DATA_DIR": str(tmp_path)}
    listed = _veil("keys", "list", env=env)
    assert listed.returncode != 0 and "Traceback" not in listed.stderr, listed.stderr
    assert "veil migrate" in listed.stderr
    assert listed.stdout == ""  # not the table's header line, as if there were no keys (operator audit)
    migrated = _veil("migrate", env=env)
    assert migrated.returncode == 0 and migrated.stdout.startswith("migrated from an empty database to "), migrated.stdout
    again = _veil("migrate", env=env)  # it said "migrations applied" when nothing was
    assert again.returncode == 0 and "nothing to do" in again.stdout, again.stdout
    created = _veil("keys", "create", "--tenant", "acme", "--role", "owner", env=env)
    assert created.returncode == 0 and created.stdout.startswith("veil_")
    left = [p.pid for p in psutil.process_iter(["cmdline"]) if str(tmp_path) in " ".join(p.info["cmdline"] or [])]
    assert not left, f"PostgreSQL left running: {left}"



def test_ledger_debit_refuses_in_one_line_and_leaves_no_postgresql_running(tmp_path):
    """`veil ledger debit` (ε lost to a restore, written into the ledger): a bad argument is
    refused before anything starts; a dataset the database does not hold, or a database not yet
    migrated, in one line naming the command."""
    env = {"VEIL_DATA_DIR": str(tmp_path)}
    dataset = "0b9e7a52-2f4e-4d8e-9a43-3f0c1b2a6d11"
    bad = _veil("ledger", "debit", "--dataset", dataset, "--epsilon", "nan", "--note", "x", env=env)
    assert bad.returncode != 0 and bad.stderr.strip() == (
        "veil ledger debit: --epsilon: must be a finite number more than 0, not 'nan'"), bad.stderr
    assert not (tmp_path / "pg").exists()
    unmigrated = _veil("ledger", "debit", "--dataset", dataset, "--epsilon", "1", "--note", "x", env=env)
    assert unmigrated.returncode != 0 and "Traceback" not in unmigrated.stderr, unmigrated.stderr
    assert "veil ledger debit:" in unmigrated.stderr and "veil migrate" in unmigrated.stderr
    assert _veil("migrate", env=env).returncode == 0
    missing = _veil("ledger", "debit", "--dataset", dataset, "--epsilon", "1", "--note", "x", env=env)
    assert missing.returncode != 0 and missing.stderr.strip() == (
        f"veil ledger debit: no dataset {dataset} in this database"), missing.stderr
    # a physical copy declared restored: an empty trail has nothing to freeze, and says so
    declared = _veil("restore-check", "--declare", env=env)
    assert declared.returncode == 0 and "holds no audit event" in declared.stdout, declared.stdout
    left = [p.pid for p in psutil.process_iter(["cmdline"]) if str(tmp_path) in " ".join(p.info["cmdline"] or [])]
    assert not left, f"PostgreSQL left running: {left}"


def test_a_worker_on_its_own_leaves_no_postgresql_running(tmp_path):
    """`veil worker` in embedded mode without a `veil serve` started the data directory's
    PostgreSQL and left it running when it exited — here at once, refusing a database with no
    Veil schema (operator acceptance check). A worker of a running `veil serve` leaves it up."""
    env = {"VEIL_DATA_DIR": str(tmp_path), "VEIL_PLUGINS": ""}
    done = _veil("worker", env=env)
    assert done.returncode == 3 and "veil migrate" in done.stderr, done.stderr
    left = [p.pid for p in psutil.process_iter(["cmdline"]) if str(tmp_path) in " ".join(p.info["cmdline"] or [])]
    assert not left, f"PostgreSQL left running: {left}"

def test_an_unwritable_openapi_output_is_one_line(tmp_path):
    (tmp_path / "file").write_text("")
    done = _veil("openapi", "--output", str(tmp_path / "file" / "openapi.json"), env={})
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    assert "cannot write" in done.stderr


def test_a_negative_worker_count_is_refused():
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["serve", "--workers", "-1"])
    assert exc.value.code == 2


def test_a_second_serve_on_the_same_data_dir_leaves_the_first_running(tmp_path):
    """It failed to bind the port, then stopped the embedded PostgreSQL the first one used
    (and had wiped its metrics files on the way in)."""
    first = LiveServer(tmp_path / "data", env={"VEIL_PLUGINS": ""})
    try:
        second = _veil("serve", "--workers", "0", env={
            "VEIL_DATA_DIR": str(tmp_path / "data"), "VEIL_PORT": str(first.port), "VEIL_API_PROCESSES": "1"})
        assert second.returncode != 0 and "another `veil serve`" in second.stderr, second.stderr
        ready = httpx.get(first.base_url + "/readyz", timeout=10).json()
        assert ready["checks"]["database"] == "ok", ready
        assert httpx.get(first.base_url + "/v1/datasets", headers=first.headers, timeout=10).status_code == 200
    finally:
        first.stop()


def test_the_job_duration_histogram_is_valid_prometheus_text(client, monkeypatch):
    from app.jobs import repository

    monkeypatch.setattr(repository, "outcome_counts", lambda session: [
        ("errph", "succeeded", 0.5, 1, 0.3), ("errph", "succeeded", float("inf"), 1, 1200.0)])
    families = {f.name: f for f in text_string_to_metric_families(client.get("/metrics").text)}
    buckets = {s.labels["le"]: s.value for s in families["veil_job_duration_seconds"].samples
               if s.name.endswith("_bucket")}
    assert buckets["+Inf"] == 2 and buckets["900.0"] == 1 and buckets["0.5"] == 1, buckets


def _compose_services() -> dict[str, str]:
    """docker-compose.yml's service blocks by name (two-space indented keys under services)."""
    text = (ROOT / "docker-compose.yml").read_text().split("\nvolumes:")[0]
    blocks = re.split(r"\n  (?=[a-z_]+:\n)", text.split("services:\n", 1)[1])
    return {block.split(":", 1)[0].strip(): block for block in blocks}


def test_compose_containers_without_the_api_do_not_inherit_its_healthcheck():
    """The image's HEALTHCHECK asks http://127.0.0.1:$VEIL_PORT/healthz: in the worker (and the
    migration) container nothing listens there, so they were reported unhealthy forever. And
    nothing restarted an API or a worker that exited (`veil serve` restarts its workers)."""
    docker = (ROOT / "Dockerfile").read_text()
    assert "/healthz" in docker and "127.0.0.1" in docker
    services = _compose_services()
    for name, block in services.items():
        if "build:" in block and '"serve"' not in block:
            assert re.search(r"healthcheck:\n\s+disable: true", block), name
    for name in ("api", "worker"):
        assert "restart: unless-stopped" in services[name], name


def test_compose_stops_postgres_after_the_containers_that_use_it():
    """Compose stops services in reverse dependency order, but docker-compose 1.29 (Debian's
    package) follows only containers still running: the api and the workers depended on postgres
    through the migration, which had exited, so `docker-compose stop` stopped postgres first.
    A worker inside its 8 s grace could not queue its job again ('failed to resolve host
    postgres'), was killed at stop_grace_period (exit 137) and left the job running (measured)."""
    services = _compose_services()
    for name in ("api", "worker"):
        depends = services[name].split("depends_on:", 1)[1]
        assert re.search(r"\n\s+postgres:[^\n]*\n\s+condition: service_healthy", depends), name


def test_the_image_healthcheck_asks_the_port_the_api_serves():
    """The image sets VEIL_PORT (compose's api service too) but its HEALTHCHECK asked :8000
    whatever it was: an API moved to another port was reported unhealthy for ever (operator audit).
    Likewise the address: 127.0.0.1 only when the API listens on every interface (review)."""
    import http.server
    import shlex
    import threading

    line = next(l for l in (ROOT / "Dockerfile").read_text().splitlines() if l.startswith("HEALTHCHECK"))
    command = shlex.split(line.split(" CMD ", 1)[1])
    assert command[:2] == ["python", "-c"]

    class Healthz(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/healthz" else 404)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Healthz)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        # every interface (the image's 0.0.0.0), unset, or the one address the API listens on
        for host in ("0.0.0.0", None, "127.0.0.1"):
            env = {**os.environ, "VEIL_PORT": str(server.server_address[1])}
            env.pop("VEIL_HOST", None)
            env.update({"VEIL_HOST": host} if host else {})
            done = subprocess.run([sys.executable, "-c", command[2]], env=env, capture_output=True,
                                  text=True, timeout=30)
            assert done.returncode == 0, (host, done.stderr)
        env["VEIL_HOST"] = "127.0.0.2"  # an address nothing listens on: the check fails
        done = subprocess.run([sys.executable, "-c", command[2]], env=env, capture_output=True, text=True, timeout=30)
        assert done.returncode != 0
    finally:
        server.shutdown()


@pytest.mark.parametrize("inherited, expected", [(None, "veil-worker"), ("veil-api", "veil-worker"),
                                                 ("veil-cli", "veil-worker"), ("ops-team", "ops-team")])
def test_a_command_names_its_connections_and_keeps_an_operators_name(monkeypatch, inherited, expected):
    """The names are libpq's PGAPPNAME: one of Veil's own, inherited (veil serve → its workers,
    or a test process that ran a command in-process), is replaced; an operator's is kept."""
    from app import cli

    if inherited is None:
        monkeypatch.delenv("PGAPPNAME", raising=False)
    else:
        monkeypatch.setenv("PGAPPNAME", inherited)
    monkeypatch.setitem(cli.__dict__, "check_settings", lambda: None)
    parser = cli.build_parser()
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    ran = []
    monkeypatch.setattr(parser, "parse_args", lambda argv: type("A", (), {"command": "worker", "fn": ran.append})())
    cli.main(["worker"])
    assert ran and os.environ["PGAPPNAME"] == expected


def test_the_help_says_where_the_settings_come_from():
    """`veil --help` and `veil serve --help` named no setting (an operator could not find how to
    set the port or the data directory from them), and `--output` of `veil openapi` gave no
    default (operator acceptance check)."""
    parser = build_parser()
    top = parser.format_help()
    assert "VEIL_DATA_DIR" in top and "DATABASE_URL" in top and "README" in top
    sub = {name: action for action in parser._subparsers._group_actions for name, action in action.choices.items()}
    serve = sub["serve"].format_help()
    assert all(name in serve for name in ("VEIL_HOST", "VEIL_PORT", "VEIL_WORKERS", "VEIL_API_PROCESSES"))
    assert "openapi/openapi.json" in sub["openapi"].format_help()


def test_the_key_list_columns_line_up_whatever_the_prefix(database, capsys, monkeypatch):
    """A development key of a short prefix (VEIL_DEV_API_KEY=veil_opext_…) shifted the rest of its
    line left of the header's columns (operator acceptance check)."""
    from app.auth import cli as keys_cli
    from app.auth.schemas import Role
    from app.auth.service import ensure_key
    from app.db import transaction

    tenant = "align" + os.urandom(3).hex()
    with transaction() as session:
        ensure_key(session, tenant=tenant, role=Role.owner, key="veil_ab_" + os.urandom(16).hex())
        ensure_key(session, tenant=tenant, role=Role.analyst, key="veil_0123456789abcdef_" + os.urandom(16).hex())
    monkeypatch.setattr(keys_cli, "database_ready", lambda owner=False: None)
    keys_cli.cmd_keys_list(type("A", (), {"tenant": tenant})())
    header, *rows = capsys.readouterr().out.splitlines()
    assert len(rows) == 2
    for row in rows:
        for column in ("tenant", "role", "state"):
            at = header.index(column)
            assert row[at - 1] == " " and row[at] != " ", (header, row)


def test_an_embedded_postgresql_that_does_not_start_is_one_line_with_its_reason(tmp_path):
    """The embedded PostgreSQL refusing to start (its data directory's disk full: "could not
    write lock file postmaster.pid: No space left on device"; a setting it cannot read) was a
    traceback of pg_ctl's CalledProcessError, the reason only in <data dir>/pg/log (operator
    acceptance check)."""
    env = {"VEIL_DATA_DIR": str(tmp_path)}
    assert _veil("migrate", env=env).returncode == 0
    with open(tmp_path / "pg" / "postgresql.conf", "a") as conf:
        conf.write("\nshared_buffers = 'plenty'\n")
    for command in (("keys", "list"), ("migrate",)):
        done = _veil(*command, env=env)
        assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
        line = done.stderr.strip().splitlines()[-1]
        assert "PostgreSQL" in line and "did not start" in line and "shared_buffers" in line, line
        assert str(tmp_path / "pg" / "log") in line


@pytest.mark.parametrize("command", ["serve", "worker"])
@pytest.mark.parametrize("source, says", [
    ("import no_such_package_for_veil\n", "No module named 'no_such_package_for_veil'"),
    ("from app.privacy.registry import MethodKind, MethodSpec, Params, register\n"
     "register(MethodSpec(name='warner', family='x', kind=MethodKind.release, summary='x', params=Params,\n"
     "                    guarantee='x', paper='x', run=print))\n", "registered twice"),
])
def test_a_plugin_that_does_not_import_stops_serve_and_worker_in_one_line(tmp_path, command, source, says):
    """A VEIL_PLUGINS module that is there but fails to import (a dependency it lacks, a method
    name a built-in has) passed the check for a missing one: `veil serve` printed its key and
    'starting', then its API and worker processes restarted in a loop, a traceback each time
    (plugin acceptance sweep: 17 in a minute); now nothing starts and the line names the module."""
    (tmp_path / "broken_veil_plugin.py").write_text(source)
    env = {"VEIL_DATA_DIR": str(tmp_path / "data"), "VEIL_PLUGINS": "broken_veil_plugin",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])),
           "VEIL_PORT": "8759"}
    done = _veil(command, *(["--workers", "1"] if command == "serve" else []), env=env, timeout=120)
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    line, = done.stderr.strip().splitlines()
    assert "VEIL_PLUGINS" in line and "'broken_veil_plugin'" in line and says in line, line
    assert not (tmp_path / "data" / "pg").exists()  # refused before anything started


def test_a_plugin_params_class_named_like_an_api_schema_stops_serve_in_one_line(tmp_path):
    """The OpenAPI document names a schema after its class: a VEIL_PLUGINS params class named
    `Job` turned Veil's own `Job` schema into `Job-Input` and `Job-Output` under every generated
    client (plugin acceptance sweep, left then); now `veil serve` refuses to start, naming both."""
    (tmp_path / "job_named_plugin.py").write_text(
        "from app.privacy.registry import MethodKind, MethodSpec, Params, register\n\n\n"
        "class Job(Params):\n    x: int = 1\n\n\n"
        "register(MethodSpec(name='plugin_job', family='x', kind=MethodKind.release, summary='x',\n"
        "                    params=Job, guarantee='x', paper='x', run=print))\n")
    env = {"VEIL_DATA_DIR": str(tmp_path / "data"), "VEIL_PLUGINS": "job_named_plugin",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])),
           "VEIL_PORT": "8758"}
    done = _veil("serve", "--workers", "1", env=env, timeout=120)
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    line, = done.stderr.strip().splitlines()
    assert "VEIL_PLUGINS" in line and "'plugin_job'" in line and "'Job'" in line and "own schema" in line, line
    assert not (tmp_path / "data" / "pg").exists()  # refused before anything started


def test_importing_the_cli_stays_cheap():
    """The forkservers preload app.cli (app/worker/runner.py, app/datasets/isolated.py), and a
    `veil` started from its script runs it again in every job and upload process: the command
    modules import their heavy dependencies inside the commands (app/cli.py's docstring)."""
    probe = ("import sys, app.cli; print(sorted(m for m in ('sqlalchemy', 'pandas', 'numpy', 'fastapi', "
             "'procrastinate', 'pyarrow', 'sklearn', 'uvicorn', 'psycopg', 'pgserver') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0 and done.stdout.strip() == "[]", (done.stdout, done.stderr)
