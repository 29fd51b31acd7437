"""The randomized response mechanism on integer codes (ERRPH's keep-or-publish, whose
thresholds Warner shares): ``randomize_codes``, the local ε it is asked for and the one it
delivers (``local_epsilon``, ``realized_segments``, ``delivered_epsilon``, ``epsilon_bound``),
the unbiased estimate and the breach probability. Moved out of randomized_response.py, which
re-exports these names."""

from __future__ import annotations

import functools
import math

import numpy as np

from app.privacy.rng import SecureRandom
from app.privacy.rr_coding import code_dtype

_SCALE = 2.0**32
CHUNK = 1 << 16  # cells per chunk: keeps the random words and the codes in L2 cache


def probability_threshold(prob: float) -> np.uint32:
    return np.uint32(min(max(round(prob * _SCALE), 0), _SCALE - 1))


def keeps_no_cell(p0: float) -> bool:
    """p0 within 2^-33 of 0: its keep threshold is 0, no cell is ever kept (pure noise)."""
    return int(probability_threshold(p0)) == 0


def flips_as_a_coin(p: float) -> bool:
    """A keep probability p within 2^-33 of 1/2: the flip threshold is exactly 2^31 (pure noise)."""
    return int(probability_threshold(1.0 - p)) == 2**31


def randomize_codes(codes: np.ndarray, p0: float, p: np.ndarray, rng: SecureRandom) -> np.ndarray:
    """ERRPH on integer codes in [0, k): keep with probability p0, else publish j w.p. p[j].

    [0, 2^32) is cut into [0, T0) (keep) followed by one segment per value; one uint32 per
    cell picks the segment. Uniform p_j: the segment is floor((u - T0)·k / (2^32 - T0)), one
    multiplication; otherwise k comparisons (small k) or a binary search. Probabilities are
    realized to within 2^-32 per segment boundary. p0 = 1 keeps every cell. A code < 0 (a
    missing cell left out) may come out as a value: the caller restores it.
    """
    k = len(p)
    dtype = code_dtype(k + 1)
    codes = codes.astype(dtype, copy=False)
    if p0 >= 1.0:
        return codes.copy()
    edges = np.array([probability_threshold(p0 + s) for s in np.concatenate([[0.0], np.cumsum(p)[:-1]])],
                     dtype=np.uint32)
    uniform = bool(np.all(p == p[0]))
    keep_below = edges[0]
    width = k / (_SCALE - float(keep_below))
    last = _last_positive(p)
    out = np.empty(len(codes), dtype=dtype)
    for start in range(0, len(codes), CHUNK):
        stop = min(start + CHUNK, len(codes))
        u = rng.uint32(stop - start)
        if uniform:
            # (u - T0) wraps for kept cells; their value is discarded by the where below
            drawn = ((u - keep_below).astype(np.float64) * width).astype(dtype)
            np.copyto(out[start:stop], np.where(u < keep_below, codes[start:stop], drawn))
            continue
        if k <= 16:
            # k comparisons over the chunk beat a binary search per cell for small domains.
            segment = (u >= edges[0]).astype(dtype)
            for edge in edges[1:]:
                segment += u >= edge
        else:
            segment = np.searchsorted(edges, u, side="right").astype(dtype)
        segment -= 1  # -1 = keep, j = publish value j
        if last < k - 1:  # trailing p_j = 0: the capped top edge (2^32 - 1) would give them a word
            np.minimum(segment, last, out=segment)
        np.copyto(out[start:stop], np.where(segment < 0, codes[start:stop], segment))
    return out


def _last_positive(p: np.ndarray) -> int:
    """The last value with p_j > 0: it takes the top of [0, 2^32), so a value asked at p_j = 0
    after it is never published (a threshold for probability 1 is capped at 2^32 - 1)."""
    positive = np.flatnonzero(np.asarray(p) > 0)
    return int(positive[-1]) if positive.size else len(p) - 1


def local_epsilon(p0: float, p: np.ndarray) -> float:
    """max_j ln((p0 + p_j) / p_j): the local-DP level of one attribute (∞ if some p_j = 0)."""
    p = np.asarray(p, dtype=float)
    if np.any(p <= 0):
        return math.inf
    # a difference of logs: the ratio overflowed to ∞ (with a RuntimeWarning) for a p_j below
    # ~1e-308, ln(0.05 / 2.1e-312) being 714.66
    return float(np.max(np.log(p0 + p) - np.log(p)))


def realized_segments(p0: float, p: np.ndarray) -> tuple[int, np.ndarray]:
    """(T0, c): how many of the 2^32 words ``randomize_codes`` keeps the cell for, and how many
    publish value j — the probabilities it actually realizes, p0' = T0/2^32, p_j' = c_j/2^32.
    Explicit p_j: the widths of the threshold segments. Uniform p_j: the words of the keep
    complement [0, N) that floor(d·k/N) sends to j, boundaries found by bisection (the map is
    monotone in d)."""
    p = np.asarray(p, dtype=float)
    k = len(p)
    if p0 >= 1.0:
        return 2**32, np.zeros(k, dtype=np.int64)
    edges = np.array([probability_threshold(p0 + s) for s in np.concatenate([[0.0], np.cumsum(p)[:-1]])],
                     dtype=np.int64)
    keep = int(edges[0])
    if not np.all(p == p[0]):
        counts = np.diff(np.append(edges, 2**32))
        last = _last_positive(p)
        counts[last] += counts[last + 1:].sum()  # randomize_codes folds the trailing zeros' word
        counts[last + 1:] = 0
        return keep, counts
    width = k / (_SCALE - float(keep))  # exactly the factor randomize_codes multiplies by
    target = np.arange(k + 1, dtype=np.int64)
    lo, hi = np.zeros(k + 1, dtype=np.int64), np.full(k + 1, 2**32 - keep, dtype=np.int64)
    while np.any(open_ := lo < hi):  # least d < N with floor(d·width) ≥ j (N when none)
        mid = (lo + hi) // 2
        reached = np.floor(mid.astype(np.float64) * width) >= target
        hi = np.where(open_ & reached, mid, hi)
        lo = np.where(open_ & ~reached, mid + 1, lo)
    return keep, np.diff(lo)


def delivered_epsilon(p0: float, p: np.ndarray) -> float:
    """The local ε ``randomize_codes`` delivers: max_j ln((T0 + c_j)/c_j) over its realized
    segments (``realized_segments``) — within ~2^-32/min p_j of ``local_epsilon``, and ∞ when a
    p_j > 0 is so small that its segment is empty (the ideal formula would say finite)."""
    # memoized: every submission prices its columns with it (0.5-1 ms each, a bisection on
    # tiny arrays), and the same (p0, p) come back job after job
    return _delivered_epsilon(float(p0), np.ascontiguousarray(p, dtype=float).tobytes())


@functools.lru_cache(maxsize=1024)
def _delivered_epsilon(p0: float, p_bytes: bytes) -> float:
    keep, counts = realized_segments(p0, np.frombuffer(p_bytes, dtype=float))
    if keep >= 2**32:
        return math.inf
    if keep == 0:
        return 0.0  # no cell is ever kept: the output does not depend on the input
    if np.any(counts == 0):
        return math.inf
    return float(np.max(np.log((keep + counts) / counts)))


def epsilon_bound(p0: float, p: np.ndarray) -> float:
    """An upper bound of ``delivered_epsilon`` for the p_j in any order: each realized segment
    is within 2 words of its ideal width p_j·2^32 (its two edges round by ≤ 1/2 word each, the
    top edge is capped at 2^32 - 1, the cumulative sums err by < 10^-2 word), T0 + c_j too."""
    p = np.asarray(p, dtype=float)
    if p0 >= 1.0 or np.any(p * _SCALE <= 2.0):
        return math.inf
    return float(np.max(np.log(((p0 + p) * _SCALE + 2.0) / (p * _SCALE - 2.0))))


def estimate_distribution(published_counts: np.ndarray, p0: float, p: np.ndarray) -> np.ndarray:
    """Unbiased π̂_j = (λ̂_j - p_j) / p0 (paper eq. 1); may leave [0, 1]."""
    n = published_counts.sum()
    lam = published_counts / n if n else np.zeros_like(published_counts, dtype=float)
    return (lam - p) / p0


def breach(p0: float, p: np.ndarray, pi: np.ndarray) -> np.ndarray:
    """Breach(a_i) = p0 · p0·π_i / (p0·π_i + p_i) (paper §6.1), per value."""
    pi = np.asarray(pi, dtype=float)
    p = np.asarray(p, dtype=float)
    denom = p0 * pi + p
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denom > 0, p0 * p0 * pi / np.where(denom > 0, denom, 1.0), 0.0)
