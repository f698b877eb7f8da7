"""The ready-made retrieval models that exist after ``migrate``. Plain data, no Django."""

READY_MADE_MODELS = [
    dict(name="bm25", kind="bm25", k1=0.9, b=0.4,
         description="BM25 with Anserini's defaults k1=0.9, b=0.4"),
    dict(name="bm25-okapi", kind="bm25", k1=1.2, b=0.75,
         description="BM25 with the classic k1=1.2, b=0.75"),
    dict(name="qld", kind="qld", mu=1000.0,
         description="Query likelihood with Dirichlet smoothing, mu=1000"),
    dict(name="sdm", kind="sdm", sdm_base="bm25", k1=0.9, b=0.4,
         term_weight=0.85, ordered_weight=0.1, unordered_weight=0.05,
         description="Sequential dependence model 0.85/0.1/0.05 on BM25 (0.9/0.4)"),
]
