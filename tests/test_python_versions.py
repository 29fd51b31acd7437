"""The Python versions Veil supports are said in four places that must agree: pyproject.toml's
requires-python (pip refuses another), the Makefile's PYTHONS (`make install`, and so `make
run` and `make test`, refuses another before it makes the venv), the README, and the image's
base. 3.13 is out: pgserver 0.1.4, the embedded PostgreSQL, publishes wheels for 3.9-3.12
only and no sdist — pip found no version of it and failed (after 30 s of downloads)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _makefile_pythons() -> list[str]:
    found = re.search(r"^PYTHONS := (.+)$", (ROOT / "Makefile").read_text(), re.M)
    assert found, "the Makefile names the supported Python versions in PYTHONS"
    return found.group(1).split()


def test_requires_python_the_makefile_the_readme_and_the_image_agree():
    versions = _makefile_pythons()
    minors = [int(v.removeprefix("3.")) for v in versions]
    assert versions == [f"3.{m}" for m in range(minors[0], minors[-1] + 1)]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["requires-python"] == f">={versions[0]},<3.{minors[-1] + 1}"
    said = ", ".join(versions[:-1]) + " or " + versions[-1]
    assert f"Python {said}" in (ROOT / "README.md").read_text()
    bases = re.findall(r"^FROM python:(\d+\.\d+)", (ROOT / "Dockerfile").read_text(), re.M)
    assert bases and set(bases) <= set(versions)
    assert "%d.%d" % sys.version_info[:2] in versions, "the suite runs under a supported Python"


def _fake_python(path: Path, version: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho {version}\n")
    path.chmod(0o755)
    return path


def _check(**variables: str) -> subprocess.CompletedProcess:
    args = [f"{k}={v}" for k, v in variables.items()]
    return subprocess.run(["make", "-s", "-C", str(ROOT), "check-python", *args],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_make_refuses_an_unsupported_python_before_making_the_venv(tmp_path):
    venv = tmp_path / "venv"
    for version in _makefile_pythons():
        python = _fake_python(tmp_path / f"python{version}", version)
        assert _check(PYTHON=str(python), VENV=str(venv)).returncode == 0
    python = _fake_python(tmp_path / "python3.13", "3.13")
    done = _check(PYTHON=str(python), VENV=str(venv))
    assert done.returncode != 0
    assert f"{python} is Python 3.13; Veil supports Python {' '.join(_makefile_pythons())}" in done.stderr
    assert "PYTHON=python" in done.stderr
    assert not venv.exists()
    done = _check(PYTHON=str(tmp_path / "nowhere"), VENV=str(venv))
    assert done.returncode != 0 and "no such Python" in done.stderr


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_make_refuses_a_venv_made_with_an_unsupported_python(tmp_path):
    """A venv left by an earlier attempt is used as it is (`test -x .venv/bin/python`): its
    interpreter is the one checked, and the message says to remove it."""
    venv = tmp_path / "venv"
    _fake_python(venv / "bin" / "python", "3.13")
    good = _fake_python(tmp_path / "python3.12", _makefile_pythons()[-1])
    done = _check(PYTHON=str(good), VENV=str(venv))
    assert done.returncode != 0
    assert f"{venv}/bin/python is Python 3.13" in done.stderr
    assert f"{venv} was made with it: rm -r {venv}" in done.stderr
