"""A test collection as a release: the files, written and read. Plain Python; no Django.

A release is a function of the data: the same records give the same bytes (sorted keys,
records in a fixed order, no time stamps, no random salt; the ``.tar.gz`` has fixed
mtimes, owners and modes and a gzip header with mtime 0). :func:`write_release` writes a
:class:`dict` of records (see :func:`records_check` for its parts; a run's ``queries`` are
listed and its ``rankings`` is a function yielding ``(qid, docids, scores)`` in their
order, so a run is written one batch at a time) as a folder or archive;
:func:`read_release` reads such a folder back into the same records, after checking the
manifest and every file, as input from elsewhere is checked (:mod:`.read`: a ``.tar.gz``
is streamed with caps, a folder read without following links; its runs' rankings are
read from their files when used). The database side (what the records are made from, and how they are stored
again) is :mod:`projects.services`.

Layout (every path in ``MANIFEST.sha256``, ``sha256sum -c`` format)::

    README.md             datasheet after Gebru et al., "Datasheets for Datasets"
    CITATION.cff          how to cite the release
    LICENSE.md            the licence's name, SPDX id and address (not its text)
    release.json          topic set, licence, studies, collections, retrieval models,
                          runs, pools and judgment sets (their parameters)
    topics.jsonl          topics with statements and intents
    variants.jsonl        query variants: raw and normalised text, count, worker pseudonym
    runs/NAME.run         TREC run (query id: the topic, or topic:label for variant runs)
    runs/NAME.queries.jsonl   the run's queries: text, weight, users (pseudonyms)
    pools/NAME.tsv        pooled documents per topic in priority order with their weights
    judgments/NAME/labels.jsonl        raw labels per assessor (pseudonyms, ``simulated``)
    judgments/NAME/qrels.adhoc.txt     aggregated qrels (``release.json`` names the rule)
    judgments/NAME/qrels.diversity.txt
    judgments/NAME/agreement.json      evaluation.agreement.agreement_summary
    judgments/NAME/intents.json        evaluation.intents.intent_properties

Worker and assessor ids are pseudonyms (:func:`pseudonym`): ``anon-`` and 16 hex digits
of an HMAC-SHA256 of the id under a per-installation salt that is never written. An id
that already is a pseudonym (it came in with a release) goes out unchanged.

One module per job: :mod:`.base` (format, licences, pseudonyms, canonical JSON, file
names), :mod:`.write` (the files and the folder or archive), :mod:`.datasheet` (README and
citation) and :mod:`.read` (manifest check and reading back). The names below are the
release's interface; import them from ``projects.release``.
"""
from .base import (
    AGGREGATION,
    FORMAT,
    LICENCES,
    MANIFEST,
    NO_INTENT,
    ORGANISER,
    PSEUDONYM_RE,
    ReleaseError,
    dumps,
    licence_get,
    pseudonym,
    records_check,
    run_qid,
    safe_name,
)
from .datasheet import datasheet
from .read import Limits, manifest_check, open_release, read_release, unpack_archive
from .write import (
    aggregated_qrels,
    label_figures,
    manifest_text,
    release_files,
    write_release,
    write_tar,
)

__all__ = [
    "AGGREGATION",
    "FORMAT",
    "LICENCES",
    "Limits",
    "MANIFEST",
    "NO_INTENT",
    "ORGANISER",
    "PSEUDONYM_RE",
    "ReleaseError",
    "aggregated_qrels",
    "datasheet",
    "dumps",
    "label_figures",
    "licence_get",
    "manifest_check",
    "manifest_text",
    "open_release",
    "pseudonym",
    "read_release",
    "records_check",
    "release_files",
    "run_qid",
    "safe_name",
    "unpack_archive",
    "write_release",
    "write_tar",
]
