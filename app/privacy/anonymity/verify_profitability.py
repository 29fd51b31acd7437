"""The independent check of the profitability model (profitability.py) on a released table, run
before the release is returned: it reads the released strings only — classes by their released
quasi-identifier values, each label's coverage parsed from its text (verify_population's
``label_cover``), the journalist's population counts from the population's raw values — never
the lattice's classes or costs, and recomputes every class's IL, the attack's profitability and
the publisher's payout. A release that fails is a :class:`VerificationError`, never a result."""

from __future__ import annotations

import numpy as np
import pandas as pd

from app.privacy.anonymity.profitability import CostBenefit
from app.privacy.anonymity.verify import VerificationError, equivalence_classes, first_of, joint_ids
from app.privacy.anonymity.verify_population import LabelCover
from app.privacy.registry import MethodInputError


def verify_profitability(released: pd.DataFrame, quasi_identifiers: list[str],
                         covers: dict[str, LabelCover], cost_benefit: CostBenefit) -> dict:
    """The model's figures on ``released`` (the publisher's total payout, the classes where the
    attack pays, the smallest payout per record); raises VerificationError when a released class
    is one the model drops (payout ≤ 0; no-attack: the attack pays). ``covers``' codes are the
    population's (the whole table's) values, which the journalist's class sizes count."""
    cb = cost_benefit
    ids = equivalence_classes(released, quasi_identifiers)
    n_c = int(ids.max()) + 1 if len(ids) else 0
    released_sizes = np.bincount(ids, minlength=n_c)
    first = first_of(ids, n_c)
    log_cover = np.zeros(n_c)
    log_domain = 0.0
    class_labels: list[tuple[np.ndarray, int]] = []
    population_labels: list[tuple[np.ndarray, int]] = []
    for q in quasi_identifiers:
        cover = covers[q]
        local, labels = pd.factorize(released[q].astype(str))
        spans = [cover.spans(label) for label in labels]
        covered = np.array([int((s[:, 1] - s[:, 0]).sum()) for s in spans], dtype=np.int64)
        if (covered == 0).any():
            raise VerificationError(f"release failed its independent check: a label of {q!r} covers no value")
        log_cover += np.log(covered)[local[first]]
        log_domain += float(np.log(cover.domain))
        class_labels.append((local[first].astype(np.int64), len(labels) + 1))
        if cb.attacker == "journalist":
            population_labels.append((_label_of_value(q, cover, spans, len(labels)), len(labels) + 1))
    il = np.clip(log_cover / log_domain, 0.0, 1.0) if log_domain > 0 else np.zeros(n_c)
    if cb.attacker == "journalist":  # the population records each released class's labels cover
        both = joint_ids([(np.r_[c, p], k) for (c, k), (p, _) in zip(class_labels, population_labels)],
                         n_c + len(population_labels[0][0]))
        sizes = np.bincount(both[n_c:], minlength=int(both.max()) + 1)[both[:n_c]]
        if n_c and (sizes < released_sizes).any():
            raise VerificationError("release failed its independent check: a class's labels cover fewer "
                                    "population records than it releases")
    else:
        sizes = released_sizes
    attacked = cb.attacked(sizes)
    payout = cb.payout(il, sizes)  # per record of each class
    failures = []
    if cb.no_attack and attacked.any():
        failures.append(f"{int(attacked.sum())} released classes are smaller than {cb.attack_threshold:g}, "
                        "where the attack pays")
    if not cb.no_attack and (payout <= 0).any():
        failures.append(f"{int((payout <= 0).sum())} released classes give the publisher a payout of "
                        f"{float(payout.min()):.6g} or less per record, not above 0")
    if failures:
        raise VerificationError("release failed its independent check (profitability): " + "; ".join(failures))
    return {
        "publisher_payout": float((payout * released_sizes).sum()),
        "publisher_payout_per_record": float((payout * released_sizes).sum() / len(ids)) if len(ids) else 0.0,
        "smallest_class_payout_per_record": float(payout.min()) if n_c else None,
        "classes": n_c,
        "classes_attack_profitable": int(attacked.sum()),
        "records_in_attacked_classes": int(released_sizes[attacked].sum()),
        "mean_information_loss": float((il * released_sizes).sum() / len(ids)) if len(ids) else 0.0,
        "success_size": "population records of the class" if cb.attacker == "journalist"
                        else "released records of the class",
    }


def _label_of_value(q: str, cover: LabelCover, spans: list[np.ndarray], n_labels: int) -> np.ndarray:
    """Per population record, the released label of ``q`` covering its value (``n_labels`` when
    none does). Two labels covering one value leave the population counts ambiguous: refused."""
    owner = np.full(cover.domain, n_labels, dtype=np.int64)
    hits = np.zeros(cover.domain, dtype=np.int64)
    for label, ranges in enumerate(spans):
        for a, b in ranges:
            owner[a:b] = label
            hits[a:b] += 1
    if (hits > 1).any():
        raise MethodInputError(
            f"the independent check counts the population records of each released class for the journalist "
            f"attacker, and two released labels of {q!r} cover a common value (a hierarchy with two nodes of "
            "one name?): give the hierarchy's nodes distinct names")
    return owner[np.asarray(cover.codes, dtype=np.int64)]


def ambiguous_names(table: pd.DataFrame) -> list[str]:
    """The names that label nodes of two levels of an uploaded hierarchy (ARX-shaped frame,
    level_0 the leaves) covering different leaves ('a;G;H;*' and 'b;K;G;*': G is a's parent and
    b's grandparent). The check reads a released label's cover from its text alone, as the union
    of every node so named, so such a label's IL (and the journalist's counts) would be read
    wrong and a sound release fail as an internal error: refused before, on the hierarchy alone."""
    rows = table.to_numpy(dtype=object)
    if rows.size == 0:
        return []
    long = pd.DataFrame({"name": rows.T.ravel().astype(str), "level": np.repeat(np.arange(rows.shape[1]), len(rows)),
                         "row": np.tile(np.arange(len(rows)), rows.shape[1])})
    levels = long.groupby("name")["level"].nunique()
    several = long[long["name"].isin(levels.index[levels > 1])]
    if several.empty:
        return []
    covers = several.groupby(["name", "level"])["row"].agg(frozenset)
    distinct = covers.groupby(level="name").nunique()
    return sorted(distinct.index[distinct > 1].tolist())


def refuse_ambiguous_names(hierarchies: dict[str, pd.DataFrame]) -> None:
    """A MethodInputError naming each column whose hierarchy has ambiguous_names (the
    profitability model's check could not read its labels)."""
    for column, table in hierarchies.items():
        names = ambiguous_names(table)
        if names:
            shown = ", ".join(repr(n) for n in names[:5]) + (f" (and {len(names) - 5} more)" if len(names) > 5 else "")
            raise MethodInputError(
                f"hierarchy of column {column!r}: {len(names)} name(s) label nodes of two levels that cover "
                f"different values ({shown}); the profitability model's check reads a released label's values "
                "from its name alone, so it could not tell those nodes apart: give the nodes distinct names")
