#!/usr/bin/env python3
"""cascade.signals as JSON Lines, for the tests: reads what
`kcat -C -f '%S:%s'` prints (each message's length, a colon, its bytes),
decodes each message's msgpack and prints it as one JSON object per line.
A message that is not msgpack is printed as {"undecodable": HEX}.

Debian's python3 has no msgpack module; the subset cascade writes (maps,
arrays, strings, integers, floats, booleans, nil) is decoded here.
"""
import json
import struct
import sys


class Bad(Exception):
    pass


def decode(b, i):
    t = b[i]
    i += 1
    if t <= 0x7F:
        return t, i
    if t >= 0xE0:
        return t - 0x100, i
    if 0x80 <= t <= 0x8F:
        return mapping(b, i, t & 0x0F)
    if 0x90 <= t <= 0x9F:
        return array(b, i, t & 0x0F)
    if 0xA0 <= t <= 0xBF:
        n = t & 0x1F
        return b[i:i + n].decode("utf-8", "replace"), i + n
    if t == 0xC0:
        return None, i
    if t in (0xC2, 0xC3):
        return t == 0xC3, i
    fixed = {0xCA: ">f", 0xCB: ">d", 0xCC: ">B", 0xCD: ">H", 0xCE: ">I",
             0xCF: ">Q", 0xD0: ">b", 0xD1: ">h", 0xD2: ">i", 0xD3: ">q"}
    if t in fixed:
        n = struct.calcsize(fixed[t])
        return struct.unpack(fixed[t], b[i:i + n])[0], i + n
    sized = {0xD9: (">B", "s"), 0xDA: (">H", "s"), 0xDB: (">I", "s"),
             0xC4: (">B", "b"), 0xC5: (">H", "b"), 0xC6: (">I", "b"),
             0xDC: (">H", "a"), 0xDD: (">I", "a"),
             0xDE: (">H", "m"), 0xDF: (">I", "m")}
    if t not in sized:
        raise Bad(f"type byte {t:#x}")
    fmt, kind = sized[t]
    k = struct.calcsize(fmt)
    n = struct.unpack(fmt, b[i:i + k])[0]
    i += k
    if kind == "s":
        return b[i:i + n].decode("utf-8", "replace"), i + n
    if kind == "b":
        return b[i:i + n].hex(), i + n
    if kind == "a":
        return array(b, i, n)
    return mapping(b, i, n)


def mapping(b, i, n):
    out = {}
    for _ in range(n):
        k, i = decode(b, i)
        v, i = decode(b, i)
        out[str(k)] = v
    return out, i


def array(b, i, n):
    out = []
    for _ in range(n):
        v, i = decode(b, i)
        out.append(v)
    return out, i


def main():
    data = sys.stdin.buffer.read()
    i = 0
    out = sys.stdout
    while i < len(data):
        colon = data.index(b":", i)
        n = int(data[i:colon])
        msg = data[colon + 1:colon + 1 + n]
        i = colon + 1 + n
        try:
            obj, end = decode(msg, 0)
            if end != len(msg):
                raise Bad("trailing bytes")
        except (Bad, IndexError, struct.error):
            obj = {"undecodable": msg.hex()}
        out.write(json.dumps(obj, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
