import socket

import pytest

from tests.conftest import NetworkAccessError


def test_remote_connections_are_refused():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(0.5)
    try:
        with pytest.raises(NetworkAccessError):
            s.connect(("192.0.2.1", 80))  # TEST-NET-1: never routed
    finally:
        s.close()
    with pytest.raises(NetworkAccessError):
        socket.getaddrinfo("example.org", 443)


def test_loopback_is_allowed():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    c = socket.create_connection(srv.getsockname(), timeout=2)
    c.close()
    srv.close()
