"""The 0/1 transaction matrix, bit-packed by column, and the counting primitives.

Item i's column is ``words[i]``: a run of uint64 words whose bit b of word w is row 64·w + b.
Rows may be laid out in *segments* (strata: the rows sharing one keep probability). Each
segment starts on a word boundary, so a per-segment count is a sum over a word range, and
padding bits are always 0 — every operation below keeps that invariant.

All counting is bitwise over whole columns (AND/XOR and ``np.bitwise_count``), batched over
itemsets so the temporary arrays stay near 8 MB.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from app.privacy.rng import SecureRandom

WORD_BITS = 64
_BATCH_WORDS = 1 << 20  # words per temporary array in counting (8 MB)
_CHUNK_CELLS = 1 << 22  # cells per chunk when packing, unpacking or randomizing
_THRESHOLD_SCALE = 2.0**32


@dataclass
class BitMatrix:
    words: np.ndarray  # (n_items, n_words) uint64
    seg_rows: np.ndarray  # (S,) rows of each segment
    seg_words: np.ndarray  # (S + 1,) word offsets of the segments

    @property
    def n_items(self) -> int:
        return int(self.words.shape[0])

    @property
    def n_rows(self) -> int:
        return int(self.seg_rows.sum())

    @property
    def n_segments(self) -> int:
        return len(self.seg_rows)


def _words_for(rows: np.ndarray) -> np.ndarray:
    return np.concatenate([[0], np.cumsum((np.asarray(rows, dtype=np.int64) + WORD_BITS - 1) // WORD_BITS)])


def permute_csr(indptr: np.ndarray, indices: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CSR whose row i is the input's row order[i] (vectorized gather of the row slices)."""
    lengths = np.diff(indptr)[order]
    new_indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    shift = np.repeat(np.asarray(indptr, dtype=np.int64)[order] - new_indptr[:-1], lengths)
    gather = np.arange(new_indptr[-1], dtype=np.int64) + shift
    return new_indptr, np.asarray(indices)[gather]


def from_csr(indptr: np.ndarray, indices: np.ndarray, n_items: int,
             row_segment: np.ndarray | None = None, n_segments: int | None = None) -> BitMatrix:
    """Pack CSR transactions. With ``row_segment`` (segment index per row) rows are grouped by
    segment, keeping their relative order inside each segment."""
    indptr = np.asarray(indptr, dtype=np.int64)
    indices = np.asarray(indices, dtype=np.int64)
    n = len(indptr) - 1
    if row_segment is None:
        seg_rows = np.array([n], dtype=np.int64)
    else:
        row_segment = np.asarray(row_segment, dtype=np.int64)
        n_segments = int(row_segment.max()) + 1 if n_segments is None else n_segments
        seg_rows = np.bincount(row_segment, minlength=n_segments).astype(np.int64)
        if np.any(row_segment[1:] < row_segment[:-1]):  # already grouped (MASK): no copy
            order = np.argsort(row_segment, kind="stable")
            indptr, indices = permute_csr(indptr, indices, order)
    seg_words = _words_for(seg_rows)
    words = np.zeros((n_items, int(seg_words[-1])), dtype=np.uint64)
    as_bytes = words.view(np.uint8)  # little-endian: byte j of word w holds rows 64w+8j..
    chunk_rows = max(WORD_BITS, (_CHUNK_CELLS // max(n_items, 1)) // WORD_BITS * WORD_BITS)
    first_row = 0
    for s, rows in enumerate(seg_rows):
        for r0 in range(0, int(rows), chunk_rows):
            r1 = min(int(rows), r0 + chunk_rows)
            a, b = indptr[first_row + r0], indptr[first_row + r1]
            width = r1 - r0
            local_rows = np.repeat(np.arange(width), np.diff(indptr[first_row + r0:first_row + r1 + 1]))
            dense = np.zeros(n_items * width, dtype=bool)  # flat indexing: twice as fast as 2-D
            dense[indices[a:b] * width + local_rows] = True
            packed = np.packbits(dense.reshape(n_items, width), axis=1, bitorder="little")
            byte0 = int(seg_words[s]) * 8 + r0 // 8
            as_bytes[:, byte0:byte0 + packed.shape[1]] = packed
        first_row += int(rows)
    return BitMatrix(words=words, seg_rows=seg_rows, seg_words=seg_words)


def from_dense(dense: np.ndarray) -> BitMatrix:
    """Pack an (n_rows, n_items) 0/1 array (one segment); for tests and small inputs."""
    dense = np.asarray(dense, dtype=bool)
    n, m = dense.shape
    seg_words = _words_for(np.array([n]))
    words = np.zeros((m, int(seg_words[-1])), dtype=np.uint64)
    packed = np.packbits(dense.T, axis=1, bitorder="little")
    words.view(np.uint8)[:, :packed.shape[1]] = packed
    return BitMatrix(words=words, seg_rows=np.array([n], dtype=np.int64), seg_words=seg_words)


def to_csr(bm: BitMatrix) -> tuple[np.ndarray, np.ndarray]:
    """CSR (indptr, indices) of the rows in layout order (segment by segment)."""
    counts, pieces = [], []
    as_bytes = bm.words.view(np.uint8)
    chunk_words = max(1, _CHUNK_CELLS // WORD_BITS // max(bm.n_items, 1))
    for s, rows in enumerate(bm.seg_rows):
        w_start, w_end = int(bm.seg_words[s]), int(bm.seg_words[s + 1])
        for w0 in range(w_start, w_end, chunk_words):
            w1 = min(w_end, w0 + chunk_words)
            valid = min(int(rows) - (w0 - w_start) * WORD_BITS, (w1 - w0) * WORD_BITS)
            dense = np.unpackbits(as_bytes[:, w0 * 8:w1 * 8], axis=1, bitorder="little")[:, :valid]
            row, item = np.nonzero(dense.T)
            counts.append(np.bincount(row, minlength=valid))
            pieces.append(item.astype(np.int32))
    lengths = np.concatenate(counts) if counts else np.zeros(0, dtype=np.int64)
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    indices = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int32)
    return indptr, indices


def flip_thresholds(flip_probability: np.ndarray) -> np.ndarray:
    """uint32 thresholds t with P(u < t) = t / 2^32 ≈ q for a uniform uint32 u (error ≤ 2^-33)."""
    q = np.clip(np.asarray(flip_probability, dtype=np.float64), 0.0, 0.5)
    return np.round(q * _THRESHOLD_SCALE).astype(np.uint32)


def randomize(bm: BitMatrix, keep_p_rows: np.ndarray | float, rng: SecureRandom) -> int:
    """MASK in place: every bit of row r is kept with probability keep_p_rows[r] (layout
    order) and flipped otherwise, independently. Returns the number of flipped bits.

    One uint32 of CSPRNG output per cell compared with the row's threshold; the flip mask is
    packed and XORed into the columns. Padding rows get threshold 0 and never flip."""
    n_words = bm.words.shape[1]
    per_row = np.ndim(keep_p_rows) > 0
    if per_row:
        thresholds = np.zeros(n_words * WORD_BITS, dtype=np.uint32)
        row_pos = _row_positions(bm)
        thresholds[row_pos] = flip_thresholds(1.0 - np.asarray(keep_p_rows, dtype=np.float64))
    else:
        scalar = flip_thresholds(1.0 - float(keep_p_rows))
        valid = np.zeros(n_words * WORD_BITS, dtype=bool)
        valid[_row_positions(bm)] = True
    as_bytes = bm.words.view(np.uint8)
    chunk_words = max(1, _CHUNK_CELLS // WORD_BITS // max(bm.n_items, 1))
    flipped = 0
    for w0 in range(0, n_words, chunk_words):
        w1 = min(n_words, w0 + chunk_words)
        u = rng.uint32((bm.n_items, (w1 - w0) * WORD_BITS))
        if per_row:
            flips = u < thresholds[None, w0 * WORD_BITS:w1 * WORD_BITS]
        else:
            flips = u < scalar
            span = valid[w0 * WORD_BITS:w1 * WORD_BITS]
            if not span.all():
                flips &= span[None, :]
        packed = np.packbits(flips, axis=1, bitorder="little")
        as_bytes[:, w0 * 8:w1 * 8] ^= packed
        flipped += int(np.bitwise_count(packed).sum(dtype=np.int64))
    return flipped


def _row_positions(bm: BitMatrix) -> np.ndarray:
    """Bit position of every row, in layout order."""
    starts = np.repeat(bm.seg_words[:-1] * WORD_BITS - np.concatenate([[0], np.cumsum(bm.seg_rows)[:-1]]),
                       bm.seg_rows)
    return np.arange(bm.n_rows, dtype=np.int64) + starts


def _segment_sums(popcounts: np.ndarray, bm: BitMatrix) -> np.ndarray:
    """(B, W) per-word popcounts → (B, S) per-segment sums (0 for a segment of no rows:
    reduceat gives an empty range its start's word, the next segment's first count)."""
    if bm.n_segments == 1:
        return popcounts.sum(axis=1, dtype=np.int64)[:, None]
    starts, ends = bm.seg_words[:-1], bm.seg_words[1:]
    if popcounts.shape[1] == 0:
        return np.zeros((popcounts.shape[0], bm.n_segments), dtype=np.int64)
    sums = np.add.reduceat(popcounts, np.minimum(starts, popcounts.shape[1] - 1), axis=1, dtype=np.int64)
    sums[:, starts == ends] = 0
    return sums


def _batches(n_itemsets: int, n_words: int):
    step = max(1, _BATCH_WORDS // max(n_words, 1))
    for b0 in range(0, n_itemsets, step):
        yield b0, min(n_itemsets, b0 + step)


def itemset_counts(bm: BitMatrix, itemsets: np.ndarray) -> np.ndarray:
    """(B, S): rows of each segment containing every item of each itemset (B, k)."""
    itemsets = np.asarray(itemsets, dtype=np.int64)
    out = np.zeros((len(itemsets), bm.n_segments), dtype=np.int64)
    for b0, b1 in _batches(len(itemsets), bm.words.shape[1]):
        acc = bm.words[itemsets[b0:b1, 0]]
        for j in range(1, itemsets.shape[1]):
            acc &= bm.words[itemsets[b0:b1, j]]
        out[b0:b1] = _segment_sums(np.bitwise_count(acc), bm)
    return out


def weight_counts(bm: BitMatrix, itemsets: np.ndarray) -> np.ndarray:
    """(B, S, k+1): rows of each segment holding exactly w of the itemset's k items.

    The per-row weight is kept bit-sliced (planes of a ripple-carry counter over the k
    columns), so the cost is O(k log k) word operations per itemset and word."""
    itemsets = np.asarray(itemsets, dtype=np.int64)
    k = itemsets.shape[1]
    out = np.zeros((len(itemsets), bm.n_segments, k + 1), dtype=np.int64)
    for b0, b1 in _batches(len(itemsets), bm.words.shape[1]):
        planes = [bm.words[itemsets[b0:b1, 0]]]
        for j in range(1, k):
            carry = bm.words[itemsets[b0:b1, j]]
            for plane in planes:
                overflow = plane & carry
                plane ^= carry
                carry = overflow
            if len(planes) < (j + 1).bit_length():
                planes.append(carry)
        for w in range(1, k + 1):
            mask = None
            for bit, plane in enumerate(planes):
                term = plane if (w >> bit) & 1 else ~plane
                mask = term.copy() if mask is None else (mask & term)
            out[b0:b1, :, w] = _segment_sums(np.bitwise_count(mask), bm)
    out[:, :, 0] = bm.seg_rows[None, :] - out[:, :, 1:].sum(axis=2)  # padding rows would land in w=0
    return out


def pattern_counts(bm: BitMatrix, itemsets: np.ndarray) -> np.ndarray:
    """(B, S, 2^k): rows of each segment whose projection on the itemset is pattern i
    (i read as k bits, the first item the most significant) — the paper's C vector."""
    itemsets = np.asarray(itemsets, dtype=np.int64)
    k = itemsets.shape[1]
    out = np.zeros((len(itemsets), bm.n_segments, 2**k), dtype=np.int64)
    for b0, b1 in _batches(len(itemsets), bm.words.shape[1]):
        cols = [bm.words[itemsets[b0:b1, j]] for j in range(k)]
        for i in range(1, 2**k):
            mask = None
            for j, col in enumerate(cols):
                term = col if (i >> (k - 1 - j)) & 1 else ~col
                mask = term.copy() if mask is None else (mask & term)
            out[b0:b1, :, i] = _segment_sums(np.bitwise_count(mask), bm)
    out[:, :, 0] = bm.seg_rows[None, :] - out[:, :, 1:].sum(axis=2)
    return out
