"""Blackhole routes in a sandbox's network namespace, added from outside before the command runs.

Run by `longrun.tools.sandbox_net` as `PYTHON -I -S sandbox_netsetup.py PID NET/LEN...`: joins the
user namespace (when it is not the worker's own) and the network namespace of PID, then adds one
`blackhole` route per network over rtnetlink. Without a route to them, the sandbox cannot send to
the host's own addresses or the stack's hosts through the user-mode network (whose connections
leave from the host, where those addresses answer). The command itself runs later, in a nested
user namespace without capabilities over this network namespace: it cannot remove the routes.

Standard library only, a process of its own: `setns` into a user namespace needs a single thread.
"""

from __future__ import annotations

import ctypes
import os
import socket
import struct
import sys

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
RTM_NEWROUTE = 24
NLM_F_REQUEST, NLM_F_ACK, NLM_F_EXCL, NLM_F_CREATE = 1, 4, 0x200, 0x400
RT_TABLE_MAIN, RTPROT_STATIC, RT_SCOPE_UNIVERSE, RTN_BLACKHOLE = 254, 4, 0, 6
RTA_DST = 1


def join(pid: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    user = f"/proc/{pid}/ns/user"
    if os.readlink(user) != os.readlink("/proc/self/ns/user"):
        _setns(libc, user, CLONE_NEWUSER)
    _setns(libc, f"/proc/{pid}/ns/net", CLONE_NEWNET)


def _setns(libc: ctypes.CDLL, path: str, kind: int) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        if libc.setns(fd, kind) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns {path}: {os.strerror(err)}")
    finally:
        os.close(fd)


def blackhole(sock: socket.socket, network: str, seq: int) -> None:
    address, _, length = network.partition("/")
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    dst = socket.inet_pton(family, address)
    rtmsg = struct.pack("BBBBBBBBI", family, int(length), 0, 0, RT_TABLE_MAIN, RTPROT_STATIC, RT_SCOPE_UNIVERSE,
                        RTN_BLACKHOLE, 0)
    body = rtmsg + struct.pack("HH", 4 + len(dst), RTA_DST) + dst
    flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL
    sock.send(struct.pack("IHHII", 16 + len(body), RTM_NEWROUTE, flags, seq, 0) + body)
    reply = sock.recv(65536)
    error = struct.unpack_from("i", reply, 16)[0]
    if error not in (0, -17):  # EEXIST: already blackholed
        raise OSError(-error, f"blackhole {network}: {os.strerror(-error)}")


def main() -> None:
    pid, networks = int(sys.argv[1]), sys.argv[2:]
    join(pid)
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0) as sock:
        for seq, network in enumerate(networks, 1):
            blackhole(sock, network, seq)


if __name__ == "__main__":
    try:
        main()
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"longrun sandbox: network setup failed: {exc}\n")
        sys.exit(1)
