"""Reads for the crowd app.

``topics``: topic sets, topics and query variants. ``studies``: the worker flow, progress
and exports. Other apps import from here.
"""
from crowd.naturalsort import natural_key
from crowd.selectors.studies import (
    PROLIFIC_QUERY,
    STUDY_EXPORT_FIELDS,
    VARIANT_EXPORT_FIELDS,
    ItemPage,
    ItemRow,
    participant_get_for_session,
    participant_item_page,
    participant_next_position,
    study_export_rows,
    study_get_by_slug,
    study_item_load,
    study_list,
    study_progress,
    study_variant_summary,
)
from crowd.selectors.topics import (
    VariantGroup,
    topic_list,
    topic_set_list,
    topic_get,
    topic_page,
    topic_set_get,
    variant_groups,
    variant_label,
    variant_list,
    variant_list_by_topic,
    variant_stats,
)

__all__ = [
    "natural_key",  # the one topic-id order; every page listing topics sorts with it
    "PROLIFIC_QUERY", "STUDY_EXPORT_FIELDS", "VARIANT_EXPORT_FIELDS",
    "ItemPage", "ItemRow", "VariantGroup",
    "participant_get_for_session", "participant_item_page", "participant_next_position",
    "study_export_rows", "study_get_by_slug", "study_item_load", "study_list", "study_progress",
    "study_variant_summary", "topic_list", "topic_set_get", "topic_set_list", "topic_get", "topic_page",
    "variant_groups", "variant_label", "variant_list", "variant_list_by_topic", "variant_stats",
]
