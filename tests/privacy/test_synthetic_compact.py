"""mst's and aim's data in compact form (docs/methods/mst.md, "Measured at scale"): level codes
in one or two bytes, marginals counted from them, a stored table's text columns encoded by
category, and the sampler's parent groups and uniforms computed without sorting or scattering
the records. Each must give exactly what the per-cell / numpy / mbi computation it replaced
gives — a seeded release is the same table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput
from app.privacy.dp_release.encoding import ColumnPlan
from app.privacy.dp_release.marginal_domains import build_columns, encode_frame, marginal
from app.privacy.dp_release.marginals import SynthParams
from app.privacy.dp_release.mbi_sampling import group_uniforms, parent_groups
from app.privacy.registry import MethodInputError
from app.privacy.rng import SecureRandom
from tests.privacy.test_dp_release_synthetic import SCHEMA, parent_children


def _cells(n: int, values: list, missing: int, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    cells = [values[i] for i in rng.integers(0, len(values), n)]
    for i in rng.choice(n, missing, replace=False):
        cells[i] = None
    return cells


@pytest.mark.parametrize("source", ["params", "schema"])
def test_a_text_categorical_column_gets_the_codes_of_its_cells_read_one_by_one(source):
    plan = ColumnPlan("a", "categorical", categories=("x", "y", "zz", "never"), source=source)
    values = ["zz", "x", "y"] + (["stray"] if source == "params" else [])
    cells = _cells(500, values, 40)
    as_category = pd.Series(cells, dtype=pd.CategoricalDtype(["unused", *values]))  # codes ≠ declared order
    codes, missing = plan.category_codes(as_category)
    ref_codes, ref_missing = plan.category_codes(pd.Series(cells, dtype=object))  # the per-cell path
    assert np.array_equal(codes, ref_codes) and np.array_equal(missing, ref_missing)
    expected = [-1 if c in (None, "stray") else ("x", "y", "zz").index(c) for c in cells]
    assert codes.tolist() == expected


def test_a_value_outside_the_schemas_categories_is_refused_on_the_category_path_too():
    plan = ColumnPlan("a", "categorical", categories=("x", "y"), source="schema")
    with pytest.raises(MethodInputError, match="outside its declared categories"):
        plan.category_codes(pd.Series(["x", "w", None], dtype="category"))


def test_integer_categories_keep_the_per_cell_conversion():
    # pandas writes an integer category 1 as '1.0' in a column with a missing cell: only text
    # categories take the shortcut, so such a column is encoded as before
    plan = ColumnPlan("a", "categorical", categories=(1, 2), source="params")
    series = pd.Series([1, 2, None, 1], dtype="category")
    codes, _ = plan.category_codes(series)
    reference = pd.Index(["1", "2"]).get_indexer(series.astype(str))
    assert codes.tolist() == np.where(series.isna(), -1, reference).tolist()


def test_compact_codes_are_the_codes_in_the_smallest_type_and_count_the_same_marginals():
    frame = parent_children(3000)
    rng = np.random.default_rng(1)
    frame["wide"] = rng.integers(0, 400, len(frame))  # 257 levels: two bytes
    schema = [*SCHEMA, ColumnInfo("wide", "numeric", bounds=(0, 399), integer=True)]
    columns = build_columns(SynthParams(epsilon=1.0, bins=256), schema)
    wide, compact = encode_frame(columns, frame), encode_frame(columns, frame, compact=True)
    assert {c.name: compact[c.name].dtype for c in columns} == \
        {c.name: np.dtype(np.uint16 if c.size > 256 else np.uint8) for c in columns}
    sizes = {c.name: c.size for c in columns}
    for a in sizes:
        assert np.array_equal(compact[a], wide[a]) and wide[a].dtype == np.int64
        for b in sizes:
            for clique in ((a,), (a, b), (b, "a", a)):
                shape = tuple(sizes[c] for c in clique)
                reference = np.bincount(np.ravel_multi_index(tuple(wide[c] for c in clique), shape),
                                        minlength=int(np.prod(shape)))
                assert np.array_equal(marginal(compact, clique, shape), reference), clique


@pytest.mark.parametrize("seed", range(6))
def test_parent_groups_are_numpys_unique_over_rows(seed):
    rng = np.random.default_rng(seed)
    sizes = [int(k) for k in rng.integers(1, 300, int(rng.integers(1, 4)))]
    n = int(rng.integers(1, 5000))
    # few distinct levels used (unused ones must not become groups), mixed one/two-byte codes
    parents = [rng.integers(0, int(rng.integers(1, k + 1)), n).astype(np.min_scalar_type(k - 1))
               for k in sizes]
    uniques, inverse, counts = np.unique(np.stack(parents, -1), axis=0, return_inverse=True,
                                         return_counts=True)
    mine = parent_groups(parents, sizes)
    assert np.array_equal(mine[0], uniques) and np.array_equal(mine[2], counts)
    assert np.array_equal(mine[1], inverse.reshape(-1))
    assert np.array_equal(np.argsort(mine[1], kind="stable"), np.argsort(inverse.reshape(-1), kind="stable"))


@pytest.mark.parametrize("groups", [1, 7, 300])
def test_group_uniforms_are_mbis_bit_for_bit(groups):
    rng = np.random.default_rng(groups)
    random = np.random.RandomState(groups)
    _, inverse, counts = np.unique(rng.integers(0, groups, 20_000), return_inverse=True, return_counts=True)
    n = len(inverse)
    perm = np.argsort(inverse, kind="stable")
    starts = np.zeros(len(counts), dtype=int)
    np.cumsum(counts[:-1], out=starts[1:])
    for s, c in zip(starts, counts):
        random.shuffle(perm[s:s + c])
    rand = random.rand(n)
    ranks = np.empty(n, dtype=int)  # mbi 2.0.0's synthetic_data
    ranks[perm] = np.arange(n) - starts[inverse[perm]]
    theirs = ((ranks + rand) / counts[inverse])[perm]
    assert np.array_equal(group_uniforms(perm, starts, counts, rand), theirs)


@pytest.mark.parametrize("method", ["mst", "aim"])
def test_a_seeded_release_of_a_stored_table_is_that_of_its_cells_as_text(method):
    """The worker hands a method a stored table's text columns as categoricals; read cell by
    cell (object columns) the same seeded job releases the same table."""
    from app.privacy import registry

    spec = registry.get(method)
    params = spec.params(epsilon=3.0, bins=8, iterations=60, **({"rounds": 8} if method == "aim" else {}))
    frame = parent_children(1500)
    forms = [frame.astype({c: kind for c in ("a", "b", "c")}) for kind in (object, "str", "category")]
    out = [spec.run(MethodInput(SCHEMA, f), params, RunContext(SecureRandom(seed=5))).frame for f in forms]
    pd.testing.assert_frame_equal(out[0], out[2])
    pd.testing.assert_frame_equal(out[1], out[2])
