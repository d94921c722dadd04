/* Which files a collector follows, and what their paths say: a glob
 * whose parts may also name the job, the rank and the host the file is
 * about, as a job's output files are laid out on shared storage.
 *
 *   /var/log/kern.log
 *   /shared/jobs/{job}/rank{rank}.log
 *   /var/log/slurm/job{job}/{host}.out
 *   /tmp/ray/session_latest/logs/worker-*.err
 *
 * '*' is any run of characters but '/', '?' one of them; {job} and {host}
 * are one or more such characters, {rank} a number, each at most once.
 * Nothing else is special: '[', '\' and any other '{' are refused, so a
 * pattern means the same to glob(3) (which finds the files) and to the
 * matcher (which reads the captures). */
#ifndef CS_PATHPAT_H
#define CS_PATHPAT_H

#include "core/err.h"

typedef struct pp_pattern pp_pattern;

typedef struct pp_capture {
    char job[64];   /* "" when the pattern names none */
    char host[128];
    int rank;       /* -1 when the pattern names none */
} pp_capture;

/* NULL with err "column N: what" when the pattern is not one. */
pp_pattern *pp_compile(const char *pattern, cs_err *err);
void pp_free(pp_pattern *p);
/* The pattern as glob(3) reads it: each capture a '*'. */
const char *pp_glob(const pp_pattern *p);
/* The directory part before the first wildcard or capture: what exists
 * whatever matches ("/shared/jobs" above; "." for a relative pattern
 * with none). */
const char *pp_root(const pp_pattern *p);
/* 1 when path matches (captures in c, which may be NULL), else 0. A
 * capture too long for its field does not match. */
int pp_match(const pp_pattern *p, const char *path, pp_capture *c);

#endif
