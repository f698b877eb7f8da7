"""common.spreadsheet is the one CSV writer: every CSV file goes through it, formulas are
neutralised there and nowhere else, numbers keep every digit."""
import io
import re
from pathlib import Path

from common.spreadsheet import spreadsheet_writer, tsv_writer

ROOT = Path(__file__).resolve().parents[2]
APPS = ["common", "config", "topics", "crowd", "retrieval", "pooling", "judging", "evaluation",
        "uploads", "projects"]


def test_no_other_module_writes_csv_itself():
    offenders = []
    for app in APPS:
        for path in (ROOT / app).rglob("*.py"):
            if path == ROOT / "common" / "spreadsheet.py":
                continue
            text = path.read_text(encoding="utf-8")
            if re.search(r"\bcsv\.(writer|DictWriter)\(", text):
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == [], "write CSV with common.spreadsheet.spreadsheet_writer"


def test_csv_cells_are_neutralised_and_numbers_kept():
    import numpy as np

    buf = io.StringIO()
    w = spreadsheet_writer(buf, ["a", "b", "c"])
    w.writeheader()
    w.writerow({"a": "=1+1", "b": -0.1 + 0.3, "c": np.float64(1 / 3)})
    w.writerow(["-x", -2, "@y"])
    assert buf.getvalue() == ("a,b,c\n'=1+1,0.19999999999999998,0.3333333333333333\n"
                              "'-x,-2,'@y\n")


def test_tsv_for_scripts_keeps_text_exactly():
    buf = io.StringIO()
    w = tsv_writer(buf, ["topic", "raw"])
    w.writeheader()
    w.writerow({"topic": "+t2", "raw": "=1+1"})
    assert buf.getvalue() == "topic\traw\n+t2\t=1+1\n"
