"""A TCP proxy on 127.0.0.1 that a test can cut and restore: a network partition of one link, without root.

:meth:`TcpProxy.cut` closes every connection it carries and its listening socket (a new connection is refused, as
a host cut off by a firewall's reject rule); :meth:`TcpProxy.restore` listens again on the same port. The fenced
broker test puts one broker's link to the KRaft controller through it (:class:`kquotactl.testing.kafka.
KRaftSplitCluster`).
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from dataclasses import dataclass, field

from kquotactl.testing.servers import free_port


@dataclass
class TcpProxy:
    """Forwards ``127.0.0.1:port`` to ``127.0.0.1:target``, byte for byte, one pair of threads a connection."""

    target: int
    port: int = 0
    _listener: socket.socket | None = None
    _conns: set[socket.socket] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    accepted: int = 0  # connections carried since start (a test can tell its link really goes through here)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def cut_off(self) -> bool:
        return self._listener is None

    def start(self) -> TcpProxy:
        if not self.port:
            self.port = free_port()
        self.restore()
        return self

    def restore(self) -> None:
        """Listen again (same port): the link works for new connections."""
        if self._listener is not None:
            return
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", self.port))
        s.listen(64)
        self._listener = s
        threading.Thread(target=self._accept, args=(s,), name=f"proxy-{self.port}", daemon=True).start()

    def cut(self) -> None:
        """Refuse new connections and reset every open one (both ends see the connection die at once)."""
        with self._lock:
            listener, self._listener = self._listener, None
            conns, self._conns = self._conns, set()
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        for c in conns:
            _reset(c)

    def close(self) -> None:
        self.cut()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # cut: the listener is closed
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target), timeout=5)
                upstream.settimeout(None)
            except OSError:
                _reset(client)
                continue
            with self._lock:
                if self._listener is not listener:  # cut while connecting
                    _reset(client)
                    _reset(upstream)
                    return
                self._conns |= {client, upstream}
                self.accepted += 1
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        with self._lock:
            self._conns -= {src, dst}
        _reset(src)
        _reset(dst)


def _reset(s: socket.socket) -> None:
    """Close at once: shut down first (a close alone neither wakes the pump thread blocked reading it nor ends
    the connection), then close without lingering (SO_LINGER 0)."""
    with contextlib.suppress(OSError):
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        s.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        s.close()
