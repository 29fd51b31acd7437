"""The development key is an embedded-mode convenience (security acceptance check): with an
external database (`docker compose`, production) `veil serve` minted an owner key of tenant
dev at every start of a new container, never revoked, and printed it to the logs."""

from __future__ import annotations

import stat
from types import SimpleNamespace

from app.serve import _dev_key


def test_an_external_database_gets_no_development_key_unless_one_is_named(tmp_path):
    settings = SimpleNamespace(dev_api_key=None, data_dir=tmp_path)
    assert _dev_key(settings, embedded=False) is None
    assert not (tmp_path / "dev_api_key").exists()
    named = SimpleNamespace(dev_api_key="veil_abc_secret", data_dir=tmp_path)
    assert _dev_key(named, embedded=False) == "veil_abc_secret"


def test_embedded_mode_makes_one_key_and_keeps_it_private(tmp_path):
    settings = SimpleNamespace(dev_api_key=None, data_dir=tmp_path)
    key = _dev_key(settings, embedded=True)
    assert key.startswith("veil_") and _dev_key(settings, embedded=True) == key
    assert stat.S_IMODE((tmp_path / "dev_api_key").stat().st_mode) == 0o600
