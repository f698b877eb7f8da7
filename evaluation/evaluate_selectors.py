"""The former home of :mod:`evaluation.selectors.stored`, kept only for the demo's import
until the demo leaves the crowd app; import from ``evaluation.selectors``."""
from evaluation.selectors.stored import judgment_set_qrels, stored_runs

__all__ = ["judgment_set_qrels", "stored_runs"]
