"""Writes of the judging app: imports, judging tasks, the assignment queue, judgments.

The contract pages and commands rely on (every function raises ``ValueError`` subclasses
with a message a person can act on, never returns ``None`` on failure):

- :func:`judgments_import` — a judgment file into a new judgment set, all or nothing.
- :func:`qrels_import` — a TREC qrels file into a new judgment set (qrels are a judgment
  set read from a file: one label per line by the assessor ``qrels``), all or nothing.
- :func:`judging_task_create` — a task over a pool: its judgment set, items and K slots
  per item.
- :func:`batch_lease` — the assessor's current batch: the live leases they hold, else the
  next ``task.batch`` items of their topic in the task's priority order, leased for
  ``task.lease_minutes``. An empty list means nothing is left for this assessor.
- :func:`judgment_submit` — the grades of one leased (or already judged: a revision) item;
  idempotent per ``submit_key`` (give every rendered form a fresh key: a double or retried
  submit of that form writes nothing and returns the labels of the first).
- :func:`judgment_undo` — withdraw the assessor's latest revision of an item: the previous
  revision counts again, or, if there was none, the item is leased to them again.
- :func:`leases_expire` — return expired leases to the queue (also done by every lease).
- :func:`topic_stop_check`, :func:`judging_task_stop_rule_set`, :func:`topic_resume` — the
  task's stopping rule (:mod:`judging.stopping`): a topic it stops hands out no more
  items until the organiser resumes it.

Guarantees of the queue, on PostgreSQL under any concurrency and on SQLite (where writers
are serialised): an item is held (leased or done) by at most K assessors, because it has K
slot rows; never twice by one assessor (unique (item, assessor) on slots); slots are
claimed with ``SELECT … FOR UPDATE SKIP LOCKED`` and the claim only updates rows still
free, so two assessors never get the same slot; one assessor's requests are serialised by
locking their :class:`~judging.models.TaskAssessor` row. An expired lease is forgotten:
its slot returns to the queue and may go to anyone, the same assessor included (they
never judged it).

Progress is read without scanning slots: each topic's count of done slots
(``TaskTopic.slots_done``) changes only here, in the transaction that moves a slot into
``done`` (a first submit) or out of it (an undo), so it always equals a recount.

One module per job: :mod:`.imports` (judgment files), :mod:`.judging_tasks` (scales and task
creation), :mod:`.queue` (leases and batches), :mod:`.adaptive` (the per-process replay of
the adaptive orders), :mod:`.refits` (the learned orders' models, refitted by a leased
background job whose stored ranking the queue reads), :mod:`.judgments` (submit and undo),
:mod:`.topic_stop` (the stopping rule), :mod:`.publication` (the document collection, crowd
publication, gold answers) and :mod:`.invites` (invite links that make someone an assessor
of a task).
The names below are the app's write interface; import them from ``judging.services``.
"""
from .adaptive import ADAPTIVE_CACHE_TOPICS
from .invites import (
    INVITE_DAYS,
    MAX_INVITE_DAYS,
    InviteError,
    invite_accept,
    invite_check,
    invite_create,
    invite_revoke,
)
from .imports import (
    LABEL_BATCH,
    QRELS_ASSESSOR,
    judgment_set_delete,
    judgments_import,
    qrels_import,
    topic_set_ambiguity,
)
from .judging_tasks import MAX_REDUNDANCY, SCALES, judging_task_create, scale_grades
from .judgments import judgment_submit, judgment_undo
from .publication import gold_answer_submit, judging_task_collection_set, judging_task_publish
from .queue import LeasedItem, LeaseLost, QueueError, batch_lease, leases_expire, leases_release
from .refits import refit_fail, refit_failure_message, topic_refit
from .topic_stop import judging_task_stop_rule_set, topic_resume, topic_stop_check

__all__ = [
    "ADAPTIVE_CACHE_TOPICS", "INVITE_DAYS", "LABEL_BATCH", "MAX_INVITE_DAYS", "MAX_REDUNDANCY",
    "QRELS_ASSESSOR", "SCALES", "InviteError", "LeaseLost", "LeasedItem", "QueueError",
    "invite_accept", "invite_check", "invite_create", "invite_revoke",
    "batch_lease", "gold_answer_submit", "judging_task_collection_set", "judging_task_create",
    "judging_task_publish", "judging_task_stop_rule_set", "judgment_set_delete",
    "judgment_submit", "judgment_undo", "judgments_import", "leases_expire", "leases_release",
    "qrels_import", "refit_fail", "refit_failure_message", "scale_grades", "topic_refit",
    "topic_resume", "topic_set_ambiguity", "topic_stop_check",
]
