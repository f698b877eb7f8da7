"""Pages of the judging app: assessors judge, organisers follow progress, crowd workers
judge a published task.

Three kinds of visitor, kept apart (who reaches which page is the table in common.roles;
the views here decide which rows each sees):

- assessors (signed-in accounts) reach a task when it lists them, or when it lists no one
  and is not published to the crowd; they judge as their user name and see only their own
  labels;
- organisers (staff) reach the task list, progress, exports and publishing under
  ``manage/``;
- crowd workers reach only ``w/<study slug>/``: the crowd app identifies them from the
  Prolific or MTurk link, and their browser holds a signed cookie scoped to that path.

The judging form posts without JavaScript; a signed reference in the form carries the
item, an idempotency key and the time the page was shown, so a double or retried submit
writes nothing twice. Document text is shown as text: the template escapes every piece.

One module per audience: :mod:`.assessors`, :mod:`.organisers` and :mod:`.crowd`, and
:mod:`.invites` for the links that make someone an assessor; the
judging page they share is :mod:`.page`.
"""
from .assessors import index, judge, undo
from .crowd import crowd_consent, crowd_done, crowd_entry, crowd_judge
from .invites import invite, manage_invite_new, manage_invite_revoke
from .organisers import (
    manage_collection,
    manage_export,
    manage_list,
    manage_publish,
    manage_resume,
    manage_stop,
    manage_task,
)

__all__ = [
    "crowd_consent", "crowd_done", "crowd_entry", "crowd_judge", "index", "invite", "judge",
    "manage_collection", "manage_invite_new", "manage_invite_revoke", "manage_export", "manage_list", "manage_publish", "manage_resume",
    "manage_stop", "manage_task", "undo",
]
