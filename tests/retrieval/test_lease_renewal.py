"""A lease's renewal thread outlives a broken database connection: after the server drops
it (a restart, a failover, a network blip between a worker host and the database host),
the next beat connects again and the lease keeps being renewed."""
import time

import pytest
from django.db import connection

from jobs import leases
from pooling.models import Pool
from topics.models import TopicSet

pytestmark = pytest.mark.django_db(transaction=True)


def test_renewal_reconnects_after_the_server_drops_its_connection(settings):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (pg_terminate_backend drops the thread's connection)")
    settings.JOB_LEASE_SECONDS = 3  # a beat every second
    ts = TopicSet.objects.create(name="renewal")
    pool = Pool.objects.create(name="renewal", topic_set=ts, sources="systems", depth=10)
    me = leases.claim(Pool, pool.pk)

    def expires():
        return Pool.objects.filter(pk=pool.pk).values_list("lease_expires", flat=True)[0]

    def renewers() -> list[int]:
        """Server processes whose last statement renewed the pool's lease: the thread's."""
        with connection.cursor() as cursor:
            cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                           "AND backend_type = 'client backend' AND pid <> pg_backend_pid() "
                           "AND query LIKE %s", [f'UPDATE "{Pool._meta.db_table}"%'])
            return [pid for (pid,) in cursor.fetchall()]

    with leases.renewing(Pool, pool.pk, me):
        deadline = time.monotonic() + 10
        while not renewers() and time.monotonic() < deadline:  # the thread's first beat
            time.sleep(0.1)
        (thread_pid,) = renewers()
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [thread_pid])
        dropped = expires()
        time.sleep(3.5)  # three beats: the first finds the connection gone
        renewed = expires()
    assert renewed > dropped, "the lease was not renewed after its connection dropped"
