"""Reads of the evaluation app: its own rows (:mod:`.analyses`, the analyses recorded for
the pages) and the stored data ``evaluate`` scores (:mod:`.stored`: runs of a topic set,
judgment sets as qrels, sampled judgment sets as samples). Import them from
``evaluation.selectors``."""
from .analyses import analysis_get, analysis_job_list, analysis_list
from .stored import judgment_set_qrels, judgment_set_sampled_sample, stored_runs

__all__ = ["analysis_get", "analysis_job_list", "analysis_list", "judgment_set_qrels",
           "judgment_set_sampled_sample", "stored_runs"]
