"""Writes for the crowd app; each function that writes owns its transaction.

``topics``: topic and query-variant imports. ``studies``: study set-up and the worker
flow. Other apps import from here.
"""
from crowd.services.studies import (
    ACCOUNT_PREFIX,
    SessionMismatch,
    StudyClosed,
    StudyError,
    SubmitResult,
    assignment_mark_shown,
    item_page_show,
    participant_arrive,
    participant_consent,
    participant_get,
    response_submit,
    study_create,
)
from crowd.services.topics import (
    ImportRejected,
    spell_checked,
    topic_vocabularies,
    topics_import,
    variants_import,
)

__all__ = [
    "ACCOUNT_PREFIX",
    "ImportRejected", "SessionMismatch", "StudyClosed", "StudyError", "SubmitResult",
    "assignment_mark_shown", "item_page_show", "participant_arrive", "participant_consent",
    "participant_get", "response_submit",
    "spell_checked", "study_create", "topic_vocabularies", "topics_import", "variants_import",
]
