"""The releases experiment_dp_release compares: each built-in release's registered method and
parameters (privbayes' degree fitted to the task's width), the releaser that runs it, the
submission check that each is feasible at the grid's ε, the ε a job of each would be debited and
what each guarantees. Separate from dp_release.py (the protocol and its report) because the
benchmarks add peer releasers beside these and re-draw the figures with the debits.
"""

from __future__ import annotations

import typing
from collections.abc import Callable

import pandas as pd

import app.privacy.dp_release.aim  # noqa: F401  (registers the compared methods)
import app.privacy.dp_release.dppro  # noqa: F401
import app.privacy.dp_release.icahdp  # noqa: F401
import app.privacy.dp_release.mst  # noqa: F401
import app.privacy.dp_release.privbayes  # noqa: F401
from app.privacy import registry
from app.privacy.context import RunContext
from app.privacy.data import MethodInput
from app.privacy.dp_release.privbayes_network import fitting_degree
from app.privacy.experiments.dp_release_tasks import task_columns
from app.privacy.registry import MethodInputError

if typing.TYPE_CHECKING:
    from app.privacy.experiments.dp_release import ExperimentDpReleaseParams

EPSILON_CEILING = 100.0  # the grid's largest ε, the methods' own ceiling


# a release of the data at ε; the context carries its randomness (ctx.rng), the experiment's
# cancel and memory limit, and its share of the experiment's progress
Releaser = Callable[[MethodInput, float, RunContext], pd.DataFrame]


# each compared release: the registered method and the parameters it runs with besides ε
RELEASES: dict[str, tuple[str, dict]] = {
    "icahdp_strict": ("icahdp", {"mode": "strict"}),
    "icahdp_paper": ("icahdp", {"mode": "paper"}),
    "dppro": ("dppro", {}),
    "mst": ("mst", {}),
    "aim": ("aim", {}),
    # ε stated under add/remove-one neighbours (the MST/AIM papers' and smartnoise's relation):
    # like-for-like with those peers; a job would be debited the replace-one ε' (``debits``)
    "mst_add_remove": ("mst", {"neighbouring": "add_remove"}),
    "aim_add_remove": ("aim", {"neighbouring": "add_remove"}),
    # pure ε-DP (δ = 0), replace-one; and under add/remove (DataSynthesizer's marginal noise)
    "privbayes": ("privbayes", {}),
    "privbayes_add_remove": ("privbayes", {"neighbouring": "add_remove"}),
}


def _privbayes_degree(columns: int) -> dict:
    default = registry.get("privbayes").params.model_fields["degree"].default
    return {"degree": fitting_degree(columns, default)}


# a release's params that depend on the task's width (a release's own `extra` wins): privbayes
# at the largest degree ≤ its default whose candidate parent sets are within its limit (degree 1
# on CoIL's 85–86 columns, where degree 2 is refused)
BY_WIDTH: dict[str, Callable[[int], dict]] = {"privbayes": _privbayes_degree,
                                              "privbayes_add_remove": _privbayes_degree}


def fitted(name: str, extra: dict, columns: int) -> dict:
    """Release ``name``'s params besides ε on a table of ``columns`` columns."""
    return {**BY_WIDTH[name](columns), **extra} if name in BY_WIDTH else extra


def builtin_releasers() -> dict[str, Releaser]:
    def releaser(name: str, method: str, extra: dict) -> Releaser:
        spec = registry.get(method)
        return lambda data, eps, ctx: spec.run(
            data, spec.params(epsilon=eps, **fitted(name, extra, len(data.columns))), ctx).frame
    return {name: releaser(name, method, extra) for name, (method, extra) in RELEASES.items()}


def _built_in_releases(params: ExperimentDpReleaseParams):
    """(task, release name, its method's spec, that spec's params besides ε) for every built-in
    release the params choose on every task."""
    for task in params.tasks:
        for name in params.methods:
            if name in RELEASES:
                method, extra = RELEASES[name]
                yield task, name, registry.get(method), fitted(name, extra, len(task_columns(task)))


def check_epsilons(params: ExperimentDpReleaseParams, columns, source) -> None:
    """Each release must be feasible at the grid's smallest ε on each task (feasibility only
    grows with ε): a too-small ε otherwise failed the job at its first release, after the
    releases before it had run. The methods' own submission checks decide."""
    smallest = min(params.epsilons)
    for task, name, spec, extra in _built_in_releases(params):
        columns = list(task_columns(task))
        try:
            spec.check(spec.params(epsilon=smallest, **extra), columns, None)
        except MethodInputError as e:
            try:  # refused at the largest ε a grid may hold too: not the grid's doing
                spec.check(spec.params(epsilon=EPSILON_CEILING, **extra), columns, None)
            except MethodInputError:
                raise MethodInputError(f"methods: {name} cannot run on task {task!r}: {e}") from None
            raise MethodInputError(f"epsilons: {name} on task {task!r} at ε = {smallest:g}: "
                                   f"{e}") from None


def debits(params: ExperimentDpReleaseParams) -> pd.DataFrame:
    """Per task, built-in release and ε of the grid: the relation its ε is stated under and the
    ε a job of it would be debited — Veil's budget counts replace-one ε, so an add/remove
    variant's is its plan's replace-one ε' (the method's own pricing, no data read); the
    experiment's releases run on the public datasets and debit nothing."""
    rows = [{"task": task, "method": name, "epsilon": eps,
             "neighbouring": extra.get("neighbouring", "replace_one"),
             "epsilon_replace_one": spec.epsilon_cost(spec.params(epsilon=eps, **extra), list(task_columns(task)))}
            for task, name, spec, extra in _built_in_releases(params) for eps in params.epsilons]
    return pd.DataFrame(rows, columns=["task", "method", "epsilon", "neighbouring", "epsilon_replace_one"])


def add_remove_note(debited: pd.DataFrame, labels: dict[str, str]) -> str | None:
    """What the x axis means for the add/remove variants in ``debited`` (``debits``' rows of
    one task), or None when none ran."""
    parts = debited[debited["neighbouring"] == "add_remove"]
    if parts.empty:
        return None
    ratios = []
    for method, part in parts.groupby("method", sort=False):
        r = part["epsilon_replace_one"] / part["epsilon"]
        span = f"{r.min():.2f}" if f"{r.min():.2f}" == f"{r.max():.2f}" else f"{r.min():.2f}–{r.max():.2f}"
        ratios.append(f"{span}·ε for {labels.get(method, method)}")
    return ("ε of the (add/remove) series is stated under add/remove-one neighbours (the papers' "
            "and smartnoise's); a job of theirs would be debited the replace-one ε': " + ", ".join(ratios)
            + "; the other Veil series are replace-one")


def release_guarantees(methods) -> dict[str, str]:
    """What each built-in release promises at the ε of its row (its registered guarantee, mode
    and default δ); the runs themselves are evaluations, their releases are discarded."""
    out = {}
    for name in methods:
        if name not in RELEASES:
            continue
        method, extra = RELEASES[name]
        spec = registry.get(method)
        delta = spec.params.model_fields.get("delta")
        out[name] = "; ".join([f"{method} {extra}" if extra else method, spec.guarantee]
                              + ([f"δ = {delta.default:g}"] if delta is not None else []))
    return out
