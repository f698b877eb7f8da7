"""Reads of the judging app: judgment sets, qrels lines, tasks, progress, rankings.

Contract for pages and commands: getters raise ``ValueError`` naming what is known when
the name is unknown; nothing returns ``None`` on failure. Labels that count are the
``current`` ones (the latest revision not withdrawn) with a grade (a label the assessor
could not judge has none).

One module per job: :mod:`.qrels` (judgment sets and their export), :mod:`.tasks_read`
(tasks, progress, the queue's reads, the pages), :mod:`.gold` (crowd publication) and
:mod:`.invites` (invite links).
The names below are the app's read interface; import them from ``judging.selectors``.
"""
from .gold import (
    GOLD_TASKS_KEPT,
    crowd_worker_status,
    gold_items,
    gold_next,
    gold_passed,
    GoldItem,
    task_gold_accuracy,
)
from .invites import invite_state, task_invites
from .qrels import (
    EXPORT_FORMATS,
    task_export_formats,
    current_labels,
    judgment_set_get,
    judgment_set_list,
    qrels_file_sets,
    qrels_get,
    qrels_lines,
    qrels_records,
    qrels_summary,
    raw_rows,
    relevance_by_topic,
)
from .tasks_read import (
    MTURK_QUERY,
    assessor_item_labels,
    assessor_progress,
    assessor_recent_labels,
    document_query_texts,
    pool_contributing_rankings,
    pool_document_texts,
    pool_topic_statements,
    task_agreement,
    task_assessor_stats,
    task_collection,
    task_crowd_links,
    task_document,
    task_get,
    task_intent_stats,
    task_item_get,
    task_judged_by,
    task_judged_sequences,
    task_list,
    task_list_judged_by,
    task_progress,
    task_progress_held,
    task_topic,
    task_topics_stopping,
    topic_query_texts,
    topic_relevance_known,
)

__all__ = [
    "EXPORT_FORMATS",
    "task_export_formats",
    "GOLD_TASKS_KEPT",
    "GoldItem",
    "MTURK_QUERY",
    "assessor_item_labels",
    "assessor_progress",
    "assessor_recent_labels",
    "crowd_worker_status",
    "current_labels",
    "document_query_texts",
    "gold_items",
    "gold_next",
    "gold_passed",
    "invite_state",
    "judgment_set_get",
    "judgment_set_list",
    "qrels_file_sets",
    "qrels_get",
    "qrels_records",
    "qrels_summary",
    "pool_contributing_rankings",
    "pool_document_texts",
    "pool_topic_statements",
    "qrels_lines",
    "raw_rows",
    "relevance_by_topic",
    "task_agreement",
    "task_assessor_stats",
    "task_collection",
    "task_crowd_links",
    "task_document",
    "task_get",
    "task_gold_accuracy",
    "task_intent_stats",
    "task_invites",
    "task_item_get",
    "task_judged_by",
    "task_judged_sequences",
    "task_list",
    "task_list_judged_by",
    "task_progress",
    "task_progress_held",
    "task_topic",
    "task_topics_stopping",
    "topic_query_texts",
    "topic_relevance_known",
]
