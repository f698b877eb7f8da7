"""Studies: collecting query variants from crowd workers.

Ids that come from outside (worker ids) are strings. Topics, statements and query variants
are the topics app's.
"""
from django.db import models

from topics.models import QueryVariant, Statement, TopicSet


def _new_study_slug() -> str:
    import secrets

    return secrets.token_urlsafe(16)


class Study(models.Model):
    """A collection run: workers read statements and type the first query they would use.

    The public entry URL carries ``slug``, an unguessable token. Answer rules (maximum
    length, minimum seconds before an answer counts as too fast, the near-copy threshold)
    are per study so organisers can tune them; see ``crowd.quality`` for the rules.
    """

    name = models.CharField(max_length=200)  # internal: organisers' pages only
    # What workers see (never the internal name); empty shows DEFAULT_TITLE.
    title = models.CharField(max_length=200, blank=True, default="")
    slug = models.CharField(max_length=64, unique=True, default=_new_study_slug)
    # When set, arrivals must carry this Prolific STUDY_ID / one of these MTurk hitIds
    # (one per line): a link copied into another study or HIT is refused.
    prolific_study_id = models.CharField(max_length=200, blank=True, default="")
    mturk_hit_ids = models.TextField(blank=True, default="")
    topic_set = models.ForeignKey(TopicSet, on_delete=models.PROTECT, related_name="studies")
    responses_per_statement = models.PositiveIntegerField(default=10)
    statements_per_worker = models.PositiveIntegerField(default=5)
    consent_text = models.TextField()
    instructions = models.TextField(blank=True, default="")
    # Optional question asked beside every statement; the answer is stored as the
    # variant's ``estimate`` (UQV100 asked how many useful documents the worker expected
    # to need). ``question_choices``: one choice per line; empty means free text.
    question_text = models.CharField(max_length=500, blank=True, default="")
    question_choices = models.TextField(blank=True, default="")
    completion_code = models.CharField(max_length=100)
    max_query_chars = models.PositiveIntegerField(default=200)
    min_seconds_per_answer = models.FloatField(default=5.0)
    copy_jaccard_threshold = models.FloatField(default=0.8)
    copy_min_tokens = models.PositiveIntegerField(default=6)
    # Correct typos in the variant's normalised text towards words the topic uses
    # (topics.spelling); the uncorrected text is kept on the variant.
    spell_correct = models.BooleanField(default=False)
    # An assignment without an answer stops counting against the quota after this long.
    assignment_timeout_minutes = models.PositiveIntegerField(default=60)
    is_open = models.BooleanField(default=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created", "id"]
        verbose_name_plural = "studies"

    DEFAULT_TITLE = "Search queries study"

    def __str__(self):
        return self.name

    @property
    def public_title(self) -> str:
        """The title shown to workers."""
        return self.title.strip() or self.DEFAULT_TITLE

    def mturk_hit_id_list(self) -> list[str]:
        return [h.strip() for h in self.mturk_hit_ids.splitlines() if h.strip()]

    def question_choice_list(self) -> list[str]:
        return [c.strip() for c in self.question_choices.splitlines() if c.strip()]


class StudyItem(models.Model):
    """One thing a worker may be shown: a statement, an attention check or a gold item.

    Attention checks carry their own ``prompt`` (e.g. "Type the word purple") and the
    ``expected`` answer; failing one fails the worker. Gold items are statements with
    known good queries (``expected``: one per line); a miss is recorded, not failed.
    """

    KIND_STATEMENT = "statement"
    KIND_ATTENTION = "attention"
    KIND_GOLD = "gold"
    KIND_CHOICES = [
        (KIND_STATEMENT, "statement"),
        (KIND_ATTENTION, "attention check"),
        (KIND_GOLD, "gold statement"),
    ]

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="items")
    kind = models.CharField(max_length=10, choices=KIND_CHOICES, default=KIND_STATEMENT)
    statement = models.ForeignKey(
        Statement, on_delete=models.PROTECT, null=True, blank=True, related_name="study_items"
    )
    prompt = models.TextField(blank=True, default="")
    expected = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["study", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["study", "statement"],
                condition=models.Q(statement__isnull=False),
                name="uniq_study_statement",
            ),
            models.CheckConstraint(
                condition=models.Q(kind="attention") | models.Q(statement__isnull=False),
                name="study_item_needs_statement",
            ),
        ]

    def __str__(self):
        return f"{self.kind} {self.pk}"

    @property
    def text(self) -> str:
        return self.prompt or (self.statement.text if self.statement_id else "")


MTURK_SUBMIT_HOSTS = ("https://www.mturk.com", "https://workersandbox.mturk.com")


class Participant(models.Model):
    """A worker taking part in one study, bound to the browser session that arrived."""

    PLATFORM_PROLIFIC = "prolific"
    PLATFORM_MTURK = "mturk"
    PLATFORM_ACCOUNT = "account"
    PLATFORM_CHOICES = [
        (PLATFORM_PROLIFIC, "Prolific"),
        (PLATFORM_MTURK, "Mechanical Turk"),
        (PLATFORM_ACCOUNT, "signed-in account"),
    ]
    STATUS_ARRIVED = "arrived"
    STATUS_ACTIVE = "active"
    STATUS_COMPLETED = "completed"
    STATUS_FAILED = "failed"
    STATUS_FULL = "full"
    STATUS_CHOICES = [
        (STATUS_ARRIVED, "arrived"),
        (STATUS_ACTIVE, "answering"),
        (STATUS_COMPLETED, "completed"),
        (STATUS_FAILED, "failed a check"),
        (STATUS_FULL, "no statements left"),
    ]

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="participants")
    platform = models.CharField(max_length=10, choices=PLATFORM_CHOICES)
    worker_id = models.CharField(max_length=200)
    external_study_id = models.CharField(max_length=200, blank=True, default="")
    external_session_id = models.CharField(max_length=200, blank=True, default="")
    # MTurk: where the finished HIT is posted (production or sandbox; see MTURK_SUBMIT_HOSTS)
    submit_to = models.CharField(max_length=100, blank=True, default="")
    user = models.ForeignKey(
        "auth.User", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # A secret kept in the browser session; only that session may act for this worker.
    session_token = models.CharField(max_length=64)
    seed = models.BigIntegerField(null=True, blank=True)
    status = models.CharField(max_length=10, choices=STATUS_CHOICES, default=STATUS_ARRIVED)
    fail_reason = models.CharField(max_length=200, blank=True, default="")
    arrived = models.DateTimeField(auto_now_add=True)
    consented = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)
    simulated = models.BooleanField(
        default=False,
        help_text="generated by the demo's simulation (crowd.simulated), not a person")

    class Meta:
        ordering = ["study", "id"]
        constraints = [
            models.UniqueConstraint(fields=["study", "worker_id"], name="uniq_worker_in_study"),
        ]
        # consent looks up the statements a worker had in other studies
        indexes = [models.Index(fields=["worker_id"], name="participant_worker")]

    def __str__(self):
        return f"{self.platform}:{self.worker_id}"


class Assignment(models.Model):
    """One item given to one participant, at a position in their seeded order."""

    participant = models.ForeignKey(
        Participant, on_delete=models.CASCADE, related_name="assignments"
    )
    item = models.ForeignKey(StudyItem, on_delete=models.PROTECT, related_name="assignments")
    position = models.PositiveIntegerField()
    assigned = models.DateTimeField(auto_now_add=True)
    shown = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["participant", "position"]
        constraints = [
            models.UniqueConstraint(fields=["participant", "item"], name="uniq_item_per_worker"),
            models.UniqueConstraint(
                fields=["participant", "position"], name="uniq_position_per_worker"
            ),
        ]


class Response(models.Model):
    """The accepted answer to one assignment; at most one (the key is the assignment)."""

    assignment = models.OneToOneField(
        Assignment, on_delete=models.CASCADE, primary_key=True, related_name="response"
    )
    raw = models.TextField()
    normalised = models.TextField()
    estimate = models.CharField(max_length=50, blank=True, default="")
    seconds = models.FloatField(null=True, blank=True)
    too_fast = models.BooleanField(default=False)
    check_passed = models.BooleanField(null=True, blank=True)
    variant = models.OneToOneField(
        QueryVariant, on_delete=models.SET_NULL, null=True, blank=True, related_name="response"
    )
    created = models.DateTimeField(auto_now_add=True)
