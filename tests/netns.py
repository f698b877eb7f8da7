"""Several hosts on one machine, for tests that need real network boundaries: each host is a
Linux network namespace with one interface (``eth0``) on a private /24, joined to the
others by a veth pair into one bridge. The bridge lives in a namespace of its own, so the
machine's own interfaces and routes are never touched, and a host reaches only the hosts of
its network (and its own loopback). Every process started on a host also gets a UTS
namespace with the host's name, so ``socket.gethostname()`` (lease holders, Celery node
names) tells the hosts apart. The file system and process ids stay shared: hosts see the
same directories, as machines with a shared volume do.

Needs root, iproute2 (``ip``) and util-linux (``unshare``, ``setpriv``); :func:`unavailable`
says why not where any of that is missing or ``ip netns add`` is refused::

    with Network() as net:
        db, web = net.host("db"), net.host("web")        # 10.77.0.2, 10.77.0.3
        postgres = db.spawn([...], log=tmp / "db.log", user="postgres")
        web.run(["pg_isready", "-h", db.address])        # from web to db, over the bridge
        web.cut()                                        # its cable pulled (port down)
        web.reconnect()

``Network(subnet="10.77.0")``
    At exit, whatever happened: every process it spawned is stopped (SIGTERM to its process
    group, SIGKILL after 5 s), any process still inside one of its namespaces is killed,
    and the namespaces (with their interfaces and the bridge) are deleted. Namespace names
    carry this process's id (``qvnet<pid>-<host>``); namespaces left by a test process that
    no longer exists (killed before it could clean up) are deleted when a network starts.

``Host``: ``name``, ``netns``, ``address``;
    ``run(argv, env=None, timeout=120, check=True, user=None, cwd=None) -> CompletedProcess``
    (text output); ``spawn(argv, log, env=None, user=None, cwd=None) -> Popen`` (a session
    of its own, output appended to ``log``);
    ``cut()`` / ``reconnect()``: the host's port on the bridge down / up (its cable pulled
    and plugged back); ``sysctl(name, value)``.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

PREFIX = "qvnet"
IFACE = "eth0"
_NAME = re.compile(r"^[a-z][a-z0-9]{0,7}$")


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    out = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and out.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {out.stderr.strip() or out.returncode}")
    return out


def unavailable() -> str:
    """Why hosts cannot be made here ("" when they can)."""
    if not sys.platform.startswith("linux"):
        return f"network namespaces need Linux, not {sys.platform}"
    if os.geteuid() != 0:
        return "network namespaces need root (ip netns add)"
    for tool in ("ip", "unshare", "setpriv"):
        if shutil.which(tool) is None:
            return f"{tool!r} is not installed (iproute2 / util-linux)"
    probe = f"{PREFIX}{os.getpid()}-probe{uuid.uuid4().hex[:6]}"
    out = _ip("netns", "add", probe, check=False)
    if out.returncode != 0:
        return f"ip netns add was refused: {out.stderr.strip() or out.returncode}"
    try:
        made = subprocess.run(["ip", "netns", "exec", probe, "unshare", "--uts", "true"],
                              capture_output=True, text=True, timeout=30)
        if made.returncode != 0:
            return f"unshare --uts was refused: {made.stderr.strip() or made.returncode}"
    finally:
        _ip("netns", "del", probe, check=False)
    return ""


def _stale_remove() -> None:
    """Delete namespaces of this module whose test process is gone."""
    for line in _ip("netns", "list").stdout.splitlines():
        m = re.match(rf"^({PREFIX}(\d+)-\S+)", line)
        if not m or int(m.group(2)) == os.getpid():
            continue
        try:
            os.kill(int(m.group(2)), 0)
        except ProcessLookupError:
            _namespace_empty(m.group(1))
            _ip("netns", "del", m.group(1), check=False)
        except PermissionError:
            pass


def _namespace_empty(netns: str) -> None:
    """SIGKILL every process still inside ``netns``."""
    pids = _ip("netns", "pids", netns, check=False).stdout.split()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid), signal.SIGKILL)


class Host:
    """One namespace of a :class:`Network`; see the module docstring."""

    def __init__(self, network: "Network", name: str, netns: str, address: str):
        self.network, self.name, self.netns, self.address = network, name, netns, address

    def argv(self, argv: list[str], user: str | None = None) -> list[str]:
        """``argv`` as run on this host (its network namespace, its host name), as ``user``
        when given (root is needed to enter the namespace, so privileges drop last)."""
        drop = ["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups"] if user else []
        return ["ip", "netns", "exec", self.netns, "unshare", "--uts", "sh", "-c",
                'hostname "$0" && exec "$@"', self.name, *drop, *argv]

    def run(self, argv: list[str], env: dict | None = None, timeout: float = 120,
            check: bool = True, user: str | None = None,
            cwd: Path | None = None) -> subprocess.CompletedProcess:
        out = subprocess.run(self.argv(argv, user), env=env, capture_output=True, text=True,
                             timeout=timeout, cwd=cwd)
        if check and out.returncode != 0:
            raise RuntimeError(f"{self.name}$ {' '.join(argv)} exited with {out.returncode}:\n"
                               f"{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
        return out

    def spawn(self, argv: list[str], log: Path, env: dict | None = None,
              user: str | None = None, cwd: Path | None = None) -> subprocess.Popen:
        """Start ``argv`` on this host in a session of its own, output appended to ``log``;
        the network stops it at exit."""
        with open(log, "a") as out:
            proc = subprocess.Popen(self.argv(argv, user), env=env, stdout=out,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    cwd=cwd, start_new_session=True)
        self.network.processes.append(proc)
        return proc

    def cut(self) -> None:
        """Pull this host's cable: its port on the bridge goes down (``ip link set p-NAME
        down`` in the switch namespace). The host keeps its address and routes and sees
        only a lost carrier, so what it sends is silently lost, as in a partition: open
        connections hang (TCP retransmits) rather than fail. Its processes live on."""
        _ip("-n", self.network.switch, "link", "set", f"p-{self.name}", "down")

    def reconnect(self) -> None:
        _ip("-n", self.network.switch, "link", "set", f"p-{self.name}", "up")

    def sysctl(self, name: str, value: str) -> None:
        """Set a per-namespace kernel setting, e.g. ``net.ipv4.tcp_rto_max_ms``."""
        subprocess.run(["ip", "netns", "exec", self.netns, "sysctl", "-q", "-w",
                        f"{name}={value}"], check=True, capture_output=True, timeout=30)


class Network:
    """Hosts on one bridge; see the module docstring."""

    def __init__(self, subnet: str = "10.77.0"):
        self.subnet = subnet
        self.switch = f"{PREFIX}{os.getpid()}-switch"
        self.hosts: dict[str, Host] = {}
        self.processes: list[subprocess.Popen] = []
        self._namespaces: list[str] = []

    def __enter__(self) -> "Network":
        _stale_remove()
        try:
            self._add_namespace(self.switch)
            _ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
            _ip("-n", self.switch, "link", "set", "br0", "up")
        except BaseException:
            self.__exit__(*sys.exc_info())
            raise
        return self

    def _add_namespace(self, netns: str) -> None:
        _ip("netns", "add", netns)
        self._namespaces.append(netns)
        _ip("-n", netns, "link", "set", "lo", "up")

    def host(self, name: str) -> Host:
        """A new host ``name`` (a-z, digits, at most 8 characters) at the next address."""
        if not _NAME.match(name) or name in self.hosts or name == "switch":
            raise ValueError(f"host name {name!r}: a-z and digits, at most 8, not used yet")
        netns = f"{PREFIX}{os.getpid()}-{name}"
        address = f"{self.subnet}.{len(self.hosts) + 2}"
        self._add_namespace(netns)
        port = f"p-{name}"
        _ip("-n", self.switch, "link", "add", port, "type", "veth", "peer", "name", IFACE,
            "netns", netns)
        _ip("-n", self.switch, "link", "set", port, "master", "br0", "up")
        _ip("-n", netns, "addr", "add", f"{address}/24", "dev", IFACE)
        _ip("-n", netns, "link", "set", IFACE, "up")
        host = self.hosts[name] = Host(self, name, netns, address)
        return host

    def __exit__(self, *exc) -> None:
        for proc in self.processes:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 5
        for proc in self.processes:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        left = []
        for netns in reversed(self._namespaces):
            _namespace_empty(netns)
            if _ip("netns", "del", netns, check=False).returncode != 0:
                left.append(netns)
        self._namespaces = left
        if left and exc[0] is None:
            raise RuntimeError(f"could not delete network namespaces {left}")
