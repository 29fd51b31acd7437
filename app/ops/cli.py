"""`veil migrate`, `veil restore-check` and `veil restore-accept`, and the restore check every
start runs (app/ops/restore.py): what the operator is told while a restore awaits acceptance."""

from __future__ import annotations

import sys

from app.database_ready import database_ready


RESTORE_ADVICE = ("ε spent after the backup is NOT in the ledger, so every ε debit is refused (409) until "
                  "the ε spent since is written into the ledger (`veil ledger debit`) and the restore "
                  "accepted: `veil restore-accept --note ...` (docs/reliability.md, Backup and restore)")


def run_restore_check(declared: bool = False) -> dict | None:
    """The restore check (app/ops/restore.py), before any job runs; says so loudly on stderr."""
    from app.db import transaction
    from app.ops import restore

    with transaction() as session:
        found = restore.check(session, declared=declared)
    if found is not None:
        failed = found["jobs_failed"]
        print(f"veil: this database was RESTORED FROM A BACKUP whose last event is at "
              f"{found['backup_last_event']['at']} (detected {found['detected_at']}); "
              f"{len(failed)} job(s) queued or running at the backup failed as `restored`, their ε kept. "
              + RESTORE_ADVICE, file=sys.stderr, flush=True)
    return found


def cmd_migrate(_args) -> None:
    from app.db import get_engine
    from app.migrate import current_revision, upgrade

    database_ready(owner=True)  # no PostgreSQL left running after it
    before = current_revision(get_engine())
    upgrade()
    after = current_revision(get_engine())
    print(f"already at migration {after}: nothing to do" if before == after
          else f"migrated from {before or 'an empty database'} to {after}")
    run_restore_check()


def cmd_restore_check(args) -> None:
    from app.migrate import upgrade

    database_ready(owner=True)
    upgrade()
    if run_restore_check(declared=args.declare) is None:
        # declared, and still none: the trail is empty (restore.check), so nothing was ever
        # uploaded or released from this database — it said "no restore awaits" as if the
        # declaration had been ignored
        print("this database holds no audit event: nothing was uploaded or released from it, so there is "
              "nothing to freeze; ε debits are allowed" if args.declare
              else "no restore awaits acceptance: ε debits are allowed")
        return
    raise SystemExit(2)


def cmd_restore_accept(args) -> None:
    from app.db import transaction
    from app.ops import restore

    database_ready(owner=True)
    with transaction() as session:
        accepted = restore.accept(session, actor="cli", note=args.note)
    if accepted is None:
        raise SystemExit("veil restore-accept: no restore awaits acceptance")
    print(f"accepted the restore of the backup whose last event is at {accepted['backup_last_event']['at']}: "
          "ε debits are allowed again (recorded as service.restore_accepted in every tenant's trail)")
