"""Judgment sets (labels with history), judging tasks, and the assignment queue.

A :class:`JudgmentSet` holds :class:`Label` rows: one per (topic, intent, docid, assessor,
revision). Nothing is ever overwritten: a revision adds a row and moves the ``current``
flag, so the history is kept and the latest revision counts. ``intent_id`` is ``""`` for a
label made against the topic as a whole (no intent).

A :class:`JudgingTask` judges the documents of a pool into its own judgment set. Its queue
is one :class:`JudgingItem` per pooled (topic, document) — a page, whatever the number of
intents graded on it — and K :class:`JudgingSlot` rows per item (K = redundancy). A slot is
free, leased to one assessor until ``lease_expires``, or done. Because an item has exactly
K slots and an assessor holds at most one slot of an item (a unique constraint), no item
can ever go to more than K assessors nor twice to the same one, whatever the concurrency.
"""
from django.db import models
from django.db.models import Q

from jobs.models import LeasedJob

NO_INTENT = ""
#: The assessor of the labels read from a qrels file (``import_qrels``): one judgment per
#: line, nobody named.
QRELS_ASSESSOR = "qrels"


class JudgmentSet(models.Model):
    """A named set of labels, filled by an import or by a judging task."""

    SOURCE_IMPORT = "import"
    SOURCE_TASK = "task"
    SOURCE_CHOICES = [(SOURCE_IMPORT, "imported"), (SOURCE_TASK, "judging task")]

    name = models.CharField(max_length=100, unique=True)
    source = models.CharField(max_length=10, choices=SOURCE_CHOICES, default=SOURCE_IMPORT)
    topic_set = models.ForeignKey(
        "topics.TopicSet", null=True, blank=True, on_delete=models.SET_NULL,
        related_name="judgment_sets",
    )
    format = models.CharField(max_length=20, blank=True, default="")
    source_file = models.TextField(blank=True, default="")
    checksum = models.CharField(max_length=64, blank=True, default="")
    labels_count = models.PositiveIntegerField(default=0)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name


class Label(models.Model):
    """One grade given by one assessor to one document for one intent (or the topic).

    ``grade`` is null when the assessor could not judge (``cannot_judge`` says why).
    ``line`` is the line of the imported file (0 for a label made in a task); labels are
    stored in the order they were made (file order for imports), and exports list items in
    the order of their earliest label that counts. ``submit_key`` is the idempotency key of
    the submit that wrote the label: a retried submit with the same key writes nothing.
    ``simulated`` flags a label the demo's simulated assessor gave (as
    ``crowd.Participant.simulated`` flags simulated workers).
    """

    judgment_set = models.ForeignKey(JudgmentSet, on_delete=models.CASCADE,
                                     related_name="labels")
    topic_id = models.CharField(max_length=100)
    intent_id = models.CharField(max_length=100, blank=True, default=NO_INTENT)
    docid = models.CharField(max_length=255)
    assessor = models.CharField(max_length=200)
    grade = models.SmallIntegerField(null=True, blank=True)
    cannot_judge = models.CharField(max_length=200, blank=True, default="")
    rationale = models.TextField(blank=True, default="")
    seconds = models.FloatField(null=True, blank=True)
    created = models.DateTimeField()
    revision = models.PositiveIntegerField(default=1)
    current = models.BooleanField(default=True)
    withdrawn = models.BooleanField(default=False)  # undone by the assessor
    line = models.PositiveIntegerField(default=0)
    submit_key = models.CharField(max_length=100, null=True, blank=True)
    item = models.ForeignKey(
        "JudgingItem", null=True, blank=True, on_delete=models.SET_NULL, related_name="labels"
    )
    simulated = models.BooleanField(
        default=False, db_default=False,  # also for rows written by COPY or raw SQL
        help_text="given by the demo's simulated assessor, not a person")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["judgment_set", "topic_id", "intent_id", "docid", "assessor", "revision"],
                name="uniq_label_revision",
            ),
            models.UniqueConstraint(
                fields=["judgment_set", "topic_id", "intent_id", "docid", "assessor"],
                condition=Q(current=True),
                name="uniq_label_current",
            ),
            models.UniqueConstraint(
                fields=["judgment_set", "submit_key", "intent_id"],
                condition=Q(submit_key__isnull=False),
                name="uniq_label_submit_key",
            ),
        ]
        indexes = [
            models.Index(fields=["judgment_set", "topic_id"], name="label_set_topic"),
            models.Index(fields=["item", "assessor"], name="label_item_assessor"),
            # an assessor's latest labels (the judging page's back link)
            models.Index(fields=["judgment_set", "assessor", "id"], name="label_set_assessor"),
        ]


class JudgingTask(models.Model):
    """Judging the documents of a pool, into the judgment set of the same name."""

    MODE_INTENT = "intent"
    MODE_TOPIC = "topic"
    MODE_USER = "user"
    MODE_SAMPLE = "sample"
    MODE_CHOICES = [
        (MODE_INTENT, "each document against each intent of its topic"),
        (MODE_TOPIC, "each document against the topic statement"),
        (MODE_USER, "each worker against the statement they wrote a query for"),
        (MODE_SAMPLE, "a stratified random sample of each topic's pool against the topic "
                      "statement, to estimate the measures"),
    ]
    ORDER_POOL = "pool"
    ORDER_MTF = "mtf"
    ORDER_BANDIT = "bandit"
    ORDER_BANDIT_DISCOUNTED = "bandit-discounted"
    ORDER_HEDGE = "hedge"
    ORDER_AL_RANK = "al-rank"
    ORDER_CAL_TEXT = "cal-text"
    ORDER_CAL = "cal"
    ORDER_CHOICES = [
        (ORDER_POOL, "the pool's order"),
        (ORDER_MTF, "move-to-front over the contributing rankings"),
        (ORDER_BANDIT, "Bayesian bandit (maximum mean) over the contributing rankings"),
        (ORDER_BANDIT_DISCOUNTED, "Bayesian bandit with discounted evidence (this "
                                  "project's variant) over the contributing rankings"),
        (ORDER_HEDGE, "Hedge (Aslam, Pavlu & Savell 2003) over the contributing rankings"),
        (ORDER_AL_RANK, "active learning over rank features (logistic regression, refitted "
                        "in the background)"),
        (ORDER_CAL_TEXT, "continuous active learning over document text (AutoTAR, refitted "
                         "in the background)"),
        (ORDER_CAL, "continuous active learning over text and rank features (refitted in "
                    "the background)"),
    ]

    name = models.CharField(max_length=100, unique=True)
    pool = models.ForeignKey("pooling.Pool", on_delete=models.PROTECT, related_name="judging_tasks")
    judgment_set = models.OneToOneField(JudgmentSet, on_delete=models.PROTECT, related_name="task")
    mode = models.CharField(max_length=10, choices=MODE_CHOICES, default=MODE_INTENT)
    scale = models.CharField(max_length=20, default="trec-web")
    # [{"value": int, "label": str, "key": str}, ...] in display order
    scale_grades = models.JSONField(default=list)
    redundancy = models.PositiveSmallIntegerField(default=1)
    order = models.CharField(max_length=20, choices=ORDER_CHOICES, default=ORDER_POOL)
    batch = models.PositiveIntegerField(default=10)
    lease_minutes = models.PositiveIntegerField(default=30)
    # user mode: every user of a topic judges the topic's first N documents in pool order
    per_topic = models.PositiveIntegerField(null=True, blank=True)
    assessors = models.JSONField(default=list)  # empty: anyone the pages admit
    items_count = models.PositiveIntegerField(default=0)
    created = models.DateTimeField(auto_now_add=True)
    # the collection the judging page reads documents from (empty: the pool's)
    collection = models.ForeignKey("retrieval.Collection", null=True, blank=True,
                                   on_delete=models.PROTECT, related_name="+")
    # Published to crowd workers: the crowd study holds the public link, consent text,
    # Prolific/MTurk ids and the completion code, given after ``crowd_judgments`` judgments
    # with gold accuracy at least ``gold_min_accuracy``; gold items from ``gold_set`` make
    # up ``gold_rate`` of the pages a worker sees.
    study = models.OneToOneField("crowd.Study", null=True, blank=True,
                                 on_delete=models.SET_NULL, related_name="judging_task")
    gold_set = models.ForeignKey(JudgmentSet, null=True, blank=True, on_delete=models.PROTECT,
                                 related_name="gold_for_tasks")
    gold_rate = models.FloatField(default=0.0)
    gold_min_accuracy = models.FloatField(default=0.7)
    crowd_judgments = models.PositiveIntegerField(default=0)
    # when to stop judging a topic (judging.stopping.parse_rule): "recall:0.9:0.95" or
    # "knee"; empty: judge the whole pool
    stop_rule = models.CharField(max_length=40, blank=True, default="")

    class Meta:
        ordering = ["-created", "-id"]

    def __str__(self):
        return self.name


class TaskTopic(models.Model):
    """One topic of a task: its intents and, for adaptive orders, its contributing
    rankings as packed int32 item positions (``rankings``) cut by ``offsets``; whether the
    task's stopping rule stopped it.
    ``slots_done`` counts the topic's done slots; the services that move a slot into or
    out of ``done`` change it in the same transaction, so progress never scans slots."""

    task = models.ForeignKey(JudgingTask, on_delete=models.CASCADE, related_name="topics")
    topic_id = models.CharField(max_length=100)
    size = models.PositiveIntegerField(default=0)
    intents = models.JSONField(default=list)
    users = models.JSONField(default=list)  # user mode: the workers who may judge it
    rankings = models.BinaryField(default=b"")
    offsets = models.BinaryField(default=b"")
    slots_done = models.PositiveIntegerField(default=0)
    # the task's stopping rule fired: the queue hands out no more of the topic's items
    # while the task has a rule; ``resumed``: the organiser went on, the rule no longer
    # applies to the topic
    stopped_at = models.DateTimeField(null=True, blank=True)
    stop_note = models.CharField(max_length=200, blank=True, default="")
    resumed = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["task", "topic_id"], name="uniq_task_topic"),
        ]
        ordering = ["task", "topic_id"]


class TopicRefit(LeasedJob):
    """The model of a learned order (``al-rank``, ``cal-text``, ``cal``) for one topic of a
    task, refitted in the background: a leased job (:mod:`jobs.leases`) whose result is
    ``ranking``, the topic's items as packed int32 0-based pool positions, best first
    (empty until the first fit: the queue then goes in pool order). The queue only reads
    it. ``queued_done`` is the topic's count of done slots when the fit was last queued
    (the queue queues the next one once enough judgments came in, see
    :mod:`judging.services.refits`); ``fitted_done`` and ``fitted_labels`` the done slots
    and the judged items the last fit read; ``sources`` says "user" or "system" for each
    contributing ranking of the topic (a rank feature)."""

    task_topic = models.OneToOneField(TaskTopic, on_delete=models.CASCADE,
                                      related_name="refit")
    sources = models.JSONField(default=list)
    queued_done = models.PositiveIntegerField(default=0)
    fitted_done = models.PositiveIntegerField(default=0)
    fitted_labels = models.PositiveIntegerField(default=0)
    ranking = models.BinaryField(default=b"")
    fitted = models.DateTimeField(null=True, blank=True)
    fits = models.PositiveIntegerField(default=0)

    class Meta:
        indexes = [models.Index(fields=["status", "lease_expires"], name="refit_status")]


class JudgingItem(models.Model):
    """A pooled document of a task's topic; ``position`` is its 1-based pool rank."""

    task = models.ForeignKey(JudgingTask, on_delete=models.CASCADE, related_name="items")
    topic_id = models.CharField(max_length=100)
    docid = models.CharField(max_length=255)
    position = models.PositiveIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["task", "topic_id", "docid"], name="uniq_item_doc"),
            models.UniqueConstraint(fields=["task", "topic_id", "position"], name="uniq_item_pos"),
        ]


class JudgingSlot(models.Model):
    """One of the K judgments an item needs. Free, leased to an assessor, or done."""

    FREE = "free"
    LEASED = "leased"
    DONE = "done"
    STATE_CHOICES = [(FREE, "free"), (LEASED, "leased"), (DONE, "done")]

    task = models.ForeignKey(JudgingTask, on_delete=models.CASCADE, related_name="slots")
    item = models.ForeignKey(JudgingItem, on_delete=models.CASCADE, related_name="slots")
    topic_id = models.CharField(max_length=100)
    position = models.PositiveIntegerField()
    slot_no = models.PositiveSmallIntegerField()
    state = models.CharField(max_length=6, choices=STATE_CHOICES, default=FREE)
    assessor = models.CharField(max_length=200, null=True, blank=True)
    leased_at = models.DateTimeField(null=True, blank=True)
    lease_expires = models.DateTimeField(null=True, blank=True)
    done_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["item", "slot_no"], name="uniq_slot_no"),
            models.UniqueConstraint(
                fields=["item", "assessor"], condition=Q(assessor__isnull=False),
                name="uniq_slot_item_assessor",
            ),
            models.CheckConstraint(
                condition=Q(state="free", assessor__isnull=True)
                | Q(state__in=["leased", "done"], assessor__isnull=False),
                name="slot_state_assessor",
            ),
        ]
        indexes = [
            # the queue: free slots of a topic in priority order (partial: only free rows)
            models.Index(fields=["task", "topic_id", "position", "slot_no"],
                         condition=Q(state="free"), name="slot_free_queue"),
            models.Index(fields=["task", "lease_expires"], condition=Q(state="leased"),
                         name="slot_leased_expiry"),
            models.Index(fields=["task", "assessor", "state"], name="slot_task_assessor"),
        ]


class SampleDesign(models.Model):
    """How a sampled judgment set (a task in ``sample`` mode) drew its sample
    (:mod:`judging.sampling`): the strata, the budget per topic and the seed."""

    judgment_set = models.OneToOneField(JudgmentSet, on_delete=models.CASCADE,
                                        related_name="sample_design")
    strata = models.CharField(max_length=200)
    budget = models.CharField(max_length=20)
    seed = models.PositiveIntegerField(default=0)
    created = models.DateTimeField(auto_now_add=True)


class SampleUnit(models.Model):
    """One pooled document of a sampled judgment set's topic: its stratum, the size of the
    stratum and how many of it were drawn, its inclusion probability (drawn / size) and
    whether it was drawn (a drawn document is an item of the task). The whole pool is
    kept, so the estimators know each stratum's size and the ``sample-eval`` export lists
    the documents not drawn."""

    judgment_set = models.ForeignKey(JudgmentSet, on_delete=models.CASCADE,
                                     related_name="sample_units")
    topic_id = models.CharField(max_length=100)
    docid = models.CharField(max_length=255)
    position = models.PositiveIntegerField()  # 1-based, in the pool's order
    stratum = models.PositiveSmallIntegerField()
    stratum_size = models.PositiveIntegerField()
    drawn_in_stratum = models.PositiveIntegerField()
    probability = models.FloatField()
    drawn = models.BooleanField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["judgment_set", "topic_id", "docid"],
                                    name="uniq_sample_unit"),
        ]
        indexes = [models.Index(fields=["judgment_set", "topic_id", "position"],
                                name="sample_unit_order")]


class TaskAssessor(models.Model):
    """An assessor of a task; the row is locked to serialise one assessor's requests.
    ``topic_id`` is the topic they work on now (empty: none yet)."""

    task = models.ForeignKey(JudgingTask, on_delete=models.CASCADE, related_name="task_assessors")
    assessor = models.CharField(max_length=200)
    topic_id = models.CharField(max_length=100, blank=True, default="")
    finished_topics = models.JSONField(default=list)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["task", "assessor"], name="uniq_task_assessor"),
        ]


class GoldAnswer(models.Model):
    """A crowd worker's grades of a gold item (a document whose grades a gold judgment set
    knows); kept apart from the task's labels. ``passed``: every compared intent agrees
    on relevance (grade above 0 or not) with the gold set."""

    task = models.ForeignKey(JudgingTask, on_delete=models.CASCADE, related_name="gold_answers")
    assessor = models.CharField(max_length=200)
    topic_id = models.CharField(max_length=100)
    docid = models.CharField(max_length=255)
    grades = models.JSONField(default=dict)
    expected = models.JSONField(default=dict)
    cannot_judge = models.CharField(max_length=200, blank=True, default="")
    passed = models.BooleanField(default=False)
    seconds = models.FloatField(null=True, blank=True)
    submit_key = models.CharField(max_length=100)
    created = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["task", "submit_key"], name="uniq_gold_submit_key"),
            models.UniqueConstraint(fields=["task", "assessor", "topic_id", "docid"],
                                    name="uniq_gold_answer"),
        ]


class AssessorInvite(models.Model):
    """A link an organiser hands someone so they become an assessor of one task: whoever
    opens it creates an account (or signs in) and is added to the task's assessors. Only
    the SHA-256 of the link's token is kept, so the table does not give links away; an
    invite is used once, expires at ``expires`` and may be revoked before."""

    task = models.ForeignKey(JudgingTask, on_delete=models.CASCADE, related_name="invites")
    token_hash = models.CharField(max_length=64, unique=True)
    created_by = models.CharField(max_length=200)
    created = models.DateTimeField(auto_now_add=True)
    expires = models.DateTimeField()
    revoked = models.DateTimeField(null=True, blank=True)
    used = models.DateTimeField(null=True, blank=True)
    used_by = models.CharField(max_length=200, blank=True, default="")

    class Meta:
        ordering = ["-created", "-id"]


# Tables named in the hand-written SQL of the judging hot paths (common.sql runs it).
SLOT_TABLE, ITEM_TABLE = JudgingSlot._meta.db_table, JudgingItem._meta.db_table
TOPIC_TABLE, ASSESSOR_TABLE = TaskTopic._meta.db_table, TaskAssessor._meta.db_table
LABEL_TABLE = Label._meta.db_table
