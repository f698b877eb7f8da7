"""Readers for the reference evaluators' own output files (trec_eval, ndeval, NTCIREVAL)."""
from __future__ import annotations

import csv
import re
from pathlib import Path

WEB2011_RUNS = ("fair", "good", "noisy", "partial", "tied", "weak")


def trec_eval_output(path: Path) -> list[tuple[str | None, str, str, str]]:
    """``(run or None, measure, topic, printed value)`` from ``trec_eval [-q]`` output, with
    or without a leading run column."""
    rows = []
    for line in Path(path).read_text().splitlines():
        cols = [c.strip() for c in line.split("\t")] if "\t" in line else line.split()
        if len(cols) == 4:
            rows.append((cols[0], cols[1], cols[2], cols[3]))
        elif len(cols) == 3:
            rows.append((None, cols[0], cols[1], cols[2]))
    return rows


_CUT = re.compile(r"^(P|recall|ndcg_cut)_(\d+)$")


def trec_eval_name(measure: str, rel_level: int = 1) -> str | None:
    """Our measure name for a trec_eval measure, None for measures we do not compute."""
    simple = {"map": "AP", "recip_rank": "RR", "Rprec": "Rprec", "ndcg": "nDCG",
              "rbp": "RBP(p=0.9)", "rbp_resid": "RBP_resid(p=0.9)"}
    m = _CUT.match(measure)
    if m:
        base, k = {"P": "P", "recall": "R", "ndcg_cut": "nDCG"}[m.group(1)], m.group(2)
    elif measure in simple:
        base, k = simple[measure], None
    else:
        return None
    if rel_level != 1 and base in ("AP", "P", "R", "RR", "Rprec"):
        base = f"{base}(rel={rel_level})"
    return base + (f"@{k}" if k else "")


NDEVAL_COLUMNS = {"NRBP": "NRBP", "nNRBP": "nNRBP", "MAP-IA": "AP_IA"}
for _k in (5, 10, 20):
    NDEVAL_COLUMNS.update({
        f"ERR-IA@{_k}": f"ERR_IA@{_k}", f"nERR-IA@{_k}": f"nERR_IA@{_k}",
        f"alpha-DCG@{_k}": f"alpha_DCG@{_k}", f"alpha-nDCG@{_k}": f"alpha_nDCG@{_k}",
        f"P-IA@{_k}": f"P_IA@{_k}", f"strec@{_k}": f"StRecall@{_k}",
    })


def ndeval_output(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def tsv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))
