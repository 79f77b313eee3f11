"""The whole suite is hermetic: no test may reach past this machine.

A verdict that depends on what a package index, a model hub or any other remote host says today
is not a verdict on this code. Every test runs with Python's sockets limited to the loopback
range and to local (Unix) sockets: a connection to any other address, or a name lookup of any
host name other than `localhost`, fails at once with `NetworkDisabledError`, naming what was
tried. Drift against remote indexes is a release step (infra/README.md), not a test.
Subprocesses (git, uv) are not covered by this guard; the tests that start them work on
repositories and wheels made locally.

Also here: `hide_modules`, the one way a test pretends an optional dependency is not installed.
"""

from __future__ import annotations

import ipaddress
import socket
import sys
from collections.abc import Callable
from typing import Any

import pytest

_LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback", ""}


class NetworkDisabledError(OSError):
    """A test tried to reach past this machine."""


def _is_local_host(host: object) -> bool:
    if host is None:
        return True
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    text = str(host).strip("[]").split("%", 1)[0].lower()
    if text in _LOCAL_NAMES:
        return True
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return False
    if address.version == 6 and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback or address.is_unspecified


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def guarded_address(sock: socket.socket, address: Any) -> None:
        if sock.family in (socket.AF_INET, socket.AF_INET6) and not _is_local_host(address[0]):
            raise NetworkDisabledError(f"the test suite is hermetic: connect to {address!r}")

    def connect(sock: socket.socket, address: Any) -> None:
        guarded_address(sock, address)
        real_connect(sock, address)

    def connect_ex(sock: socket.socket, address: Any) -> int:
        guarded_address(sock, address)
        return real_connect_ex(sock, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if not _is_local_host(host):
            raise NetworkDisabledError(f"the test suite is hermetic: name lookup of {host!r}")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


@pytest.fixture
def hide_modules(monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """`hide_modules("matplotlib")`: as if the package were not installed, for this test only.

    The package and every module of it already imported are set to None in `sys.modules`, so
    any import of them (`import matplotlib`, `from matplotlib.figure import Figure`) raises
    ImportError, whatever an earlier test imported. Hiding the top name alone is not enough once
    matplotlib is installed: its loaded submodules would still import.
    """

    def hide(*names: str) -> None:
        for name in names:
            for loaded in [name, *(m for m in list(sys.modules) if m.startswith(name + "."))]:
                monkeypatch.setitem(sys.modules, loaded, None)

    return hide
