"""What a release says of the profitability model (profitability.py): guarantee statements,
warnings and figures, all from the independent check's figures (verify_profitability.py) that
anonymize puts in the release's metadata."""

from __future__ import annotations


def profitability_statements(found: dict) -> list[str]:
    """What the release says of the profitability model, from the independent check's figures."""
    who = ("the population records its class matches (journalist)" if found["attacker"] == "journalist"
           else "the records its class releases (prosecutor)")
    game = (f"profitability (Wan et al. 2015): an adversary paying {found['adversary_cost']:g} per attempt "
            f"and earning {found['adversary_gain']:g} per re-identification succeeds on a record with "
            f"probability 1 / {who}, so attacking pays only in classes below {found['attack_threshold']:g} "
            "records")
    if found["no_attack"]:
        return [game + f"; no-attack variant: every released class has at least {found['derived_k']:g} such "
                "records (k-anonymity, or k-map for the journalist, with k = ⌈gain / cost⌉), so attacking "
                f"no released record pays (classes where it pays: {found['classes_attack_profitable']})",
                ECONOMIC]
    return [game + f"; every released class gives the publisher (benefit {found['publisher_benefit']:g} "
            f"per record, scaled by 1 − IL; loss {found['publisher_loss']:g} per re-identification) a "
            f"positive expected payout per record, at least {found['smallest_class_payout_per_record']:.6g}; "
            f"total expected payout {found['publisher_payout']:.6g} over {found['classes']} classes, "
            f"{found['records_suppressed_by_model']} records suppressed by the model, the attack paying "
            f"in {found['classes_attack_profitable']} released classes ({found['records_in_attacked_classes']} "
            "records) — recomputed from the released labels", ECONOMIC]


ECONOMIC = ("profitability is an economic model, not a formal privacy guarantee: it assumes a rational "
            "adversary with exactly these costs and gains; one with other motives, costs or background "
            "knowledge is not covered")


def profitability_warnings(found: dict) -> list[str]:
    if found["no_attack"] or not found["classes_attack_profitable"]:
        return []
    return [f"the payout model kept {found['classes_attack_profitable']} classes "
            f"({found['records_in_attacked_classes']} records) where the attack pays: the publisher's "
            "expected payout is positive there, but a rational adversary attacks those records, and the "
            "release is not stated private; use profitability.no_attack to keep none such"]


def profitability_figures(found: dict) -> dict:
    figures = {key: found[key] for key in ("attacker", "adversary_cost", "adversary_gain", "publisher_loss",
                                           "publisher_benefit", "no_attack", "attack_threshold",
                                           "publisher_payout", "classes_attack_profitable")}
    figures.update({key: found[key] for key in ("derived_k", "records_suppressed_by_model") if key in found})
    return {"profitability": figures}
