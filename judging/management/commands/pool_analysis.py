"""Pool analyses as JSON (standard output, or --out FILE.json) or CSV (--out FILE.csv).

    pool_analysis sizes POOL
    pool_analysis growth (--topic-set T | --pool P) [--sources users systems]
                         [--depths 10 100] [--orders 10] [--seed 0] [--model M]
                         [--collection C] [--runs ID ...]
    pool_analysis rbo (--topic-set T | --pool P) [--p 0.9] [--reference {titles,pairs}]
                      [--model M] [--collection C] [--test {topic,pair}] [--runs ID ...]
    pool_analysis coverage --qrels Q POOL [POOL ...]
    pool_analysis scatter POOL [--qrels Q]

The seed paper's figures and tables (CSV of the rows behind each on standard output, or
JSON with --json; --figure FILE.svg|png|pdf also draws the figure):

    pool_analysis figure1 (--topic-set T | --pool P) [--depths 10 20 50 100] [--orders 10]
                          [--seed 0] [--model M] [--collection C] [--runs ID ...]
    pool_analysis figure2 (--topic-set T | --pool P) [--p 0.9] [--reference {titles,pairs}]
                          [--bins 20] [--model M] [--collection C] [--runs ID ...]
    pool_analysis figure3 POOL --qrels Q [--topic T] [--limit 1000]
    pool_analysis table1 (--topic-set T | --pool P) --depth D --qrels Q [--model M]
                         [--collection C] [--runs ID ...]

growth and rbo read the rankings of the runs that contribute now (the newest variants run
of the model and collection, every finished system run); with --pool those the pool was
built from; with --runs exactly those. The result lists the runs it read ("runs"), and
with --manifest the manifest records them as --runs, so verify_manifest reads the same
runs again whatever was imported or finished since.

--qrels names a judgment set (imported qrels are one): the command lives in the judging
app, the one that reads both pools and judgments, and hands the pooling analyses the
judgments as plain records.
"""
import io
import json
import os

from django.core.management.base import BaseCommand, CommandError

from common import figures as figure_output
from common.fileio import OutputError, atomic_output
from common.manifest_command import ManifestMixin
from common.spreadsheet import spreadsheet_writer
from judging.selectors import qrels_get, qrels_records
from pooling import analysis, paper, selectors
from pooling import figures as paper_figures

#: the seed paper's figures and tables: CSV on standard output unless --json
PAPER = ("figure1", "figure2", "figure3", "table1")
TABLE_COLUMNS = ["source", "depth", "size", "relevant", "irrelevant", "unjudged"]


class Command(ManifestMixin, BaseCommand):
    manifest_side_outputs = ("figure",)  # the drawing beside the output, not verified
    help = (
        "Pool analyses: sizes, growth (answers and system runs, power-law exponent with R² "
        "and per-topic exponents), rank-biased overlap with a one-sided test (Wilcoxon "
        "signed-rank over topic means, or the pair-level Mann-Whitney U), coverage against "
        "qrels, and shallowest rank against aggregate weight. JSON by default; --out "
        "FILE.csv writes a table."
    )

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="analysis", required=True)

        def add(name, help_text):
            p = sub.add_parser(name, help=help_text)
            p.add_argument("--out", default=None, help="FILE.csv or FILE.json (default: JSON "
                                                       "on standard output)")
            return p

        p = add("sizes", "pool size per topic and the mean")
        p.add_argument("pool")

        def add_runs(p):
            which = p.add_mutually_exclusive_group(required=True)
            which.add_argument("--topic-set", default=None)
            which.add_argument("--pool", default=None,
                               help="a pool (name or id): its topic set and the runs it was "
                                    "built from")
            p.add_argument("--runs", nargs="+", type=int, default=None, metavar="ID",
                           help="read exactly these runs (ids; of the topic set or pool)")

        p = add("growth", "pool size as users / systems are added")
        add_runs(p)
        p.add_argument("--sources", nargs="+", default=None, choices=["users", "systems"],
                       help="default: users and systems (with --pool, the pool's)")
        p.add_argument("--depths", nargs="+", type=int, default=[10, 100])
        p.add_argument("--orders", type=int, default=10, help="random orders to average")
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--model", default=None)
        p.add_argument("--collection", default=None)
        p = add("rbo", "RBO of user rankings (vs the title ranking or pairwise) and of "
                       "system run pairs")
        add_runs(p)
        p.add_argument("--p", type=float, default=0.9)
        p.add_argument("--reference", choices=["titles", "pairs"], default="titles")
        p.add_argument("--model", default=None)
        p.add_argument("--collection", default=None)
        p.add_argument("--test", choices=["topic", "pair"], default="topic",
                       help="topic: Wilcoxon signed-rank over per-topic mean RBO (default); "
                            "pair: Mann-Whitney U over pairs (pair-level, anti-conservative)")
        p.add_argument("--max-pairs", type=int, default=2000,
                       help="pairs per topic and group at most (a seeded sample beyond)")
        p.add_argument("--seed", type=int, default=0)
        p = add("coverage", "size, %% relevant, %% non-relevant, %% unjudged per topic")
        p.add_argument("pools", nargs="+")
        p.add_argument("--qrels", required=True)
        p = add("scatter", "shallowest rank and aggregate weight of every pooled document")
        p.add_argument("pool")
        p.add_argument("--qrels", default=None)

        def add_paper(name, help_text, figure=True):
            p = add(name, help_text)
            p.add_argument("--json", action="store_true",
                           help="JSON on standard output instead of CSV")
            if figure:
                p.add_argument("--figure", default=None, metavar="FILE",
                               help="also draw the figure to FILE.svg, FILE.png or FILE.pdf")
            return p

        p = add_paper("figure1", "Figure 1: pool size per topic against the number of "
                                 "systems and users, one line per depth, with the fit")
        add_runs(p)
        p.add_argument("--depths", nargs="+", type=int, default=[10, 20, 50, 100])
        p.add_argument("--orders", type=int, default=10, help="random orders to average")
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--model", default=None)
        p.add_argument("--collection", default=None)
        p = add_paper("figure2", "Figure 2: RBO distributions of user-vs-reference and "
                                 "system-vs-system pairs")
        add_runs(p)
        p.add_argument("--p", type=float, default=0.9)
        p.add_argument("--reference", choices=["titles", "pairs"], default="titles")
        p.add_argument("--bins", type=int, default=20)
        p.add_argument("--model", default=None)
        p.add_argument("--collection", default=None)
        p.add_argument("--max-pairs", type=int, default=2000)
        p.add_argument("--seed", type=int, default=0)
        p = add_paper("figure3", "Figure 3: pooled documents of a topic in order of summed "
                                 "RBP weight against their shallowest rank, with judgments")
        p.add_argument("pool")
        p.add_argument("--qrels", required=True)
        p.add_argument("--topic", default=None, help="default: every topic of the pool "
                                                      "(the figure draws the first)")
        p.add_argument("--limit", type=int, default=1000,
                       help="the heaviest documents of each topic kept (default 1000)")
        p = add_paper("table1", "Tables 1-2: mean pool size and the fractions relevant, "
                                "irrelevant and unjudged, for systems, users and combined",
                      figure=False)
        add_runs(p)
        p.add_argument("--depth", type=int, required=True)
        p.add_argument("--qrels", required=True)
        p.add_argument("--model", default=None)
        p.add_argument("--collection", default=None)

    def handle(self, *args, **o):
        self._draw = None
        try:
            data, header, rows = getattr(self, f"_{o['analysis']}")(o)
            if o.get("figure"):
                self._write_figure(o["figure"])
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if o["analysis"] in PAPER and not o.get("json") and not o.get("out"):
            buf = io.StringIO()
            w = spreadsheet_writer(buf)
            w.writerow(header)
            w.writerows(rows)
            self.stdout.write(buf.getvalue(), ending="")
            return
        out = o.get("out")
        try:
            if out and out.endswith(".csv"):
                with atomic_output(out, newline="") as f:  # no partial file on failure
                    w = spreadsheet_writer(f)
                    w.writerow(header)
                    w.writerows(rows)
                self.stderr.write(f"wrote {len(rows)} rows to {out}")
            elif out:
                with atomic_output(out) as f:
                    json.dump(data, f, indent=1)
                self.stderr.write(f"wrote {out}")
        except (OutputError, OSError) as exc:
            raise CommandError(str(exc) if isinstance(exc, OutputError)
                               else f"cannot write {out}: {exc.strerror}") from None
        else:
            if o["analysis"] not in PAPER or o.get("json"):
                self.stdout.write(json.dumps(data))

    def _write_figure(self, path: str) -> None:
        fmt = os.path.splitext(path)[1].lstrip(".").lower()
        if fmt not in ("svg", "png", "pdf"):
            raise ValueError(f"--figure {path}: give a file ending .svg, .png or .pdf")
        if self._draw is None:
            raise ValueError("this analysis draws no figure")
        body = figure_output.render(self._draw(), fmt)
        try:
            with atomic_output(path, mode="wb") as f:
                f.write(body)
        except (OutputError, OSError) as exc:
            raise CommandError(str(exc) if isinstance(exc, OutputError)
                               else f"cannot write {path}: {exc.strerror}") from None
        self.stderr.write(f"wrote {path}")

    def _sizes(self, o):
        s = selectors.pool_size_summary(selectors.pool_get(o["pool"]))
        rows = [[t, n] for t, n in s["sizes"].items()] + [["mean", s["mean_size"]]]
        return s, ["topic", "size"], rows

    def _runs_of(self, o) -> tuple[str, list[int] | None, object]:
        """``(topic set, run ids or None, pool or None)`` of ``--topic-set``/``--pool`` and
        ``--runs``."""
        pool = selectors.pool_get(o["pool"]) if o["pool"] else None
        topic_set = pool.topic_set.name if pool is not None else o["topic_set"]
        run_ids = o["runs"]
        if run_ids is None and pool is not None:
            run_ids = selectors.pool_run_ids(pool)
        return topic_set, run_ids, pool

    def _pin_runs(self, runs) -> None:
        self.manifest_pins = {**getattr(self, "manifest_pins", {}), "runs": sorted(set(runs))}

    def _growth(self, o):
        topic_set, run_ids, pool = self._runs_of(o)
        sources = o["sources"]
        if sources is None:
            sources = ({"users": ["users"], "systems": ["systems"]}.get(pool.sources,
                                                                          ["users", "systems"])
                       if pool is not None else ["users", "systems"])
        data = {
            src: analysis.pool_growth_analysis(
                topic_set, sources=src, depths=o["depths"], model_name=o["model"],
                collection_name=o["collection"], orders=o["orders"], seed=o["seed"],
                run_ids=run_ids,
            )
            for src in sources
        }
        self._pin_runs(r for res in data.values() for r in res["runs"])
        self.manifest_pins["sources"] = sources
        rows = []
        for src, res in data.items():
            for depth, curve in res["curves"].items():
                fit = res["fit"][depth]
                lo, hi = fit["x_ci95"] or (None, None)
                for k, n in enumerate(curve["n"]):
                    rows.append([src, depth, n, curve["topics"][k], curve["ordered"][k],
                                 curve["random"][k], fit["c"], fit["x"], fit["r2"],
                                 fit["range"][1] if fit["range"] else None,
                                 fit["x_mean"], lo, hi])
        header = ["sources", "depth", "n", "topics", "ordered_mean_size", "random_mean_size",
                  "fit_c", "fit_x", "fit_r2", "fit_max_n", "topic_x_mean", "topic_x_ci95_low",
                  "topic_x_ci95_high"]
        return data, header, rows

    def _rbo(self, o):
        topic_set, run_ids, _pool = self._runs_of(o)
        data = analysis.rbo_analysis(
            topic_set, p=o["p"], reference=o["reference"], model_name=o["model"],
            collection_name=o["collection"], max_pairs=o["max_pairs"], seed=o["seed"],
            test=o["test"], run_ids=run_ids,
        )
        self._pin_runs(data["runs"])
        rows = [[group, r["topic"], r["a"], r["b"], r["min"], r["res"], r["ext"]]
                for group in ("user", "system") for r in data[group]]
        return data, ["group", "topic", "a", "b", "rbo_min", "rbo_res", "rbo_ext"], rows

    def _coverage(self, o):
        qrels = qrels_get(o["qrels"])
        records = qrels_records(qrels)
        data, rows = {}, []
        cols = ["size", "relevant", "nonrelevant", "unjudged", "pct_relevant",
                "pct_nonrelevant", "pct_unjudged"]
        for ref in o["pools"]:
            pool = selectors.pool_get(ref)
            cov = analysis.pool_coverage(pool, records)
            data[pool.label] = {"sources": pool.sources, **cov}
            rows += [[pool.label, pool.sources, r["topic"]] + [r[c] for c in cols]
                     for r in cov["rows"] + [cov["mean"]]]
        return {"qrels": qrels.name, "pools": data}, ["pool", "sources", "topic"] + cols, rows

    def _scatter(self, o):
        pool = selectors.pool_get(o["pool"])
        qrels = qrels_get(o["qrels"]) if o["qrels"] else None
        points = analysis.pool_rank_weight_points(
            pool, qrels_records(qrels, selectors.pool_sizes(pool)) if qrels else None)
        cols = ["topic", "docid", "min_rank", "weight", "users", "systems", "judged", "relevant"]
        return ({"pool": pool.label, "qrels": qrels.name if qrels else None, "points": points},
                cols, [[p[c] for c in cols] for p in points])

    # --- the seed paper's figures and tables ---------------------------------------------

    def _figure1(self, o):
        topic_set, run_ids, _pool = self._runs_of(o)
        rows, results = paper.pool_growth_rows(
            topic_set, depths=o["depths"], model_name=o["model"],
            collection_name=o["collection"], orders=o["orders"], seed=o["seed"],
            run_ids=run_ids)
        self._pin_runs(r for res in results.values() for r in res["runs"])
        self._draw = lambda: paper_figures.pool_growth_figure(rows)
        cols = list(paper_figures.GROWTH_COLUMNS)
        return ({"topic_set": topic_set, "rows": rows,
                 "runs": sorted({r for res in results.values() for r in res["runs"]})},
                cols, [[r[c] for c in cols] for r in rows])

    def _figure2(self, o):
        topic_set, run_ids, _pool = self._runs_of(o)
        if o["bins"] < 1:
            raise ValueError("--bins must be at least 1")
        res = analysis.rbo_analysis(
            topic_set, p=o["p"], reference=o["reference"], model_name=o["model"],
            collection_name=o["collection"], max_pairs=o["max_pairs"], seed=o["seed"],
            run_ids=run_ids)
        self._pin_runs(res["runs"])
        rows = paper.rbo_distribution_rows(res, bins=o["bins"])
        title = f"RBO (p = {o['p']:g}) distributions"
        self._draw = lambda: paper_figures.rbo_distribution_figure(rows, title=title)
        cols = list(paper_figures.RBO_COLUMNS)
        return ({"topic_set": topic_set, "p": o["p"], "reference": o["reference"],
                 "summary": res["summary"], "rows": rows, "runs": res["runs"]},
                cols, [[r[c] for c in cols] for r in rows])

    def _figure3(self, o):
        pool = selectors.pool_get(o["pool"])
        qrels = qrels_get(o["qrels"])
        if o["limit"] < 1:
            raise ValueError("--limit must be at least 1")
        records = qrels_records(qrels, [o["topic"]] if o["topic"] else selectors.pool_sizes(pool))
        rows = paper.rank_weight_rows(pool, records, topic_id=o["topic"], limit=o["limit"])
        if rows:
            first = rows[0]["topic"]
            drawn = [r for r in rows if r["topic"] == first]
            title = f"Topic {first} of pool {pool.label} ({qrels.name})"
            self._draw = lambda: paper_figures.rank_weight_figure(drawn, title=title)
        cols = list(paper_figures.RANK_WEIGHT_COLUMNS)
        return ({"pool": pool.label, "qrels": qrels.name, "rows": rows},
                cols, [[r[c] for c in cols] for r in rows])

    def _table1(self, o):
        topic_set, run_ids, _pool = self._runs_of(o)
        qrels = qrels_get(o["qrels"])
        data = paper.judgment_table(topic_set, depth=o["depth"], qrels=qrels_records(qrels),
                                    qrels_name=qrels.name, model_name=o["model"],
                                    collection_name=o["collection"], run_ids=run_ids)
        self._pin_runs(data["runs"])
        return data, TABLE_COLUMNS, [[r[c] for c in TABLE_COLUMNS] for r in data["rows"]]
