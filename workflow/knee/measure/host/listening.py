"""Where a process group listens: its TCP sockets in the LISTEN state, from /proc (Linux), so
that a session can check that the engine it booted listens only where the config says."""

from __future__ import annotations

import ipaddress
import os
import sys
from pathlib import Path

from knee.core.errors import KneeError
from knee.core.records import Section

LISTEN = "0A"  # the TCP state code of a listening socket in /proc/net/tcp


def _inodes(pgid: int) -> set[str]:
    """The socket inodes held open by the processes of a process group."""
    out: set[str] = set()
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if os.getpgid(int(proc.name)) != pgid:
                continue
            for fd in (proc / "fd").iterdir():
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    out.add(target[8:-1])
        except (OSError, ValueError):
            continue  # gone, or not ours to read
    return out


def _address(hex_addr: str) -> str:
    raw = bytes.fromhex(hex_addr)
    if len(raw) == 4:
        return str(ipaddress.IPv4Address(raw[::-1]))
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
    address = ipaddress.IPv6Address(words)
    return str(address.ipv4_mapped or address)


def listening(pgid: int) -> list[Section]:
    """[{"address", "port"}] of every TCP socket the process group listens on."""
    inodes, found = _inodes(pgid), []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text(encoding="utf-8").splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and fields[3] == LISTEN and fields[9] in inodes:
                addr, port = fields[1].split(":")
                found.append({"address": _address(addr), "port": int(port, 16)})
    return sorted(found, key=lambda x: (x["address"], x["port"]))


def outside(listeners: list[Section], host: str) -> list[Section]:
    """The listeners not on `host` (every one is allowed where host is an any-address)."""
    try:
        wanted = ipaddress.ip_address(host)
    except ValueError:
        return []  # a name: resolved by the engine, not checked here
    if wanted.is_unspecified:
        return []
    allowed = {str(wanted)} | ({"127.0.0.1", "::1"} if wanted.is_loopback else set())
    return [x for x in listeners if x["address"] not in allowed]


def check(pgid: int, host: str, api_port: int, internal: str | None, sid: str) -> list[Section]:
    """The TCP sockets the engine's processes (process group `pgid`) listen on. Its API port
    beyond runtime.host stops the session before it measures (a flag or variable that reached
    --host by another way), and so does any other port unless runtime.internal_listeners is
    allow (then it is warned about; the boot receipt records every listener)."""
    found = listening(pgid)
    beyond = outside(found, host)
    shown = ", ".join(f"{x['address']}:{x['port']}" for x in beyond)
    api = any(x["port"] == api_port for x in beyond)
    if api or (beyond and internal != "allow"):
        hint = "" if api else (" (a port of the engine's own, not its API port; "
                               "runtime.internal_listeners: allow measures and records it)")
        raise KneeError(f"session {sid}: the engine listens on {shown}, beyond runtime.host "
                        f"{host!r}{hint}: stopped before measuring")
    if beyond:
        print(f"warning: session {sid}: the engine's own ports listen on {shown}, beyond "
              f"runtime.host (runtime.internal_listeners: allow); recorded in the boot receipt",
              file=sys.stderr)
    return found
