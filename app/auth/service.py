"""API keys: ``veil_<prefix>_<secret>``; stored as the SHA-256 of the whole key (the keys are
256-bit random, so a fast hash is enough), looked up by the public prefix."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import uuid
from typing import Any

from sqlalchemy.orm import Session

from app import pagination
from app.audit.service import record
from app.auth import repository
from app.auth.schemas import Principal, Role
from app.errors import Conflict, Forbidden, NotFound, Unauthorized, Unprocessable

_LISTED = ("id", "tenant", "role", "label", "prefix", "created_at", "revoked_at")


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def _prefix_of(key: str) -> str | None:
    if not key.startswith("veil_"):
        return None
    prefix, _, secret = key[5:].partition("_")
    return prefix if prefix and secret and len(prefix) <= 16 else None


def create_key(session: Session, *, tenant: str, role: Role, label: str | None = None,
               actor: str = "cli", key: str | None = None) -> tuple[uuid.UUID, str]:
    """Create a key and return (id, key). ``key`` may be given (the development key)."""
    if key is None:
        key = f"veil_{secrets.token_hex(6)}_{secrets.token_urlsafe(32)}"
    prefix = _prefix_of(key)
    if prefix is None:
        raise Unprocessable("an API key must look like veil_<prefix>_<secret>")
    key_id = uuid.uuid4()
    repository.insert_key(session, key_id=key_id, tenant=tenant, role=role.value, prefix=prefix,
                          key_hash=hash_key(key), label=label)
    record(session, tenant=tenant, actor=actor, action="key.created", subject_type="api_key",
           subject_id=str(key_id), details={"role": role.value, "label": label})
    return key_id, key


def ensure_key(session: Session, *, tenant: str, role: Role, key: str) -> None:
    """Make sure a given key exists (the development key set by VEIL_DEV_API_KEY)."""
    if repository.find_by_hash(session, hash_key(key)) is None:
        create_key(session, tenant=tenant, role=role, label="development key", key=key,
                   actor="system")


def _bearer_key(authorization: str) -> str | None:
    """The key of an ``Authorization: Bearer veil_<prefix>_<secret>`` header; None when the
    header cannot hold one (another scheme, another shape)."""
    scheme, _, key = authorization.partition(" ")
    key = key.strip()
    return key if scheme.lower() == "bearer" and _prefix_of(key) is not None else None


def refuse_malformed(authorization: str | None) -> None:
    """What can be refused without the database: no header, or one that holds no Veil key.
    Asked before a request body is read (app/deps.py), so neither gets the body's 422."""
    if not authorization:
        raise Unauthorized.missing_key()
    if _bearer_key(authorization) is None:
        raise Unauthorized.invalid_key()


def authenticate(session: Session, authorization: str | None) -> Principal:
    refuse_malformed(authorization)
    row = _row_of(session, _bearer_key(authorization))
    if row is None:
        raise Unauthorized.invalid_key()
    return Principal(key_id=row["id"], tenant=row["tenant"], role=Role(row["role"]))


def list_page(session: Session, *, tenant: str | None, cursor: str | None, limit: int) -> dict[str, Any]:
    rows = repository.list_page(session, tenant=tenant, after=pagination.decode(cursor), limit=limit)
    return pagination.page(rows, limit, lambda r: {k: r[k] for k in _LISTED})


def revoke_key(session: Session, key_id: uuid.UUID, *, actor: str) -> dict[str, Any]:
    """Revoke at once: authentication reads the key's row on every request."""
    row = repository.revoke(session, key_id)
    if row is None:
        existing = repository.get(session, key_id)
        if existing is None:
            raise NotFound(f"key {key_id} not found")
        raise Conflict(f"key {key_id} was already revoked at {existing['revoked_at'].isoformat()}")
    record(session, tenant=row["tenant"], actor=actor, action="key.revoked", subject_type="api_key",
           subject_id=str(key_id), details={"role": row["role"], "label": row["label"]})
    return {k: row[k] for k in _LISTED}


def key_id_of(session: Session, id_or_key: str) -> uuid.UUID:
    """A key's id from its id or from the whole key (what an operator holds when a key leaks)."""
    try:
        return uuid.UUID(id_or_key)
    except ValueError:
        pass
    row = _row_of(session, id_or_key.strip(), include_revoked=True)
    if row is None:
        raise NotFound("no such key: give a key id (veil keys list) or the whole key")
    return row["id"]


def _row_of(session: Session, key: str, *, include_revoked: bool = False):
    """The stored row of a whole key: found by its public prefix, matched by its hash."""
    prefix = _prefix_of(key)
    row = repository.find_by_prefix(session, prefix, include_revoked=include_revoked) if prefix else None
    return row if row is not None and hmac.compare_digest(row["key_hash"], hash_key(key)) else None


def tenant_scope(principal: Principal, asked: str | None) -> str | None:
    """The tenant a listing covers: an admin's choice (None: every tenant), else the caller's
    own — a non-admin naming another tenant is refused, not silently given their own."""
    if principal.role == Role.admin:
        return asked
    if asked is not None and asked != principal.tenant:
        raise Forbidden(f"only admins list other tenants; your key belongs to tenant {principal.tenant!r}")
    return principal.tenant
