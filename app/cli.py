"""The `veil` command: its parser and its dispatch. Each command's code lives beside its domain:
serve (app/serve.py), worker (app/worker/cli.py), migrate, restore-check and restore-accept
(app/ops/cli.py), backup and restore (app/ops/backup_cli.py), ledger debit (app/budgets/cli.py),
keys create|list|revoke (app/auth/cli.py), openapi and docs (app/docs_cli.py); what every command
checks before it starts is app/preflight.py.

Importing this module stays cheap: the forkservers preload it (app/worker/runner.py), and a process
started from the `veil` script runs it again as __mp_main__. So the command modules import only the
standard library, app.config and one another at their top; anything heavier is imported inside the
command."""

from __future__ import annotations

import argparse
import os
import sys

from app.auth.cli import cmd_keys_create, cmd_keys_list, cmd_keys_revoke
from app.budgets.cli import cmd_ledger_debit
from app.docs_cli import cmd_docs, cmd_openapi
from app.ops.backup_cli import cmd_backup, cmd_restore
from app.ops.cli import cmd_migrate, cmd_restore_accept, cmd_restore_check
from app.preflight import check_settings, import_plugins
from app.serve import cmd_serve
from app.worker.cli import cmd_worker


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="veil", description="Veil privacy service",
        epilog="Settings come from the environment: DATABASE_URL (unset: an embedded PostgreSQL in "
               "VEIL_DATA_DIR, default ./.veil), VEIL_HOST, VEIL_PORT, VEIL_LOG_LEVEL, the limits and "
               "the rest listed in README.md; a value that is not valid stops any command naming it.")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser(
        "serve", help="run the API and worker processes (embedded PostgreSQL unless DATABASE_URL is set)",
        description="Run the API (VEIL_API_PROCESSES processes, default 2, on VEIL_HOST:VEIL_PORT, "
                    "default 127.0.0.1:8000) and its worker processes, migrating the database first. "
                    "One veil serve per VEIL_DATA_DIR. SIGTERM or Ctrl-C: running jobs get "
                    "VEIL_WORKER_SHUTDOWN_GRACE_S (8 s) to finish, then are queued again.")
    serve.add_argument("--workers", type=_count, default=None,
                       help="worker processes (default VEIL_WORKERS, 2; 0 when workers run elsewhere)")
    serve.set_defaults(fn=cmd_serve)
    sub.add_parser("worker", help="run one worker process").set_defaults(fn=cmd_worker)
    sub.add_parser("migrate", help="apply database migrations").set_defaults(fn=cmd_migrate)
    backup = sub.add_parser("backup", help="write the whole database to a file (pg_dump's custom format)")
    backup.add_argument("file", help="a new file")
    backup.set_defaults(fn=cmd_backup)
    restore = sub.add_parser("restore", help="restore a `veil backup` file into an empty database "
                             "(a new VEIL_DATA_DIR), migrate it, and run the restore check")
    restore.add_argument("file")
    restore.set_defaults(fn=cmd_restore)
    check = sub.add_parser("restore-check", help="detect a restored database; exit status 2 while a restore "
                           "awaits acceptance (ε debits refused)")
    check.add_argument("--declare", action="store_true",
                       help="the database was restored from a physical copy (a copy of VEIL_DATA_DIR, a "
                            "volume snapshot), which cannot be detected: act as on a detected restore")
    check.set_defaults(fn=cmd_restore_check)
    accept = sub.add_parser("restore-accept", help="after a restore, once the ε lost is in the ledger "
                            "(veil ledger debit): allow ε debits again")
    accept.add_argument("--note", default=None, help="what was reconciled (recorded in the audit trail)")
    accept.set_defaults(fn=cmd_restore_accept)
    ledger = sub.add_parser("ledger", help="a dataset's ε ledger").add_subparsers(dest="ledger_command",
                                                                                  required=True)
    debit = ledger.add_parser(
        "debit", help="write ε spent but missing from the ledger (lost to a restore) as a reconciliation",
        description="Write ε that was spent but is missing from the ledger (spent after the backup a "
                    "database was restored from) as a `reconciliation` entry: counted as spent like a "
                    "debit, even past the cap (it was already spent: nothing then remains under the cap "
                    "until it is raised), also while a restore awaits acceptance; recorded as "
                    "budget.reconciled in the tenant's audit trail. It cannot be undone "
                    "(docs/reliability.md, Backup and restore).")
    debit.add_argument("--dataset", required=True, help="the dataset's id")
    debit.add_argument("--epsilon", required=True, help="the ε lost (a finite number more than 0)")
    debit.add_argument("--note", required=True, help="what was lost and how it is known (kept in the ledger "
                       "and the audit trail)")
    debit.add_argument("--job", default=None, help="the lost job's id, when known (an audit follower's "
                       "copy of its job.submitted event); refused if the ledger already holds its ε")
    debit.set_defaults(fn=cmd_ledger_debit)
    keys = sub.add_parser("keys", help="API keys").add_subparsers(dest="keys_command", required=True)
    create = keys.add_parser("create", help="create an API key and print it once")
    create.add_argument("--tenant", required=True, help="the tenant the key acts in (1-64 letters, digits, _ . -)")
    create.add_argument("--role", required=True, choices=["owner", "analyst", "admin"],
                        help="owner: data, jobs, budgets; analyst: releases, reports, models; "
                             "admin: operations across tenants and keys")
    create.add_argument("--label", default=None, help="a note shown by `veil keys list`")
    create.set_defaults(fn=cmd_keys_create)
    listing = keys.add_parser("list", help="list the keys (never their secrets), revoked ones included")
    listing.add_argument("--tenant", default=None, help="only this tenant's keys")
    listing.set_defaults(fn=cmd_keys_list)
    revoke = keys.add_parser("revoke", help="revoke a key at once, by its id or by the key itself")
    revoke.add_argument("key", help="the key's id (from `veil keys list`) or the whole key")
    revoke.set_defaults(fn=cmd_keys_revoke)
    api = sub.add_parser("openapi", help="write the OpenAPI document")
    api.add_argument("--output", default="openapi/openapi.json", help="where (default: openapi/openapi.json)")
    api.set_defaults(fn=cmd_openapi)
    docs = sub.add_parser("docs", help="regenerate the methods index of the docs from the registry "
                          "(Veil's own methods), or print one method's page")
    docs.add_argument("--method", metavar="NAME", help="print this method's page (parameters, guarantee, "
                      "an example job) generated from the registry, a VEIL_PLUGINS method's too, "
                      "instead of writing the index")
    docs.set_defaults(fn=cmd_docs)
    return parser


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


_APPLICATION_NAMES = {"serve": "veil-api", "worker": "veil-worker", "cli": "veil-cli"}  # "cli": every other command


def main(argv: list[str] | None = None) -> None:
    from psycopg.errors import UndefinedTable
    from sqlalchemy.exc import OperationalError, ProgrammingError

    args = build_parser().parse_args(argv)
    check_settings()
    if args.command in ("serve", "worker") and os.environ.get("VEIL_PLUGINS", "").strip(" ,"):
        import_plugins(args.command)
    # which part of Veil a connection belongs to, in pg_stat_activity (libpq reads PGAPPNAME).
    # An operator's own name is kept; one of ours is inherited (`veil serve` starts its
    # workers, a test process ran a command in-process) and replaced by this command's.
    if os.environ.get("PGAPPNAME") in (None, "", *_APPLICATION_NAMES.values()):
        os.environ["PGAPPNAME"] = _APPLICATION_NAMES.get(args.command, _APPLICATION_NAMES["cli"])
    try:
        args.fn(args)
    except ImportError as exc:  # a VEIL_PLUGINS module that fails to import (openapi, docs): one line
        registry = sys.modules.get("app.privacy.registry")
        if registry is None or not isinstance(exc, registry.PluginError):
            raise
        raise SystemExit(f"veil: {exc}") from None
    except (OperationalError, ProgrammingError) as exc:
        command = " ".join(filter(None, (args.command, getattr(args, "keys_command", None),
                                         getattr(args, "ledger_command", None))))
        if isinstance(exc.orig, UndefinedTable):  # a new data directory or database
            raise SystemExit(f"veil {command}: the database has no Veil tables yet: run `veil migrate` "
                             "(or `veil serve`, which migrates) first") from None
        if isinstance(exc, ProgrammingError):
            raise
        reason = str(exc.orig or exc).strip().splitlines()[0]  # which server and why, never a password
        raise SystemExit(f"veil {command}: the database cannot be reached: {reason}") from None


if __name__ == "__main__":
    main()
