"""Information-loss figures of an anonymity release (spec 04 §1).

- NCP per quasi-identifier: the mean over *input* records of the released cell's NCP, a
  suppressed record counting 1; the average over quasi-identifiers is "ncp".
- discernibility: Σ over released classes of |E|², plus n for every suppressed record
  (Bayardo & Agrawal 2005).
- average class size: released records / classes, and normalized by k (LeFevre et al. 2006).
"""

from __future__ import annotations

import numpy as np


def anonymity_metrics(quasi_identifiers: list[str], ncp: np.ndarray, n_input: int, suppressed: int,
                      class_ids: np.ndarray, k: int) -> dict:
    n_released = len(class_ids)
    sizes = np.bincount(class_ids) if n_released else np.zeros(0, dtype=np.int64)
    sizes = sizes[sizes > 0]
    per_qi = {q: float((ncp[:, i].sum() + suppressed) / n_input) if n_input else 0.0
              for i, q in enumerate(quasi_identifiers)}
    classes = int(len(sizes))
    average = n_released / classes if classes else 0.0
    return {
        "ncp": float(np.mean(list(per_qi.values()))) if per_qi else 0.0,
        "ncp_per_qi": per_qi,
        "discernibility": float(np.sum(sizes.astype(float) ** 2) + suppressed * float(n_input)),
        "average_class_size": float(average),
        "normalized_average_class_size": float(average / k) if k else None,
        "classes": classes,
        "smallest_class": int(sizes.min()) if classes else 0,
        "records": int(n_released),
        "suppressed": int(suppressed),
        "suppressed_share": float(suppressed / n_input) if n_input else 0.0,
    }
