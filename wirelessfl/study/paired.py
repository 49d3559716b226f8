"""Paired differences against a reference method, and the standard for "agrees".

A paper's claim "A is above B" **agrees** with a reproduction only when the claimed direction
holds in every seed *and* the paired difference across seeds has a 95 % interval that excludes
0; otherwise it is "not established". This module computes that test from a table of runs (one
row per run, as a study's ``index.csv`` or a reproduction's ``summary.csv``).

**Pairing.** The columns that name the method (``method_keys``, e.g.
``compression.sparsifier``) tell the methods apart; the reference method is the runs whose
values match ``reference`` (a mapping over some or all of the method keys, e.g.
``{"compression.sparsifier": "soft"}``). Every other run is paired with the reference run at
the same ``seed`` (same clients, channels and batches) and the same value of every *context*
key (every other config key that varies, e.g. ``controller.rank`` or ``learner.dataset``):
the difference of a seed is this run's metric minus its partner's. A context value that is
missing (NaN: the run's own sweep does not set that key) matches any value of the other side
when no reference run has exactly the run's context: a run without
``controller.sparsification`` (dense ILoRA) is compared with SOFT at each sparsification the
grid has, one row per context. Two partners at one seed in one (method, context) row are an
error (the keys do not tell the runs apart). Runs with no partner are kept: their (method,
context) row has ``n`` = 0 or counts them in ``n_unpaired``.

**Test.** For a (method, context) row with ``n`` paired seeds whose metric is known on both
sides, differences d_1 .. d_n, mean d̄ and sample standard deviation s, the 95 % paired
Student-t interval is d̄ ± t_{0.975, n-1} · s / √n (NaN with n < 2). The verdict is
``above`` (the method's metric is above the reference's) or ``below`` when

* n ≥ 5 (with 2 or 3 seeds t_{0.975} is 12.7 or 4.3, and a sign test cannot reach 5 % at
  all below 6 seeds),
* every d_i has the sign of d̄ and none is 0 (``same_sign_all_seeds``), and
* the interval excludes 0;

else ``not established``, with every reason that applies in ``reason``: ``no paired seeds``,
``fewer than 5 seeds``, ``sign differs across seeds``, ``interval includes 0``. "above" means
a larger value of the metric: for ``time_to_target_s`` that is *slower*. A seed whose metric
is NaN on either side (an unreached target, an unfinished run) counts in ``n_missing``, not
in ``n``.

pandas and scipy are imported inside the functions; importing this module is cheap.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from wirelessfl.results.columns import (
    STUDY_ACCURACY_ENERGY_COLUMNS,
    STUDY_AIRCOMP_COLUMNS,
    STUDY_CELLS_COLUMNS,
    STUDY_ENERGY_COLUMNS,
    STUDY_NR_COLUMNS,
    STUDY_UPDATE_COLUMNS,
)
from wirelessfl.results.summary import SUMMARY_COLUMNS
from wirelessfl.study.grid import format_value, plain

if TYPE_CHECKING:
    import pandas as pd

#: seeds a verdict needs
MIN_SEEDS = 5
#: the interval's confidence level
LEVEL = 0.95
#: columns of a study's or a reproduction's table that are not config keys
NOT_CONFIG = (
    "run",
    "sweep",
    "seed",
    "finished",
    "status",
    "error",
    *SUMMARY_COLUMNS,
    "target_accuracy",
    "time_to_target_s",
    "bits_to_target",
    "final_test_loss",
    "reference_run",
    *STUDY_UPDATE_COLUMNS,
    *STUDY_ENERGY_COLUMNS,
    *STUDY_ACCURACY_ENERGY_COLUMNS,
    *STUDY_AIRCOMP_COLUMNS,
    *STUDY_NR_COLUMNS,
    *STUDY_CELLS_COLUMNS,
)
#: columns of :func:`paired_differences`, in order
PAIRED_COLUMNS = [
    "metric",
    "method",
    "context",
    "reference",
    "n",
    "n_unpaired",
    "n_missing",
    "mean_method",
    "mean_reference",
    "mean_diff",
    "sd_diff",
    "ci_low",
    "ci_high",
    "same_sign_all_seeds",
    "verdict",
    "reason",
    "seeds",
    "diffs",
]


@dataclass(frozen=True)
class Reference:
    """The method a reproduction's runs are compared with.

    ``value`` maps method keys to the reference's values (``{"compression.sparsifier":
    "soft"}``); ``keys`` names further keys that tell methods apart rather than contexts (the
    OSFA runs' ``controller.rank``: each rank is a method, compared with TSFA). ``metrics`` are
    the summary columns compared (those the table lacks are skipped). ``full_value`` replaces
    ``value`` at ``--full`` scale where the full grid lacks the reference's value.
    """

    value: Mapping[str, Any]
    keys: tuple[str, ...] = ()
    metrics: tuple[str, ...] = ("final_accuracy",)
    full_value: Mapping[str, Any] | None = None
    label: str = ""

    @property
    def method_keys(self) -> tuple[str, ...]:
        """The keys that name a method: ``value``'s, then ``keys``."""
        return tuple(dict.fromkeys([*self.value, *self.keys]))

    def at(self, full: bool) -> dict[str, Any]:
        """The reference's values at the default or the ``--full`` scale."""
        return dict(self.full_value if full and self.full_value is not None else self.value)


def canonical(value: Any) -> str | None:
    """A config value as comparable text: None for missing (None, NaN); integral floats as
    integers (a CSV column with gaps reads 4 as 4.0); lists and dicts as the sweep writes them
    into ``index.csv`` (compact JSON)."""
    value = plain(value)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return format_value(value)


def describe(keys: Sequence[str], values: Sequence[str | None]) -> str:
    """``key=value, ...`` over the values that are set ("" when none is)."""
    return ", ".join(f"{k}={v}" for k, v in zip(keys, values, strict=True) if v is not None)


def context_keys_of(table: pd.DataFrame, method_keys: Sequence[str], metrics=()) -> list[str]:
    """The table's columns that are config keys and not method keys (every column but
    ``NOT_CONFIG``, the metrics and the method keys)."""
    skip = {*NOT_CONFIG, *metrics, *method_keys}
    return [c for c in table.columns if c not in skip]


def t_interval(diffs: Sequence[float], level: float = LEVEL) -> tuple[float, float]:
    """The paired Student-t interval of the mean of ``diffs``: mean ± t_{(1+level)/2, n-1} ·
    sd / √n (sample sd); NaN with fewer than 2 values."""
    from scipy import stats

    n = len(diffs)
    if n < 2:
        return math.nan, math.nan
    mean = math.fsum(diffs) / n
    sd = math.sqrt(math.fsum((d - mean) ** 2 for d in diffs) / (n - 1))
    half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * sd / math.sqrt(n)
    return mean - half, mean + half


def verdict(diffs: Sequence[float], min_seeds: int = MIN_SEEDS) -> dict[str, Any]:
    """The statistics and the verdict of one (method, context) row's paired differences:
    ``n``, ``mean_diff``, ``sd_diff``, ``ci_low``, ``ci_high``, ``same_sign_all_seeds``,
    ``verdict`` ("above", "below" or "not established") and ``reason``."""
    diffs = [float(d) for d in diffs]  # numpy scalars' bools do not subtract
    n = len(diffs)
    mean = math.fsum(diffs) / n if n else math.nan
    sd = math.sqrt(math.fsum((d - mean) ** 2 for d in diffs) / (n - 1)) if n >= 2 else math.nan
    low, high = t_interval(diffs)
    sign = (mean > 0) - (mean < 0) if n else 0
    same_sign = n > 0 and sign != 0 and all((d > 0) - (d < 0) == sign for d in diffs)
    reasons = []
    if n == 0:
        reasons.append("no paired seeds")
    elif n < min_seeds:
        reasons.append(f"fewer than {min_seeds} seeds")
    if n > 0 and not same_sign:
        reasons.append("sign differs across seeds")
    if n > 0 and not (low > 0 or high < 0):  # NaN compares false: includes 0
        reasons.append("interval includes 0")
    word = "not established" if reasons else ("above" if sign > 0 else "below")
    return {
        "n": n,
        "mean_diff": mean,
        "sd_diff": sd,
        "ci_low": low,
        "ci_high": high,
        "same_sign_all_seeds": same_sign,
        "verdict": word,
        "reason": "; ".join(reasons),
    }


@dataclass
class Pairing:
    """Which run is paired with which: ``pairs`` (row, reference row, context values) and
    ``unpaired`` (row, its own context values), rows as positions in the table."""

    method_keys: list[str]
    context_keys: list[str]
    reference: dict[str, Any]
    is_reference: list[bool]
    methods: list[tuple[str | None, ...]]
    pairs: list[tuple[int, int, tuple[str | None, ...]]]
    unpaired: list[tuple[int, tuple[str | None, ...]]]


def pair_runs(
    table: pd.DataFrame,
    method_keys: Sequence[str],
    reference: Mapping[str, Any],
    context_keys: Sequence[str] | None = None,
    seed_key: str = "seed",
) -> Pairing:
    """Pair every non-reference run of ``table`` with the reference run at the same seed and
    context; where none has the same context, with every reference run at the seed whose
    context agrees on the keys both set (a missing value matches any). ``ValueError`` if a
    method row would get two reference partners at one seed in one context (the keys do not
    tell them apart), if the table holds no reference run, or if a key is not a column."""
    method_keys = list(dict.fromkeys([*reference, *method_keys]))
    if context_keys is None:
        context_keys = context_keys_of(table, method_keys)
    context_keys = [k for k in context_keys if k not in method_keys]
    missing = [k for k in [*method_keys, *context_keys, seed_key] if k not in table.columns]
    if missing:
        raise ValueError(f"paired differences: the table has no column {', '.join(missing)}")
    want = {k: canonical(v) for k, v in reference.items()}
    rows = table.reset_index(drop=True)
    methods = [
        tuple(canonical(v) for v in values)
        for values in rows[method_keys].itertuples(index=False, name=None)
    ]
    contexts = (
        [
            tuple(canonical(v) for v in values)
            for values in rows[context_keys].itertuples(index=False, name=None)
        ]
        if context_keys
        else [()] * len(rows)
    )
    seeds = [canonical(s) for s in rows[seed_key]]
    is_ref = [all(m[method_keys.index(k)] == v for k, v in want.items()) for m in methods]
    if not any(is_ref):
        raise ValueError(
            "paired differences: no run is the reference "
            + describe(list(want), list(want.values()))
        )
    by_seed: dict[str | None, list[int]] = {}
    for j, ref in enumerate(is_ref):
        if ref:
            by_seed.setdefault(seeds[j], []).append(j)
    pairs, unpaired, seen = [], [], {}
    for i, ref in enumerate(is_ref):
        if ref:
            continue
        # the reference run with the same context; else every one that agrees where both set
        candidates = by_seed.get(seeds[i], [])
        matches = [j for j in candidates if contexts[j] == contexts[i]] or [
            j
            for j in candidates
            if all(
                a is None or b is None or a == b
                for a, b in zip(contexts[i], contexts[j], strict=True)
            )
        ]
        for j in matches:
            context = tuple(
                a if a is not None else b for a, b in zip(contexts[i], contexts[j], strict=True)
            )
            key = (methods[i], context, seeds[i])
            if key in seen:
                raise ValueError(
                    "paired differences: two pairs at seed "
                    f"{seeds[i]} for {describe(method_keys, methods[i]) or 'a method'} in "
                    f"context {describe(context_keys, context) or '(none)'} (rows, run and "
                    f"reference: {seen[key]} and {(i, j)}); add the key that tells them "
                    "apart to the method or context keys"
                )
            seen[key] = (i, j)
            pairs.append((i, j, context))
        if not matches:
            unpaired.append((i, contexts[i]))
    return Pairing(method_keys, list(context_keys), want, is_ref, methods, pairs, unpaired)


def _metric_values(rows: pd.DataFrame, metric: str) -> list[float]:
    """``metric`` per row as floats, NaN where the run did not finish (``finished`` false)."""
    import pandas as pd

    values = pd.to_numeric(rows[metric], errors="coerce").astype(float)
    if "finished" in rows.columns:
        finished = rows["finished"].fillna(False).astype(bool)
        values = values.where(finished)
    return values.tolist()


def _run_names(rows: pd.DataFrame) -> list[str]:
    if "run" not in rows.columns:
        return [str(i) for i in range(len(rows))]
    if "sweep" in rows.columns:
        return [f"{s}/{r}" for s, r in zip(rows["sweep"], rows["run"], strict=True)]
    return [str(r) for r in rows["run"]]


def paired_differences(
    table: pd.DataFrame,
    method_keys: Sequence[str],
    reference: Mapping[str, Any],
    *,
    metrics: Sequence[str] | str = ("final_accuracy",),
    context_keys: Sequence[str] | None = None,
    seed_key: str = "seed",
    min_seeds: int = MIN_SEEDS,
) -> pd.DataFrame:
    """One row per (metric, method, context): the paired differences of ``metric`` (this
    method minus ``reference`` at the same seed and context), their 95 % t-interval and the
    verdict (columns ``PAIRED_COLUMNS``; ``seeds`` and ``diffs`` are tuples in seed order).

    Args:
        table: one row per run; columns the method keys, the context keys, ``seed_key`` and
            the metrics (``finished``, when present, marks unfinished runs as missing).
        method_keys: the columns that name a method (``reference``'s keys are added).
        reference: method key -> the reference method's value.
        metrics: summary columns to compare (a name or several).
        context_keys: the columns paired on besides the seed (default: every column that is
            not a method key, a metric or in ``NOT_CONFIG``).
        seed_key: the seed column.
        min_seeds: seeds a verdict needs.
    """
    import pandas as pd

    metrics = [metrics] if isinstance(metrics, str) else list(metrics)
    if context_keys is None:
        context_keys = context_keys_of(table, [*reference, *method_keys], metrics)
    pairing = pair_runs(table, method_keys, reference, context_keys, seed_key)
    rows = table.reset_index(drop=True)
    seeds = rows[seed_key].tolist()
    ref_label = describe(list(pairing.reference), list(pairing.reference.values()))
    # (method, context) groups in the order of their first run in the table
    found = sorted(
        [(i, context, j) for i, j, context in pairing.pairs]
        + [(i, context, None) for i, context in pairing.unpaired],
        key=lambda t: t[0],
    )
    groups: dict[tuple, dict[str, list]] = {}
    for i, context, j in found:
        group = groups.setdefault((pairing.methods[i], context), {"pairs": [], "unpaired": []})
        if j is None:
            group["unpaired"].append(i)
        else:
            group["pairs"].append((i, j))
    out = []
    for metric in metrics:
        if metric not in rows.columns:
            raise ValueError(f"paired differences: the table has no column {metric}")
        values = _metric_values(rows, metric)
        for (method, context), group in groups.items():
            known = sorted(
                (
                    (seeds[i], values[i], values[j])
                    for i, j in group["pairs"]
                    if not (math.isnan(values[i]) or math.isnan(values[j]))
                ),
                key=lambda t: t[0],
            )
            diffs = [a - b for _, a, b in known]
            stats = verdict(diffs, min_seeds)
            out.append(
                {
                    "metric": metric,
                    "method": describe(pairing.method_keys, method),
                    "context": describe(pairing.context_keys, context),
                    "reference": ref_label,
                    "n_unpaired": len(group["unpaired"]),
                    "n_missing": len(group["pairs"]) - len(known),
                    "mean_method": _mean([a for _, a, _ in known]),
                    "mean_reference": _mean([b for _, _, b in known]),
                    "seeds": tuple(s for s, _, _ in known),
                    "diffs": tuple(diffs),
                    **stats,
                }
            )
    return pd.DataFrame(out, columns=PAIRED_COLUMNS)


def _mean(values: list[float]) -> float:
    return math.fsum(values) / len(values) if values else math.nan


def per_run_differences(
    table: pd.DataFrame,
    method_keys: Sequence[str],
    reference: Mapping[str, Any],
    *,
    metrics: Sequence[str] | str = ("final_accuracy",),
    context_keys: Sequence[str] | None = None,
    seed_key: str = "seed",
) -> pd.DataFrame:
    """``table`` with ``reference_run`` (the paired reference run, ``sweep/run``;
    ``(reference)`` on the reference's own runs, several partners joined by ``"; "``, "" for
    none) and ``<metric>_vs_reference`` (this run's metric minus its partner's: 0 on a reference
    run, NaN with no partner or several)."""
    metrics = [metrics] if isinstance(metrics, str) else list(metrics)
    if context_keys is None:
        context_keys = context_keys_of(table, [*reference, *method_keys], metrics)
    pairing = pair_runs(table, method_keys, reference, context_keys, seed_key)
    rows = table.reset_index(drop=True)
    names = _run_names(rows)
    partners: dict[int, list[int]] = {}
    for i, j, _ in pairing.pairs:
        partners.setdefault(i, []).append(j)
    column = []
    for i, ref in enumerate(pairing.is_reference):
        column.append("(reference)" if ref else "; ".join(names[j] for j in partners.get(i, [])))
    out = rows.assign(reference_run=column)
    for metric in metrics:
        if metric not in rows.columns:
            raise ValueError(f"paired differences: the table has no column {metric}")
        values = _metric_values(rows, metric)
        diffs = []
        for i, ref in enumerate(pairing.is_reference):
            mine = partners.get(i, [])
            if ref:
                diffs.append(values[i] - values[i])
            elif len(mine) == 1:
                diffs.append(values[i] - values[mine[0]])
            else:
                diffs.append(math.nan)
        out[f"{metric}_vs_reference"] = diffs
    return out


def paired_table_text(paired: pd.DataFrame) -> pd.DataFrame:
    """``paired`` as written to ``paired.csv``: ``seeds`` and ``diffs`` as bracketed lists."""
    return paired.assign(
        seeds=[str(list(s)) for s in paired["seeds"]],
        diffs=[str([float(d) for d in ds]) for ds in paired["diffs"]],
    )
