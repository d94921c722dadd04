#!/usr/bin/env python3
"""Journal entries in journald's export format (systemd.io
JOURNAL_EXPORT_FORMATS), for systemd-journal-remote to write as a real
journal file: no journald runs in a container. Each entry is one of

  kernel HOST MESSAGE           a kernel message (_TRANSPORT=kernel)
  unit UNIT IDENT HOST MESSAGE  a service's (_SYSTEMD_UNIT, SYSLOG_IDENTIFIER)
  binary HOST                   a kernel message that is not text (a
                                newline and bytes that are not UTF-8)

read from stdin one per line (fields split on the first spaces), with
__REALTIME_TIMESTAMP from --start (µs) one millisecond apart, all of one
boot.
"""
import argparse
import struct
import sys

BOOT = "0123456789abcdef0123456789abcdef"
BOOT_AT = 1_700_000_000_000_000  # µs: when that boot began


def field(out, name, value):
    if isinstance(value, str) and "\n" not in value:
        out.write(f"{name}={value}\n".encode())
        return
    data = value if isinstance(value, bytes) else value.encode()
    out.write(name.encode() + b"\n" + struct.pack("<Q", len(data)) + data + b"\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--start", type=int, required=True, help="µs since the epoch")
    a = ap.parse_args()
    out = sys.stdout.buffer
    t = a.start
    for n, raw in enumerate(sys.stdin):
        parts = raw.rstrip("\n").split(" ", 4)
        field(out, "__REALTIME_TIMESTAMP", str(t))
        # one boot for every batch: its monotonic time follows the wall
        # clock (a batch starting it over would sort before what was read)
        field(out, "__MONOTONIC_TIMESTAMP", str(t - BOOT_AT))
        field(out, "_BOOT_ID", BOOT)
        if parts[0] == "kernel":
            host, msg = parts[1], " ".join(parts[2:])
            for k, v in (("_TRANSPORT", "kernel"), ("SYSLOG_IDENTIFIER", "kernel"),
                         ("_HOSTNAME", host), ("PRIORITY", "3"), ("MESSAGE", msg)):
                field(out, k, v)
        elif parts[0] == "unit":
            unit, ident, host, msg = parts[1], parts[2], parts[3], parts[4]
            for k, v in (("_TRANSPORT", "stdout"), ("_SYSTEMD_UNIT", unit),
                         ("SYSLOG_IDENTIFIER", ident), ("_HOSTNAME", host),
                         ("MESSAGE", msg)):
                field(out, k, v)
        elif parts[0] == "binary":
            for k, v in (("_TRANSPORT", "kernel"), ("_HOSTNAME", parts[1]),
                         ("MESSAGE", b"NVRM: GPU at PCI:0000:3b:00: \xff\xfe\nsecond line")):
                field(out, k, v)
        out.write(b"\n")
        t += 1000


if __name__ == "__main__":
    main()
