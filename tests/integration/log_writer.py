#!/usr/bin/env python3
"""Writers for the follower's race test: log files written line by line
while they are rotated, as daemons and logrotate do it, and job output
files that appear while the run goes on. Every line carries a marker
(RUN-FILE-N) that it alone has; each marker is appended to --manifest
once its line is written, so the test can tell what must be on Kafka.

  syslog.log  kernel lines in rsyslog's format; rotated by rename
              (logrotate's default: .1 -> .2, ..., the file -> .1, the
              writer reopens a moment later, as a daemon does on SIGHUP,
              so some lines land in the renamed file)
  copy.log    the same; rotated by copytruncate (copied to .1 after the
              older copies are shifted, then truncated in place while the
              writer keeps its descriptor)
  jobs/J/rankR.log  plain lines of a job's ranks, new files from time to
              time; the newest job's are written, an older one's rarely
"""
import argparse
import os
import random
import shutil
import sys
import time


def shift(path):
    """path.N -> path.N+1, highest first, so nothing is overwritten."""
    n = 1
    while os.path.exists(f"{path}.{n}"):
        n += 1
    for k in range(n - 1, 0, -1):
        os.rename(f"{path}.{k}", f"{path}.{k + 1}")


class Writer:
    def __init__(self, path, run, name, manifest, syslog):
        self.path, self.run, self.name = path, run, name
        self.manifest, self.syslog = manifest, syslog
        self.n = 0
        os.makedirs(os.path.dirname(path), exist_ok=True)
        self.f = open(path, "a", buffering=1)

    def line(self):
        self.n += 1
        marker = f"{self.run}-{self.name}-{self.n}"
        if self.syslog:
            now = time.time()
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now))
            text = (f"{stamp}.{int(now * 1e6) % 1000000:06d}Z gpu-001 kernel: "
                    f"[{now:.6f}] NVRM: Xid (PCI:0000:3b:00): 13, {marker} "
                    "Graphics Exception")
        else:
            text = f"[rank0]: step {self.n} loss 1.25 {marker}"
        self.f.write(text + "\n")
        self.manifest.write(marker + "\n")

    def rename_rotate(self):
        shift(self.path)
        os.rename(self.path, self.path + ".1")
        for _ in range(random.randint(0, 3)):  # before the daemon reopens
            self.line()
        self.f.close()
        self.f = open(self.path, "a", buffering=1)

    def copytruncate(self):
        self.f.flush()
        shift(self.path)
        shutil.copyfile(self.path, self.path + ".1")
        os.truncate(self.path, 0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--run", required=True)
    ap.add_argument("--manifest", required=True)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--rate", type=int, default=2000, help="lines/s in all")
    ap.add_argument("--rotate-every", type=int, default=1500)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    random.seed(a.seed)
    with open(a.manifest, "a", buffering=1) as man:
        ws = [Writer(f"{a.dir}/syslog.log", a.run, "s", man, True),
              Writer(f"{a.dir}/copy.log", a.run, "c", man, True)]
        jobs = 0
        t0 = time.time()
        total = 0
        while time.time() - t0 < a.seconds:
            if total % 1000 == 0:  # a job starts: its ranks' files appear
                jobs += 1
                for r in range(2):
                    ws.append(Writer(f"{a.dir}/jobs/{7000 + jobs}/rank{r}.log",
                                     a.run, f"j{jobs}r{r}", man, False))
            # the two logs and the newest job's ranks are written most;
            # an older job's file now and then (after it sat idle: the
            # follower closed it and must open it again)
            w = random.choice(ws if random.random() < 0.02 else ws[:2] + ws[-2:])
            w.line()
            total += 1
            if w.name == "s" and w.n % a.rotate_every == 0:
                w.rename_rotate()
            elif w.name == "c" and w.n % a.rotate_every == 0:
                w.copytruncate()
            if total % 50 == 0:
                time.sleep(max(0.0, t0 + total / a.rate - time.time()))
        for w in ws:
            w.f.close()
    print(f"log_writer: {total} lines, {jobs} jobs", file=sys.stderr)


if __name__ == "__main__":
    main()
