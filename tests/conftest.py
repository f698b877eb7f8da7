"""Shared fixtures. Real data lives beside the checkout in ../shared/data.

Every test runs under a guard that refuses any socket connection to a non-loopback
address: nothing in the product may reach the network at run or test time.
"""
import ipaddress
import os
import socket
import sys
from pathlib import Path

import pytest

from tests.workers import celery_on_redis  # noqa: F401  (a fixture: real Celery workers)

os.environ.setdefault("DEBUG", "1")

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("SHARED_DATA", ROOT.parent / "shared" / "data"))


class NetworkAccessError(RuntimeError):
    pass


def _is_local(address) -> bool:
    if isinstance(address, (str, bytes)):  # AF_UNIX path
        return True
    host = address[0]
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False  # a host name other than localhost would need DNS: refuse


def _network_guard(event, args):
    if event == "socket.connect":
        sock, address = args
        if sock.family in (socket.AF_INET, socket.AF_INET6) and not _is_local(address):
            raise NetworkAccessError(f"test tried to reach the network: {address!r}")
    elif event == "socket.getaddrinfo":
        host = args[0]
        if isinstance(host, bytes):
            host = host.decode()
        if host and not _is_local((host,)):
            raise NetworkAccessError(f"test tried to resolve a remote host: {host!r}")


sys.addaudithook(_network_guard)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared IR data not found at {SHARED_DATA} (set SHARED_DATA)")
    return SHARED_DATA


@pytest.fixture(autouse=True)
def _ready_made_rows(request):
    """Rows that migrations create (the ready-made retrieval models) are gone after a
    transactional test flushes the database; restore them for every database test."""
    marker = request.node.get_closest_marker("django_db")
    names = set(request.fixturenames)
    transactional = (marker is not None and marker.kwargs.get("transaction")) or bool(
        names & {"transactional_db", "live_server"})
    if marker is None and not names & {"db", "transactional_db", "live_server"}:
        return
    request.getfixturevalue("transactional_db" if transactional else "db")
    from retrieval.services import retrieval_models_ensure_defaults

    retrieval_models_ensure_defaults()
