"""Re-identification risk under the prosecutor model (the attacker knows the target is in the
table and knows the target's quasi-identifiers): a record in an equivalence class of size f is
re-identified with probability 1/f.

- highest risk: 1 / smallest class;
- average risk: mean over records of 1/f = #classes / n;
- records at risk: share of records in classes smaller than ``threshold`` (equivalently with an
  individual risk above 1/threshold);
- sample uniques: records alone in their class (count and share).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from app.privacy.anonymity.verify import equivalence_classes


def prosecutor_risk(class_ids: np.ndarray, threshold: int = 5) -> dict[str, float | int]:
    n = len(class_ids)
    if n == 0:
        return {"records": 0, "classes": 0, "highest": 0.0, "average": 0.0,
                "threshold": threshold, "records_at_risk": 0.0, "sample_uniques": 0,
                "sample_uniques_share": 0.0, "smallest_class": 0}
    sizes = np.bincount(class_ids)
    per_record = sizes[class_ids]
    sizes = sizes[sizes > 0]
    uniques = int((sizes == 1).sum())
    return {
        "records": int(n),
        "classes": int(len(sizes)),
        "smallest_class": int(sizes.min()),
        "highest": float(1.0 / sizes.min()),
        "average": float(len(sizes) / n),
        "threshold": int(threshold),
        "records_at_risk": float((per_record < threshold).mean()),
        "sample_uniques": uniques,
        "sample_uniques_share": float(uniques / n),
    }


def frame_risk(frame: pd.DataFrame, quasi_identifiers: list[str], threshold: int = 5) -> dict:
    """Prosecutor risk of a table (raw or released) over the given quasi-identifiers."""
    return prosecutor_risk(equivalence_classes(frame, quasi_identifiers), threshold)


def class_size_table(class_ids: np.ndarray) -> pd.DataFrame:
    """How many classes, and records, have each size (for the report)."""
    sizes = np.bincount(class_ids)
    sizes = sizes[sizes > 0]
    values, counts = np.unique(sizes, return_counts=True)
    return pd.DataFrame({"class_size": values, "classes": counts, "records": values * counts,
                         "risk": 1.0 / values})
