"""The report's "Advice checked" (analysis/sections/advice.py): advise's rule on a bench's predictions, the
advised scheme's measured throughput beside the best measured one's."""

import matplotlib
import pandas as pd

matplotlib.use("Agg")

from skewbench.analysis.sections.advice import advice_checked  # noqa: E402


def test_the_advised_scheme_is_set_beside_the_best_measured_and_passes_within_ten_percent(tmp_path):
    """At W = 10 sg is predicted fastest but holds 5 counters per key, so pkg (tied, lean) is advised and
    measured within 10 % of sg; at W = 50 wchoices is advised and measured 0.8x dchoices: it fails."""
    rows = [(10, "sg", 100, 100, 5.0), (10, "pkg", 99, 95, 1.1), (10, "kg", 60, 60, 1.0),
            (50, "wchoices", 500, 400, 1.2), (50, "dchoices", 480, 500, 1.1), (50, "kg", 200, 210, 1.0)]
    pd.DataFrame([{"workload": "wordfreq:lang=en", "workers": w, "scheme": s, "predicted_throughput": p,
                   "throughput": m, "counters": c * 1000, "keys": 1000, "probes": 0, "messages": 10_000}
                  for w, s, p, m, c in rows]).to_csv(tmp_path / "advice.csv", index=False)
    text = "\n".join(advice_checked(tmp_path))
    assert "## Advice checked" in text and "1 of 2 points pass" in text
    assert "| wordfreq:lang=en | 10 | pkg | 99 | 95 | sg | 100 | 0.95 | True |" in text
    assert "| wordfreq:lang=en | 50 | wchoices | 500 | 400 | dchoices | 500 | 0.8 | False |" in text
    assert advice_checked(tmp_path / "nothing") == []
