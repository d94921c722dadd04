#include "ingest/syslog.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/str.h"
#include "core/ts.h"

static const char *const months[] = {"Jan", "Feb", "Mar", "Apr",
                                     "May", "Jun", "Jul", "Aug",
                                     "Sep", "Oct", "Nov", "Dec"};

static int two_digits(const char *p, int *v)
{
    if (!isdigit((unsigned char)p[0]) || !isdigit((unsigned char)p[1]))
        return -1;
    *v = (p[0] - '0') * 10 + (p[1] - '0');
    return 0;
}

/* "Mmm dd HH:MM:SS" (day padded with a space or a zero); 15 characters. */
static int bsd_time(const char *p, int year, int64_t *ts)
{
    struct tm tm = {0};
    int mon = -1, day, h, m, s;

    for (int i = 0; i < 12; i++)
        if (!strncmp(p, months[i], 3))
            mon = i;
    if (mon < 0 || p[3] != ' ')
        return -1;
    if (p[4] == ' ' && isdigit((unsigned char)p[5]))
        day = p[5] - '0';
    else if (two_digits(p + 4, &day))
        return -1;
    if (p[6] != ' ' || two_digits(p + 7, &h) || p[9] != ':' ||
        two_digits(p + 10, &m) || p[12] != ':' || two_digits(p + 13, &s) ||
        (p[15] != ' ' && p[15] != '\0'))
        return -1;
    if (day < 1 || day > 31 || h > 23 || m > 59 || s > 60)
        return -1;
    tm.tm_year = year - 1900;
    tm.tm_mon = mon;
    tm.tm_mday = day;
    tm.tm_hour = h;
    tm.tm_min = m;
    tm.tm_sec = s;
    *ts = (int64_t)timegm(&tm) * TS_SEC;
    return 0;
}

sig_source slg_source_of(const char *prog)
{
    if (!strcmp(prog, "kernel"))
        return SRC_KERNEL;
    if (!strcmp(prog, "slurmctld") || !strcmp(prog, "slurmd") ||
        !strcmp(prog, "slurmstepd") || !strcmp(prog, "slurmdbd"))
        return SRC_SLURM;
    if (!strcmp(prog, "raylet") || !strcmp(prog, "gcs_server") ||
        !strncmp(prog, "ray", 3))
        return SRC_RAY;
    return SRC_APP;
}

/* The word at p (up to a space or the end): its length. */
static size_t word(const char *p)
{
    size_t n = 0;

    while (p[n] && p[n] != ' ')
        n++;
    return n;
}

/* "job=ID " when present: the job's id into out; returns what it took. */
static size_t job_word(const char *p, slg_line *out, cs_err *why,
                       const char *line)
{
    size_t n = word(p);

    if (n < 4 || strncmp(p, "job=", 4))
        return 0;
    if (n == 4 || n - 4 >= sizeof out->job) {
        cs_err_set(why, "column %zu: 'job=' needs an id of 1 to %zu "
                   "characters", (size_t)(p - line) + 1, sizeof out->job - 1);
        return (size_t)-1;
    }
    memcpy(out->job, p + 4, n - 4);
    out->job[n - 4] = '\0';
    return p[n] == ' ' ? n + 1 : n;
}

/* "program[pid]:" or "program:" then a space or the end. */
static int tag(const char *p, slg_line *out, cs_err *why, const char *line)
{
    size_t n = word(p), plen;
    const char *br;

    if (n < 2 || p[n - 1] != ':') {
        cs_err_set(why, "column %zu: expected a tag such as 'kernel:' or "
                   "'slurmd[42]:'", (size_t)(p - line) + 1);
        return -1;
    }
    br = memchr(p, '[', n);
    plen = br ? (size_t)(br - p) : n - 1;
    if (plen == 0 || plen >= sizeof out->program) {
        cs_err_set(why, "column %zu: the tag's program name is empty or "
                   "longer than %zu characters", (size_t)(p - line) + 1,
                   sizeof out->program - 1);
        return -1;
    }
    memcpy(out->program, p, plen);
    out->program[plen] = '\0';
    out->source = slg_source_of(out->program);
    out->msg = p + n + (p[n] == ' ');
    return 0;
}

int slg_parse(const char *line, int year, slg_line *out, cs_err *why)
{
    char stamp[48];
    const char *p = line;
    size_t n = word(p), k;

    memset(out, 0, sizeof *out);
    if (n > 0 && n < sizeof stamp && isdigit((unsigned char)p[0])) {
        memcpy(stamp, p, n);
        stamp[n] = '\0';
        if (ts_parse_rfc3339(stamp, &out->ts)) {
            cs_err_set(why, "column 1: '%.40s' is not an RFC 3339 time",
                       stamp);
            return -1;
        }
        p += n;
    } else if (bsd_time(p, year, &out->ts) == 0) {
        p += 15;
    } else {
        cs_err_set(why, "column 1: the line does not start with a time "
                   "(RFC 3339, or syslog's 'Mmm dd HH:MM:SS')");
        return -1;
    }
    if (*p != ' ' || !p[1]) {
        cs_err_set(why, "column %zu: nothing after the time",
                   (size_t)(p - line) + 1);
        return -1;
    }
    p++;
    n = word(p);
    if (n && p[n - 1] != ':' && strncmp(p, "job=", 4)) {
        if (n >= sizeof out->host) {
            cs_err_set(why, "column %zu: host name longer than %zu characters",
                       (size_t)(p - line) + 1, sizeof out->host - 1);
            return -1;
        }
        memcpy(out->host, p, n);
        out->host[n] = '\0';
        p += n + (p[n] == ' ');
    }
    if ((k = job_word(p, out, why, line)) == (size_t)-1)
        return -1;
    return tag(p + k, out, why, line);
}
