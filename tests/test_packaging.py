"""No Docker engine runs here, so the container files are kept correct by checking what they
name: every `veil` command they run exists in the CLI, the image installs this package, the
runtime is not root, and the CLI writes the OpenAPI document and creates keys."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _veil_commands() -> list[list[str]]:
    text = (ROOT / "Dockerfile").read_text() + (ROOT / "docker-compose.yml").read_text()
    return [json.loads(m) for m in re.findall(r'\[\s*"veil"[^\]]*\]', text)]


def test_every_container_command_exists_in_the_cli():
    from app.cli import build_parser

    commands = _veil_commands()
    assert {c[1] for c in commands} >= {"serve", "migrate", "worker"}
    parser = build_parser()
    for cmd in commands:
        args = parser.parse_args(cmd[1:])  # raises SystemExit for an unknown command or flag
        assert callable(args.fn)


def test_image_installs_this_package_as_non_root():
    docker = (ROOT / "Dockerfile").read_text()
    assert "pip wheel --no-cache-dir --wheel-dir /wheels ." in docker
    assert re.search(r"^USER (?!root)\w+", docker, re.M)
    for needed in ("COPY pyproject.toml", "COPY app ./app", "COPY migrations ./migrations"):
        assert needed in docker
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["scripts"]["veil"] == "app.cli:main"
    assert "migrations*" in project["tool"]["setuptools"]["packages"]["find"]["include"]


def test_the_image_stamps_the_commit_given_at_build_time(monkeypatch):
    """The image has no git checkout: its releases recorded the bare version. The commit comes
    as a build argument (compose passes VEIL_COMMIT, empty when unset), and an empty VEIL_COMMIT
    is no commit — it failed the settings' pattern and every process with it (spec56 note)."""
    docker = (ROOT / "Dockerfile").read_text()
    assert 'ARG VEIL_COMMIT=""' in docker and "VEIL_COMMIT=${VEIL_COMMIT}" in docker
    compose = (ROOT / "docker-compose.yml").read_text()
    assert "VEIL_COMMIT: ${VEIL_COMMIT:-}" in compose and compose.count("build: *build") == 2
    from app.config import Settings

    monkeypatch.setenv("VEIL_COMMIT", "")
    assert Settings().commit is None
    monkeypatch.setenv("VEIL_COMMIT", "1a2b3c4")
    assert Settings().commit == "1a2b3c4"


def test_compose_services():
    compose = (ROOT / "docker-compose.yml").read_text()
    for service in ("postgres:", "migrate:", "api:", "worker:"):
        assert f"\n  {service}" in compose
    assert "image: postgres:16" in compose


def test_cli_openapi_and_keys(tmp_path, database):
    out = tmp_path / "openapi.json"
    env = {k: v for k, v in os.environ.items() if k != "VEIL_PLUGINS"}
    subprocess.run([sys.executable, "-m", "app", "openapi", "--output", str(out)], check=True,
                   env=env, cwd=ROOT, capture_output=True)
    assert json.loads(out.read_text())["info"]["title"] == "Veil"
    done = subprocess.run([sys.executable, "-m", "app", "keys", "create", "--tenant", "cli-t",
                           "--role", "analyst"], check=True, cwd=ROOT, capture_output=True, text=True)
    key = done.stdout.strip()
    assert key.startswith("veil_") and "shown once" in done.stderr
    from app.auth.service import authenticate
    from app.db import transaction

    with transaction() as s:
        principal = authenticate(s, f"Bearer {key}")
    assert principal.tenant == "cli-t" and principal.role.value == "analyst"


@pytest.mark.parametrize("args", [["keys", "create", "--tenant", "t"], ["nope"]])
def test_cli_rejects_bad_invocations(args):
    done = subprocess.run([sys.executable, "-m", "app", *args], cwd=ROOT, capture_output=True)
    assert done.returncode == 2


def test_the_image_alone_runs_workers_and_compose_runs_them_as_a_service():
    """`docker run <image>` used the compose API's command (`serve --workers 0`): a lone
    container queued jobs that no worker would run (operator audit)."""
    docker = (ROOT / "Dockerfile").read_text()
    assert re.search(r'^CMD \["veil", "serve"\]$', docker, re.M)
    compose = (ROOT / "docker-compose.yml").read_text()
    assert '["veil", "serve", "--workers", "0"]' in compose and '["veil", "worker"]' in compose
