"""The adaptive orders' replay, kept per process between leases (an LRU of topics)."""
from __future__ import annotations

import threading

from cachetools import LRUCache

from common import sql
from ..models import ITEM_TABLE, LABEL_TABLE
from .. import priority
from ..models import JudgingTask, TaskTopic

class _TopicReplay:
    """One topic's adaptive order kept between leases in this process: its contributing
    rankings (fixed when the task is made), the votes of the labels read so far and the
    replay (:class:`priority.AdaptiveReplay`) at its frontier.

    Every lease reads, in one statement, the topic's labels with an id above the last one
    read and the topic's count of labels and of withdrawn ones. Labels are only ever added
    (a submit or a revision) or withdrawn (an undo), so when the count grew by exactly the
    rows read and none was withdrawn, the new rows are all that changed: each
    (item, assessor) among them has its latest submit there, and that replaces its vote.
    Otherwise (an undo anywhere, or a label whose transaction committed after a higher id
    was read) the topic's labels are read again from scratch. Judgments made by any
    process are therefore seen at the next lease; the cache only saves work."""

    def __init__(self, order: str, rankings: list, n_items: int):
        self.replay = priority.AdaptiveReplay(order, rankings, n_items)
        self._reset()

    def _reset(self) -> None:
        self.last_id, self.total, self.withdrawn = 0, 0, 0
        self.votes: dict[int, dict[str, bool]] = {}
        self.known: dict[int, bool] = {}

    def sync(self, task: JudgingTask, topic: str, *, again: bool = False) -> set[int] | None:
        """Bring the votes up to date; the items whose relevance changed (None: all
        labels were read again). ``again``: read them all again."""
        if again:
            self._reset()
        rows = self._read(task, topic)
        withdrawn, total = (rows[-1][0] or 0), rows[-1][1]
        rows = rows[:-1]
        full = again or self.last_id == 0
        if total != self.total + len(rows) or withdrawn != self.withdrawn:
            if not full:  # something besides new labels: read them all again
                return self.sync(task, topic, again=True)
            full = True
        latest: dict[tuple[int, str], list[int]] = {}
        touched: set[tuple[int, str]] = set()
        for label_id, pos, assessor, grade, current, _ in rows:
            self.last_id = max(self.last_id, label_id)
            if pos is None:
                continue
            touched.add((pos - 1, assessor))
            if current:
                latest.setdefault((pos - 1, assessor), []).append(grade)
        if not full and touched - latest.keys():  # not without an undo; to be safe
            return self.sync(task, topic, again=True)
        self.total, self.withdrawn = total, withdrawn
        changed = set()
        for item, assessor in touched:
            grades = [g for g in latest.get((item, assessor), ()) if g is not None]
            votes = self.votes.setdefault(item, {})
            if grades:
                votes[assessor] = any(g > 0 for g in grades)
            else:  # cannot judge: no vote
                votes.pop(assessor, None)
            rel = 2 * sum(votes.values()) >= len(votes) if votes else None
            if not votes:
                del self.votes[item]
            if self.known.get(item) != rel:
                changed.add(item)
                if rel is None:
                    del self.known[item]
                else:
                    self.known[item] = rel
        return None if full else changed

    def _read(self, task: JudgingTask, topic: str) -> list[tuple]:
        """The labels above ``last_id`` (id, item position, assessor, grade, current),
        then (withdrawn count, count, ...) over all the topic's labels; one statement, so
        one snapshot."""
        return sql.fetch(
            f"SELECT l.id, i.position, l.assessor, l.grade, l.current, 0 AS agg "
            f"FROM {LABEL_TABLE} l LEFT JOIN {ITEM_TABLE} i ON i.id = l.item_id "
            f"WHERE l.judgment_set_id = %s AND l.topic_id = %s AND l.id > %s "
            f"UNION ALL SELECT SUM(CASE WHEN withdrawn THEN 1 ELSE 0 END), COUNT(*), "
            f"NULL, NULL, NULL, 1 FROM {LABEL_TABLE} WHERE judgment_set_id = %s AND topic_id = %s "
            f"ORDER BY agg",
            [task.judgment_set_id, topic, self.last_id, task.judgment_set_id, topic])


#: Topics whose adaptive order this process keeps (least recently used dropped first).
ADAPTIVE_CACHE_TOPICS = 32
_adaptive_cache: LRUCache[tuple, _TopicReplay] = LRUCache(maxsize=ADAPTIVE_CACHE_TOPICS)
_adaptive_lock = threading.Lock()


def _topic_replay(task: JudgingTask, topic: str) -> _TopicReplay:
    """The topic's cached replay, made (rankings read and decoded) on first use. Keyed by
    the task's id, creation time and order and the topic: a task's rankings never change
    once it is made."""
    key = (task.pk, task.created, task.order, topic)
    entry = _adaptive_cache.get(key)  # a hit counts as a use
    if entry is not None:
        return entry
    tt = TaskTopic.objects.only("size", "rankings", "offsets").get(task=task, topic_id=topic)
    rankings = priority.unpack_rankings(tt.rankings, tt.offsets)
    entry = _adaptive_cache[key] = _TopicReplay(task.order, rankings, tt.size)
    return entry


def adaptive_order(task: JudgingTask, topic: str):
    """The topic's items (0-based positions) in the task's adaptive order now, given every
    judgment in the database: the cached replay brought up to date."""
    with _adaptive_lock:  # threads of one process share the cache
        entry = _topic_replay(task, topic)
        changed = entry.sync(task, topic)
        return entry.replay.items(dict(entry.known), changed)
