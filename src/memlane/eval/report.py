"""Turning a :func:`run_eval` result into plain-text tables, or a JSON-able dict."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

__all__ = ["default_columns", "format_gate", "format_must_not", "format_report", "format_table", "to_json"]

_SHORT = {"recall": "R", "hit": "Hit", "ndcg": "NDCG", "mrr": "MRR"}


def _label(metric: str) -> str:
    name, _, k = metric.partition("@")
    return f"{_SHORT.get(name, name)}@{k}" if k else _SHORT.get(name, name)


def format_table(headers: Sequence[str], rows: Sequence[Sequence], *, title: str | None = None) -> str:
    """A plain-text table: first column left-aligned, the others right-aligned."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max(len(str(h)), *(len(r[i]) for r in cells)) if cells else len(str(h))
              for i, h in enumerate(headers)]
    lines = [title] if title else []
    lines.append("  ".join(str(h).ljust(w) if i == 0 else str(h).rjust(w)
                           for i, (h, w) in enumerate(zip(headers, widths))))
    lines.append("  ".join("-" * w for w in widths))
    for row in cells:
        lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))))
    return "\n".join(lines)


def _cell(value) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return "-" if math.isnan(value) else f"{value:.3f}"
    return str(value)


def default_columns(result: dict) -> list[str]:
    ks = result["ks"]
    return ([f"recall@{k}" for k in ks] + [f"hit@{k}" for k in ks if k > 1]
            + [f"ndcg@{result.get('ndcg_k', 10)}", "mrr"])


def _overall(result: dict, columns: list[str]) -> str:
    rows = []
    for mode in result["modes"]:
        agg = result["overall"][mode]
        lat = result["latency_ms"][mode]
        rows.append([mode, agg["n"], *(agg[c] for c in columns), f"{lat['p50']:.1f}", f"{lat['p95']:.1f}",
                     f"{agg['injected_units']:.1f}", round(agg["injected_tokens"])])
    headers = ["mode", "n", *map(_label, columns), "p50 ms", "p95 ms", "inj", "inj tok"]
    return format_table(headers, rows, title="ranking, a diagnostic (the full ranking, thresholds off; inj = units "
                                            "delivered; tok = their tokens)")


DELIVERED = ["delivered_recall", "delivered_hit", "injected_units", "relevant_share", "useful_share"]
_DELIVERED_LABELS = {"delivered_recall": "recall", "delivered_hit": "hit", "injected_units": "units",
                     "relevant_share": "relevant", "useful_share": "useful"}


def _delivered(result: dict) -> str:
    rows = []
    for mode in result["modes"]:
        agg = result["overall"][mode]
        rows.append([_product(result, mode), agg["n"], *(agg[c] for c in DELIVERED), agg["delivered_none"],
                     round(agg["injected_tokens"])])
    headers = ["mode", "n", *(_DELIVERED_LABELS[c] for c in DELIVERED), "none", "tokens"]
    return format_table(headers, rows, title="delivered: what recall returns as configured (recall = share of the "
                                            "relevant units it brings; units = how many it brings; relevant / useful "
                                            "= their share that is relevant / relevant or acceptable; none = prompts "
                                            "it brings nothing for)")


def _delivered_groups(result: dict, groups: Sequence[str] | None) -> list[str]:
    out = []
    for field, values in result["groups"].items():
        if groups is not None and field not in groups:
            continue
        rows = [[f"{value} / {_product(result, mode)}", by_mode[mode]["n"], *(by_mode[mode][c] for c in DELIVERED)]
                for value, by_mode in values.items() for mode in result["modes"]]
        out.append(format_table([f"{field} / mode", "n", *(_DELIVERED_LABELS[c] for c in DELIVERED)], rows,
                                title=f"delivered, by {field}"))
    return out


def _product(result: dict, mode: str) -> str:
    return f"{mode} (the product)" if mode in ("full", "keyword-full") else mode


def _groups(result: dict, columns: list[str], groups: Sequence[str] | None) -> list[str]:
    out = []
    for field, values in result["groups"].items():
        if groups is not None and field not in groups:
            continue
        rows = [[f"{value} / {mode}", by_mode[mode]["n"], *(by_mode[mode][c] for c in columns)]
                for value, by_mode in values.items() for mode in result["modes"]]
        out.append(format_table([f"{field} / mode", "n", *map(_label, columns)], rows, title=f"by {field}"))
    return out


def format_must_not(result: dict, ks: Sequence[int] | None = None) -> str:
    ks = ks or result["ks"]
    rows = []
    for mode, entry in result["must_not"].items():
        row = [mode] + [f"{entry[f'top{k}']['hits']}/{entry[f'top{k}']['total']}" for k in ks if f"top{k}" in entry]
        row.append(f"{entry['outranks_all']['count']}/{entry['outranks_all']['prompts']}")
        first = entry.get("first_delivered")
        row.append(f"{first['count']}/{first['prompts']}" if first else "-")
        rows.append(row)
    headers = ["mode", *(f"must_not in top{k}" for k in ks), "must_not outranks all relevant",
               "must_not delivered first"]
    return format_table(headers, rows, title="must_not (over prompts with must_not labels)")


def format_gate(result: dict) -> str:
    """What meaning adds to keyword search: the prompts where it finds a relevant unit keyword
    search missed, and the unlabelled units it brings besides (on a set with one or two labels a
    prompt, most of a top 5 is unlabelled by construction: not necessarily wrong)."""
    lines = ["meaning (embeddings) against keyword search alone:"]
    for mode, views in result["gate"].items():
        for view, g in views.items():
            where = f"in the top {result['gate_k']}" if view == "top_k" else "in what is delivered"
            lines.append(
                f"  {mode}, {where}: finds a relevant unit keyword search misses for {g['caught']} of {g['queries']} "
                f"queries ({g['caught_share']:.1%}) and misses one keyword search finds for {g['lost']}; brings "
                f"unlabelled units for {g['added_fp_queries']} ({g['added_fp_share']:.1%}; {g['added_fp_units']} of the "
                f"{g['returned_units']} units it returns, {g['added_fp_unit_rate']:.1%})")
    strict = {g["verdict"] for views in result["gate"].values() for g in views.values()}
    lines.append("  a strict test (found for at least 20% of queries, unlabelled additions for under 10%) "
                 + ("is met" if strict == {"build semantic"} else "is not met on this set"))
    return "\n".join(lines)


def format_report(result: dict, *, columns: Sequence[str] | None = None,
                  groups: Sequence[str] | None = None) -> str:
    """The whole result as text: header, overall table, one table per group, must_not, gate."""
    columns = list(columns or default_columns(result))
    ds = result["dataset"]
    head = (f"{ds['name']} ({ds['format']}): {ds['evaluated']} queries over {ds['scopes']} scope(s), "
            f"{ds['units']} units; embedder: {result['embedder'] or 'none (keyword only)'}")
    lines = [head]
    if ds.get("skipped"):
        lines.append("skipped queries: " + ", ".join(f"{why}: {n}" for why, n in ds["skipped"].items()))
    problems = ds.get("problems", [])
    lines += [f"problem: {p}" for p in problems[:5]]
    if len(problems) > 5:
        lines.append(f"... and {len(problems) - 5} more problem(s)")
    lines += [f"note: {n}" for n in result.get("notes", [])]
    parts = ["\n".join(lines), _delivered(result)]
    parts += _delivered_groups(result, groups)
    parts.append(_overall(result, columns))
    parts += _groups(result, columns, groups)
    if result.get("must_not"):
        parts.append(format_must_not(result))
    if result.get("gate"):
        parts.append(format_gate(result))
    timing = result.get("timing", {})
    if timing:
        parts.append("time: " + ", ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}"
                                          for k, v in timing.items()))
    return "\n\n".join(parts)


def to_json(result: dict, *, per_query: bool = True, indent: int | None = 2) -> str:
    """The result as JSON text (``per_query=False`` leaves the per-query records out)."""
    data = result if per_query else {k: v for k, v in result.items() if k != "per_query"}
    return json.dumps(data, indent=indent, ensure_ascii=False, default=str)
