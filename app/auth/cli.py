"""`veil keys create`, `veil keys list` and `veil keys revoke`: API keys from the command line,
checked by the rules of POST /v1/keys."""

from __future__ import annotations

import sys

from app.database_ready import database_ready


def cmd_keys_create(args) -> None:
    from pydantic import ValidationError

    from app.auth.schemas import KeyCreate, Role
    from app.auth.service import create_key
    from app.db import transaction

    try:  # the rules of POST /v1/keys: an empty tenant or one of 65+ characters got through
        KeyCreate(tenant=args.tenant, role=args.role, label=args.label)
    except ValidationError as exc:
        error = exc.errors()[0]
        raise SystemExit(f"veil keys create: --{error['loc'][0]}: {error['msg']}") from None
    database_ready(owner=True)  # no PostgreSQL left running after it
    with transaction() as session:
        key_id, key = create_key(session, tenant=args.tenant, role=Role(args.role), label=args.label)
    print(key)
    print(f"(key id {key_id}, tenant {args.tenant}, role {args.role}; shown once, stored hashed)",
          file=sys.stderr)


def cmd_keys_list(args) -> None:
    from app.auth.service import list_page
    from app.db import transaction

    database_ready(owner=True)  # no PostgreSQL left running after it
    cursor = None
    with transaction() as session:
        while True:
            page = list_page(session, tenant=args.tenant, cursor=cursor, limit=200)
            if cursor is None:  # once the database answered: a failure prints no header on stdout
                print(f"{'id':<36}  {'key (prefix)':<23}  {'tenant':<20} {'role':<8} {'state':<24} label")
            for k in page["items"]:
                state = f"revoked {k['revoked_at']:%Y-%m-%d %H:%M}" if k["revoked_at"] else "active"
                shown = f"veil_{k['prefix']}_…"  # a prefix has 1-16 characters
                print(f"{k['id']}  {shown:<23}  {k['tenant']:<20} {k['role']:<8} {state:<24} "
                      f"{k['label'] or ''}")
            if not (cursor := page["next"]):
                break


def cmd_keys_revoke(args) -> None:
    """By key id, or by the key itself (a leaked key: its public prefix finds it)."""
    from app.auth.service import key_id_of, revoke_key
    from app.db import transaction
    from app.errors import VeilError

    database_ready(owner=True)  # no PostgreSQL left running after it
    try:
        with transaction() as session:
            info = revoke_key(session, key_id_of(session, args.key), actor="cli")
    except VeilError as exc:
        sys.exit(f"veil keys revoke: {exc.detail}")
    print(f"revoked key {info['id']} (tenant {info['tenant']}, role {info['role']})")
