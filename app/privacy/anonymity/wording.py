"""Figures in words: a figure stated as a bound is rounded the safe way, and a strict bound's
figure is printed below the bound printed beside it (guarantee statements, error messages)."""

from __future__ import annotations

from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal


def rounded(value: float, *, down: bool, places: int = 4) -> str:
    """``value`` at ``places`` decimals, rounded down for a lower bound ('at least') and up for
    an upper bound ('at most'): α = 1/3 is at most 0.3334, not 0.3333. The figure is first read
    at 12 significant digits, so a gain of 2 computed as 2.0000000000000004 stays 2.0000."""
    return str(Decimal(f"{float(value):.12g}").quantize(
        Decimal(1).scaleb(-places), rounding=ROUND_FLOOR if down else ROUND_CEILING))


def as_given(bound: float) -> str:
    """A parameter as the job gave it: 6 digits when they are exact, else every digit (δ = ln 2
    must not read 0.693147 beside a figure of 0.69314718)."""
    short = f"{bound:g}"
    return short if float(short) == bound else repr(float(bound))


def below(value: float, bound: float) -> str:
    """A figure strictly below ``bound`` (recursive c, δ-disclosure), rounded up to 10
    significant digits — more when those reach the bound: 1.99996 below 2 is not '2.0000'."""
    exact = Decimal(repr(float(value)))
    if not exact.is_finite() or exact == 0:
        return f"{value:g}"
    limit = Decimal(repr(float(bound)))
    for digits in range(10, 18):
        shown = exact.quantize(Decimal(1).scaleb(exact.adjusted() - digits + 1), rounding=ROUND_CEILING)
        if shown < limit:
            break
    return f"{shown.normalize():f}"


def probability_at_most(p: float) -> str:
    """'at most p' for a tail probability, rounded UP to 3 significant digits (1.2344e-5 is at
    most 1.24e-05, not 1.23e-05); a tail that underflowed to 0 in double precision is not 0 — the
    model's tail is below the smallest double — and reads 'below 1e-300', as does a denormal one."""
    if not p >= 1e-300:  # underflowed, or denormal (few digits left): a true statement either way
        return "below 1e-300"
    exact = Decimal(repr(float(p)))
    shown = exact.quantize(Decimal(1).scaleb(exact.adjusted() - 2), rounding=ROUND_CEILING)
    return f"at most {float(shown):.3g}"
