"""`veil ledger debit`: ε spent but missing from a dataset's ledger (lost to a restore) written
into it as a reconciliation entry (app/budgets/service.py reconcile)."""

from __future__ import annotations

from app.database_ready import database_ready


def cmd_ledger_debit(args) -> None:
    """Write ε spent but missing from the ledger (lost to a restore) as a reconciliation entry."""
    import math
    import uuid

    from app.budgets import service as budgets
    from app.db import get_engine, transaction
    from app.errors import VeilError
    from app.migrate import schema_mismatch
    from app.ops import restore

    def given_id(option: str, value: str, what: str):
        try:
            return uuid.UUID(value)
        except ValueError:
            raise SystemExit(f"veil ledger debit: --{option}: not a {what} id: {value!r}") from None

    dataset_id = given_id("dataset", args.dataset, "dataset")
    job_id = None if args.job is None else given_id("job", args.job, "job")
    try:
        epsilon = float(args.epsilon)
    except ValueError:
        epsilon = math.nan
    refused = budgets.reconciliation_refusal(epsilon, args.note)
    if refused is not None:  # before anything starts
        shown = f", not {args.epsilon!r}" if refused[0] == "epsilon" else ""
        raise SystemExit(f"veil ledger debit: --{refused[0]}: {refused[1]}{shown}")
    database_ready(owner=True)  # no PostgreSQL left running after it
    problem = schema_mismatch(get_engine())  # a ledger of 0010 has no column for a reconciliation
    if problem is not None:
        raise SystemExit(f"veil ledger debit: {problem}")
    try:
        with transaction() as session:
            done = budgets.reconcile(session, dataset_id=dataset_id, epsilon=epsilon, note=args.note,
                                     job_id=job_id, actor="cli")
            frozen = restore.pending(session)
    except VeilError as exc:
        raise SystemExit(f"veil ledger debit: {exc.detail}") from None
    spent, cap = done["epsilon_spent"], done["epsilon_total"]
    if cap is None:
        left = "no cap"
    elif spent > cap:
        left = (f"past its cap of {cap:g} by {spent - cap:.6g}: nothing remains, every debit is refused "
                f"until the cap is raised (PUT /v1/datasets/{dataset_id}/budget)")
    else:
        left = f"{done['epsilon_remaining']:.6g} of its cap of {cap:g} remains"
    print(f"wrote ε = {epsilon:g} into the ledger of dataset {dataset_id} (tenant {done['tenant']}) as a "
          f"reconciliation: spent {spent:.6g}, {left}; recorded as budget.reconciled in the tenant's trail"
          + ("; ε debits stay refused until `veil restore-accept`" if frozen else ""))
