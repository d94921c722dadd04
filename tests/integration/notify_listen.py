#!/usr/bin/env python3
"""notify_listen.py SOCKET OUT: the service manager's side of sd_notify:
binds a datagram socket at SOCKET and appends every message to OUT (one
a line, newlines inside a message as '|'), until killed."""
import os
import socket
import sys

path, out = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
if os.path.exists(path):
    os.unlink(path)
s.bind(path)
open(out, "a").close()
while True:
    msg = s.recv(4096).decode("utf-8", "replace").replace("\n", "|")
    with open(out, "a") as f:
        f.write(msg + "\n")
