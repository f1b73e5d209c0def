"""The socket `serve` listens on, bound before it says where it listens: a port that is taken, out
of range or not allowed is one line and exit 2, never the server's traceback after a "serving on"."""
from __future__ import annotations

import errno
import socket

from .errors import GuardError


def bind(host: str, port: int) -> socket.socket:
    """A TCP socket bound to (host, port), for the server to listen on; GuardError when it cannot be."""
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if not isinstance(port, int) or not 0 < port < 65536:
        raise GuardError(f"--port {port} is not a port: give one from 1 to 65535")
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
    except (OSError, OverflowError) as exc:
        sock.close()
        code = getattr(exc, "errno", None)
        if code == errno.EADDRINUSE:
            why = f"{where} is already in use (another compaction-guard serve?): stop what listens there, or " \
                  "give another --port"
        elif code == errno.EACCES:
            why = f"{where}: permission denied (ports below 1024 need privileges): give a --port above 1023"
        elif code in (errno.EADDRNOTAVAIL, socket.EAI_NONAME) or isinstance(exc, socket.gaierror):
            why = f"--host {host} is not an address of this machine: give one it has (127.0.0.1 by default)"
        else:
            why = f"cannot listen on {where} ({getattr(exc, 'strerror', None) or exc}): check --host and --port"
        raise GuardError(why) from None
    sock.set_inheritable(True)
    return sock
