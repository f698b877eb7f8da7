"""The release's README (a datasheet after Gebru et al.) and ``CITATION.cff``, filled from
the records. Plain Python; no Django."""
from __future__ import annotations

import json
from collections import Counter

from .base import AGGREGATION, ORGANISER

def _yaml_str(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a YAML string


def _citation(rec: dict, lic: dict, title: str | None, authors: list[str] | None) -> str:
    title = title or f"{rec['topic_set']}: a test collection"
    lines = ["cff-version: 1.2.0",
             "message: If you use this test collection, please cite it as below.",
             "type: dataset", f"title: {_yaml_str(title)}", "authors:"]
    for a in authors or [ORGANISER]:
        lines.append(f"  - name: {_yaml_str(a)}")
    lines += [f"license: {lic['spdx']}",
              f"abstract: {_yaml_str(_abstract(rec))}",
              "keywords:", "  - information retrieval", "  - test collection",
              "  - query variants", "  - relevance judgments"]
    return "\n".join(lines) + "\n"


def _abstract(rec: dict) -> str:
    n_var = sum(v["count"] for v in rec["variants"])
    n_labels = sum(len(js["labels"]) for js in rec["judgment_sets"])
    return (f"{len(rec['topics'])} topics with {n_var} query variants, "
            f"{len(rec['runs'])} runs, {len(rec['pools'])} pools and {n_labels} relevance "
            "labels.")


def _quote(text: str) -> str:
    return "\n".join("> " + line if line else ">" for line in text.strip().splitlines()) or "> (empty)"


def datasheet(rec: dict, lic: dict, files: dict[str, str], figures: dict,
              *, title: str | None = None) -> str:
    """The release's README: a datasheet after Gebru et al. (2021), "Datasheets for
    Datasets" (CACM 64(12)), filled from the records; what only the organiser knows is
    marked ``[ORGANISER: to complete]``."""
    topics, variants = rec["topics"], rec["variants"]
    workers = {v["worker"] for v in variants if v["worker"]}
    statements = sum(len(t["statements"]) for t in topics)
    n_intents = sum(len(t["intents"]) for t in topics)
    answers = sum(v["count"] for v in variants)
    sources = Counter(v["source"] for v in variants)
    labels = [lb for js in rec["judgment_sets"] for lb in js["labels"]]
    assessors = {lb["assessor"] for lb in labels}
    simulated = sum(1 for lb in labels if lb["simulated"])
    sim_assessors = {lb["assessor"] for lb in labels if lb["simulated"]}
    w = []
    say = w.append
    say(f"# {title or rec['topic_set']}: a test collection\n")
    say(f"A release of the topic set `{rec['topic_set']}`: {_abstract(rec)} This datasheet "
        "follows Gebru et al., \"Datasheets for Datasets\" (Communications of the ACM 64(12), "
        f"2021). Places marked `{ORGANISER}` are for the organiser to fill in before "
        "publishing.\n")
    say("## Motivation\n")
    say(f"- For what purpose was the collection created? {ORGANISER}")
    say(f"- Who created it, on behalf of whom, and who funded it? {ORGANISER}\n")
    say("## Composition\n")
    say(f"- Topics: {len(topics)}, with {statements} information-need statements and "
        f"{n_intents} intents (subtopics) — `topics.jsonl`.")
    say(f"- Query variants: {len(variants)} rows, {answers} answers in all (a row's `count` "
        f"says how often its text was given), from {len(workers)} pseudonymous workers — "
        "`variants.jsonl`. "
        + (", ".join(f"{n} {'collected here' if s == 'crowd' else 'imported'}"
                     for s, n in sorted(sources.items())) + "." if sources else ""))
    for run in rec["runs"]:
        what = ("system run" if run["kind"] == "system" else
                f"retrieved with {run['model']} over {run['collection']} from {run['source']}")
        say(f"- Run `{run['name']}` ({what}, depth {run['depth']}): {len(run['queries'])} "
            f"queries — `runs/{run['name']}.run`.")
    for pool in rec["pools"]:
        docs = sum(len(tp["docids"]) for tp in pool["topics"])
        say(f"- Pool `{pool['name']}` ({pool['strategy']}, depth {pool['depth']}, sources "
            f"{pool['sources']}): {docs} documents over {len(pool['topics'])} topics, built "
            f"from {', '.join('`' + r + '`' for r in pool['runs']) or 'no recorded run'} — "
            f"`pools/{pool['name']}.tsv`.")
    for js in rec["judgment_sets"]:
        n_ass = len({lb["assessor"] for lb in js["labels"]})
        n_sim = sum(1 for lb in js["labels"] if lb["simulated"])
        qrels = [p for p in sorted(files) if p.startswith(f"judgments/{js['name']}/qrels.")]
        say(f"- Judgment set `{js['name']}`: {len(js['labels'])} labels by {n_ass} "
            f"pseudonymous assessor(s), {n_sim} of them simulated — "
            f"`judgments/{js['name']}/labels.jsonl`; qrels aggregated by {AGGREGATION} vote "
            f"(ties to the higher grade): {', '.join('`' + q + '`' for q in qrels) or 'none'}.")
        fig = figures.get(js["name"], {})
        summary = fig.get("agreement", {}).get("overall") if isinstance(
            fig.get("agreement"), dict) else None
        if isinstance(summary, dict):
            shown = {k: v for k, v in sorted(summary.items())
                     if isinstance(v, (int, float)) and not isinstance(v, bool)}
            if shown:
                say("  Agreement (overall): " + ", ".join(
                    f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}"
                    for k, v in shown.items()) + ".")
        for key, why in sorted(fig.get("not computed", {}).items()):
            say(f"  {key.capitalize()} not computed: {why}.")
    say(f"- Documents: not included; the collections are named in `release.json` with their "
        f"document counts and checksums. Where to obtain them: {ORGANISER}\n")
    say("## Collection process\n")
    if rec["studies"]:
        for n, s in enumerate(rec["studies"], 1):
            say(f"### Study {n}: {s['title'] or '(untitled)'}\n")
            say(f"Each statement was to be answered by {s['responses_per_statement']} "
                f"workers; each worker was given up to {s['statements_per_worker']} "
                f"statements. Answers were limited to {s['max_query_chars']} characters; "
                f"answers given in under {s['min_seconds_per_answer']:g} seconds were marked "
                f"too fast; near-copies of the statement (Jaccard ≥ "
                f"{s['copy_jaccard_threshold']:g} over at least {s['copy_min_tokens']} tokens) "
                "were refused"
                + ("; spelling was corrected towards the topic's words." if s["spell_correct"]
                   else "."))
            say("\nThe consent text shown to workers:\n")
            say(_quote(s["consent_text"]) + "\n")
            if s["instructions"].strip():
                say("Instructions:\n")
                say(_quote(s["instructions"]) + "\n")
            if s["question_text"].strip():
                say(f"Question asked beside each statement: {s['question_text']}\n")
    else:
        say("No crowd study of this topic set is recorded here (variants and labels were "
            f"imported). How they were collected: {ORGANISER}\n")
    say(f"- Pay: not recorded by the application. {ORGANISER} (pay per task, hourly rate, "
        "platform fees).")
    say(f"- Recruitment (platform, eligibility, countries): {ORGANISER}")
    say(f"- Ethical review: {ORGANISER}\n")
    say("## Preprocessing\n")
    say("- `raw` is the text as typed; `normalised` is the text runs were retrieved with "
        "(`uncorrected`: before spelling correction, where it was on).")
    say(f"- Qrels combine the labels that count (the latest revision of each assessor) by "
        f"{AGGREGATION} vote; `labels.jsonl` keeps every revision (`current`, `withdrawn`).\n")
    say("## Privacy\n")
    say("Worker and assessor ids are pseudonyms: `anon-` and 16 hex digits of a keyed hash "
        "(HMAC-SHA256) whose key stays with the installation that made the release. No "
        "platform id (Prolific, MTurk), assignment or session id and no address-derived data "
        "is part of the release. The same person has the same pseudonym throughout it.\n")
    say("## Known limitations\n")
    if simulated:
        say(f"- {simulated} of {len(labels)} labels were given by simulated assessors "
            f"({', '.join(sorted(sim_assessors))}), not people; they are flagged "
            "`simulated` in `labels.jsonl`.")
    if labels and len(assessors) == 1:
        say("- Every label comes from one assessor: no agreement figure can be given.")
    if any(js["source"] == "task" for js in rec["judgment_sets"]):
        say("- The judging scale and task settings are not part of the files. "
            f"The scale's grades: {ORGANISER}")
    say("- Whether a query variant came from a simulated worker is not recorded per "
        "variant; the study texts above say when a study was simulated.")
    say(f"- Other limitations: {ORGANISER}\n")
    say("## Distribution and maintenance\n")
    say(f"- Licence: {lic['name']} (`{lic['spdx']}`), <{lic['url']}>; see `LICENSE.md`.")
    say("- Cite as in `CITATION.cff`. `MANIFEST.sha256` lists the SHA-256 of every file "
        "(`sha256sum -c MANIFEST.sha256`).")
    say(f"- Maintainer and contact: {ORGANISER}\n")
    return "\n".join(w)
