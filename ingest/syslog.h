/* Raw log lines as syslog daemons write them to files, parsed into the
 * fields of a signal: the collector's side of a host's kernel, scheduler
 * and job output.
 *
 *   2024-05-01T00:00:01.234567Z node0123 kernel: [  218.25] NVRM: Xid ...
 *   Dec  2 11:38:46 worker4 slurmstepd[811]: error: *** JOB 7 ON ...
 *   2024-05-01T00:00:02Z node0007 job=700007 python[4242]: [rank3]: ...
 *
 * The time is RFC 3339 (rsyslog's high-precision file format) or the
 * traditional "Mmm dd HH:MM:SS" (the year is given: the line has none).
 * Then the host (absent when the next word already ends in ':'), an
 * optional "job=ID" (a job's output forwarded through syslog), and the
 * tag "program[pid]:". The program names the source: kernel; slurmctld,
 * slurmd, slurmstepd, slurmdbd: slurm; raylet, gcs_server, ray*: ray;
 * anything else: app (the job's or the host's output). */
#ifndef CS_SYSLOG_H
#define CS_SYSLOG_H

#include <stdint.h>

#include "core/err.h"
#include "core/signal.h"

typedef struct slg_line {
    int64_t ts; /* us since epoch, UTC */
    sig_source source;
    char host[128]; /* "" when the line names none */
    char job[64];   /* "" unless job=ID */
    char program[64];
    const char *msg; /* the text after the tag, inside the parsed line */
} slg_line;

/* The source a program's lines are: kernel; slurmctld, slurmd,
 * slurmstepd, slurmdbd: slurm; raylet, gcs_server, ray*: ray; else app. */
sig_source slg_source_of(const char *program);

/* Parses one NUL-terminated line. year: for traditional times. Returns 0,
 * or -1 with why naming what is wrong and at which column. */
int slg_parse(const char *line, int year, slg_line *out, cs_err *why);

#endif
