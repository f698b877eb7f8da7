"""Reads for the crowd app: the worker flow, progress and exports (``studies``). Other apps
import from here. Topic sets, topics and variants are read through :mod:`topics.selectors`.
"""
from crowd.selectors.studies import (
    PROLIFIC_QUERY, STUDY_EXPORT_FIELDS, ItemPage, ItemRow, participant_get,
    participant_get_for_session,
    participant_item_page, participant_next_position, study_export_rows, study_get_by_slug,
    study_item_load, study_list, study_progress, study_variant_summary,
)

__all__ = [
    "PROLIFIC_QUERY", "STUDY_EXPORT_FIELDS", "ItemPage", "ItemRow",
    "participant_get", "participant_get_for_session", "participant_item_page", "participant_next_position",
    "study_export_rows", "study_get_by_slug", "study_item_load", "study_list", "study_progress",
    "study_variant_summary",
]
