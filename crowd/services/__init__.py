"""Writes for the crowd app; each function that writes owns its transaction.

``studies``: study set-up and the worker flow. Other apps import from here. Topic and
query-variant imports are :mod:`topics.services`.
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
    response_submit,
    study_create,
)

__all__ = [
    "ACCOUNT_PREFIX",
    "SessionMismatch", "StudyClosed", "StudyError", "SubmitResult",
    "assignment_mark_shown", "item_page_show", "participant_arrive", "participant_consent",
    "response_submit",
    "study_create",
]
