"""Randomized response family: errph, warner, trr throughput and reconstruction time, with
per-value peers measured in the same run (pure-LDP's direct encoding, diffprivlib's Binary,
OpenDP's make_randomized_response). Peers randomize one value per call, so they are timed on
a sample (20,000 values) and reported in values/s, the same unit as Veil's cells/s.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import sys
import time
import types
from pathlib import Path

import numpy as np
import pandas as pd

from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput
from app.privacy.randomized_response import ErrphParams, run_errph
from app.privacy.reconstruction import ReconstructParams, run_reconstruct
from app.privacy.rng import SecureRandom
from app.privacy.rr_channels import as_release_input
from app.privacy.transforming_rr import TrrParams, run_trr
from app.privacy.warner import WarnerParams, run_warner
from benchmarks.common import Row, best_time

K = 8  # categories per column
P0 = 0.5
PEER_SAMPLE = 20_000
CELLS_TARGET = "≥ 50 M cells/s on one core"


def _ctx() -> RunContext:
    return RunContext(SecureRandom())  # the production path: keys from os.urandom


def _categorical_frame(rows: int, cols: int, as_str: bool = False) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    labels = [f"v{i}" for i in range(K)]
    out = {}
    for j in range(cols):
        column = pd.Categorical.from_codes(rng.integers(0, K, rows).astype(np.int8), categories=labels)
        out[f"c{j}"] = pd.Series(column).astype("str") if as_str else column
    return pd.DataFrame(out)


def _rate(cells: int, seconds: float) -> float:
    return cells / seconds / 1e6


def _per_value_rate(randomize_one, values) -> float:
    start = time.perf_counter()
    for v in values:
        randomize_one(v)
    return len(values) / (time.perf_counter() - start) / 1e6


# --------------------------------------------------------------------------------- peers
def _pure_ldp_de_client():
    """pure-LDP's DEClient. Its package __init__ imports RAPPOR, which needs statsmodels; the
    direct-encoding module itself does not, so it is loaded from its file when that fails."""
    try:
        from pure_ldp.frequency_oracles.direct_encoding import DEClient
        return DEClient
    except ModuleNotFoundError as exc:
        if exc.name == "pure_ldp":
            return None
        import pure_ldp
        path = Path(pure_ldp.__file__).parent / "frequency_oracles" / "direct_encoding" / "de_client.py"
        spec = importlib.util.spec_from_file_location("_pure_ldp_de_client", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.DEClient


def _diffprivlib_binary():
    """diffprivlib's Binary mechanism. diffprivlib 0.6.6's package __init__ imports a private
    scikit-learn symbol that scikit-learn 1.9 removed; its mechanisms do not need it, so the
    package is registered without running that __init__."""
    spec = importlib.util.find_spec("diffprivlib")
    if spec is None:
        return None
    if "diffprivlib" not in sys.modules:
        try:
            importlib.import_module("diffprivlib")
        except ImportError:
            stub = types.ModuleType("diffprivlib")
            stub.__path__ = list(spec.submodule_search_locations)
            sys.modules["diffprivlib"] = stub
    from diffprivlib.mechanisms import Binary
    return Binary


def _opendp_rr():
    try:
        import opendp.prelude as dp
    except ImportError:
        return None
    dp.enable_features("contrib")
    return dp.m.make_randomized_response


def _peer_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except Exception:  # noqa: BLE001
        return "?"


# ------------------------------------------------------------------------------ workloads
def _errph_rows(rows: int, cols: int, repeat: int) -> list[Row]:
    frame = _categorical_frame(rows, cols)
    columns = [ColumnInfo(c, "categorical", distinct=K) for c in frame.columns]
    data = MethodInput(columns=columns, frame=frame)
    seconds = best_time(lambda: run_errph(data, ErrphParams(p0=P0), _ctx()), repeat)
    veil = _rate(rows * cols, seconds)
    eps = math.log(1 + K * P0 / (1 - P0))
    keep = P0 + (1 - P0) / K
    sample = np.random.default_rng(1).integers(0, K, PEER_SAMPLE).tolist()

    de = _pure_ldp_de_client()
    de_rate = None
    if de is not None:
        client = de(epsilon=eps, d=K, index_mapper=lambda x: x)
        de_rate = _per_value_rate(client.privatise, sample)
    make_rr = _opendp_rr()
    opendp_rate = None
    if make_rr is not None:
        labels = [f"v{i}" for i in range(K)]
        meas = make_rr(categories=labels, prob=keep)
        opendp_rate = _per_value_rate(meas, [labels[i] for i in sample])

    str_frame = _categorical_frame(rows, cols, as_str=True)
    str_data = MethodInput(columns=columns, frame=str_frame)
    str_seconds = best_time(lambda: run_errph(str_data, ErrphParams(p0=P0), _ctx()), repeat)
    size = f"{rows:,} × {cols}, k = {K}, p0 = {P0}"
    return [
        Row(f"errph {size} (categorical dtype)", veil, "M cells/s", "pure-LDP DEClient.privatise "
            f"{_peer_version('pure-ldp')}", de_rate, target=CELLS_TARGET,
            notes=f"same ε = ln(1+k·p0/(1-p0)) = {eps:.3f}; peer per value on {PEER_SAMPLE:,} values"
            + ("" if de is not None else "; pure-ldp not installed")),
        Row(f"errph {size} (categorical dtype)", veil, "M cells/s",
            f"OpenDP make_randomized_response {_peer_version('opendp')}", opendp_rate, target=CELLS_TARGET,
            notes=f"same keep probability {keep:.4f}; peer per value on {PEER_SAMPLE:,} values"
            + ("" if make_rr is not None else "; opendp not installed")),
        Row(f"errph {size} (str dtype, as read from CSV)", _rate(rows * cols, str_seconds), "M cells/s",
            target=CELLS_TARGET, notes="includes factorizing the strings"),
    ]


def _warner_rows(rows: int, cols: int, repeat: int) -> list[Row]:
    rng = np.random.default_rng(2)
    frame = pd.DataFrame({f"b{j}": rng.random(rows) < 0.3 for j in range(cols)})
    data = MethodInput(columns=[ColumnInfo(c, "boolean", distinct=2) for c in frame.columns], frame=frame)
    p = 0.75
    seconds = best_time(lambda: run_warner(data, WarnerParams(p=p), _ctx()), repeat)
    binary = _diffprivlib_binary()
    peer_rate = None
    if binary is not None:
        mech = binary(epsilon=math.log(p / (1 - p)), value0="0", value1="1")
        values = np.where(rng.random(PEER_SAMPLE) < 0.3, "1", "0").tolist()
        peer_rate = _per_value_rate(mech.randomise, values)
    whole = best_time(lambda: run_warner(data, WarnerParams(p=p, whole_record=True), _ctx()), repeat)
    size = f"{rows:,} × {cols}, p = {p}"
    return [
        Row(f"warner {size}", _rate(rows * cols, seconds), "M cells/s",
            f"diffprivlib mechanisms.Binary.randomise {_peer_version('diffprivlib')}", peer_rate,
            target=CELLS_TARGET, notes=f"same ε = ln 3; peer per value on {PEER_SAMPLE:,} values"
            + ("" if binary is not None else "; diffprivlib not installed")),
        Row(f"warner whole-record (DTPD) {size}", _rate(rows * cols, whole), "M cells/s", target=CELLS_TARGET),
    ]


def _trr_rows(rows: int, cols: int, repeat: int) -> list[Row]:
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({f"x{j}": rng.normal(40, 10, rows) for j in range(cols)})
    data = MethodInput(columns=[ColumnInfo(c, "numeric") for c in frame.columns], frame=frame)
    seconds = best_time(lambda: run_trr(data, TrrParams(), _ctx()), repeat)
    return [Row(f"trr {rows:,} × {cols}, m = 256", _rate(rows * cols, seconds), "M cells/s",
                target=CELLS_TARGET, notes="no peer implements TRR")]


def _reconstruct_rows(values: int, repeat: int) -> list[Row]:
    ctx = RunContext(SecureRandom(seed=1))
    cat = MethodInput(columns=[ColumnInfo("c0", "categorical", distinct=K)], frame=_categorical_frame(values, 1))
    params = ErrphParams(p0=P0)
    cat_release = as_release_input(cat, run_errph(cat, params, ctx), "errph", params)
    # the estimate is the target's subject; the report's plot costs the same at any size
    tables = ReconstructParams(plots=False)
    estimate = best_time(lambda: run_reconstruct(cat_release, tables, ctx), repeat)
    with_plot = best_time(lambda: run_reconstruct(cat_release, ReconstructParams(), ctx), repeat)
    rows = [Row(f"reconstruct errph column, {values:,} values", estimate, "s",
                higher_is_better=False, target="≤ 0.1 s for 10^7 values",
                notes=f"tables only (plots: false); with the distributions plot {with_plot:.3g} s")]
    num = MethodInput(columns=[ColumnInfo("x", "numeric")],
                      frame=pd.DataFrame({"x": np.random.default_rng(4).normal(0, 1, values)}))
    trr = TrrParams()
    num_release = as_release_input(num, run_trr(num, trr, ctx), "trr", trr)
    rows.append(Row(f"reconstruct trr column, {values:,} values", best_time(
        lambda: run_reconstruct(num_release, tables, ctx), repeat), "s",
        higher_is_better=False, target="≤ 0.1 s for 10^7 values",
        notes="mean, variance and their delta-method SEs (third and fourth moments)"))
    return rows


def cases(quick: bool) -> list[Row]:
    rows, cols = (100_000, 10) if quick else (1_000_000, 10)
    repeat = 2 if quick else 3
    return [
        *_errph_rows(rows, cols, repeat),
        *_warner_rows(rows, cols, repeat),
        *_trr_rows(rows, cols, repeat),
        *_reconstruct_rows(1_000_000 if quick else 10_000_000, repeat),
    ]


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    for row in cases(quick):
        ratio = f"{row.ratio:,.0f}×" if row.ratio else ""
        peer = f"{row.peer_value:.3f}" if row.peer_value is not None else "—"
        print(f"{row.workload:<60} {row.veil:10.3f} {row.unit:<10} {row.peer or '':<50} {peer:>8} {ratio}")
