/* A classifier's open multi-line assemblies: Python tracebacks (their
 * frames tell the OOM's pass), wrapped kernel messages, reports whose fact
 * waits for their lines, and finished reports remembered a while, keyed
 * "CLUSTER|HOST|JOB|RANK" or "CLUSTER|HOST|kernel"; what changed since the
 * last look (to be stored), and reading a stored one back. The classifier
 * decides what a line does to them (classify.c). Private to rules/. */
#ifndef CS_ASSEMBLY_H
#define CS_ASSEMBLY_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "core/ts.h"

/* An assembly's key ("CLUSTER|HOST|JOB|RANK", "CLUSTER|HOST|kernel") is
 * cut to fit this. */
#define TB_KEY_LEN 400

/* A traceback older than this (event time) is abandoned: its exception line
 * was lost or the job printed something else. */
#define TB_MAX_AGE (60 * TS_SEC)
/* The kernel prints a wrapped message in one burst ("NVRM: The NVIDIA GPU
 * 0000:b3:00.0" / "NVRM: (PCI ID: 10de:26b5) installed in this system has"
 * / "NVRM: fallen off the bus and is not responding to commands."): lines
 * of one host this close together and this few are read as one. */
#define KMSG_MAX_AGE (2 * TS_SEC)
#define KMSG_MAX_LINES 4
/* A report (a signature with `report: true`, such as the desync report
 * of TORCH_NCCL_DESYNC_DEBUG) heads indented lines printed in one burst:
 * it is complete when its rank prints something else, or when this long
 * passes without a line of it. */
#define REPORT_QUIET (2 * TS_SEC)
#define REPORT_MAX_LINES 32
/* How long a finished report's lines are remembered, so that a redelivered
 * line of it (after a restart) is not read as a message of its own. */
#define REPORT_KEEP (10 * TS_MIN)

/* An open multi-line assembly: a Python traceback (frames tell the pass),
 * a wrapped kernel message, a report whose fact waits for its lines, or
 * what a finished report read (to recognise its lines if they come back). */
enum tb_kind { TB_TRACE, TB_KMSG, TB_REPORT, TB_REPORTED };

struct traceback {
    enum tb_kind kind;
    int64_t started;
    int64_t last; /* report: its latest line */
    int forward, backward;
    int dirty;
    int lines;
    json_t *head; /* open report: the signal whose fact waits */
    int slot;     /* its host's counter in open_hosts, -1: none (key_slot) */
    char text[480];
};

typedef struct assemblies assemblies;

assemblies *asb_new(void);
void asb_free(assemblies *a);
/* An app line's key, "CLUSTER|HOST|JOB|RANK" (host and job may be NULL),
 * and a host's wrapped kernel message's, "CLUSTER|HOST|kernel", in key
 * (len bytes, cut to fit). */
void asb_key_app(const char *cluster, const char *host, const char *job,
                 int rank, char *key, size_t len);
void asb_key_kernel(const char *cluster, const char *host, char *key,
                    size_t len);
/* The assembly under key, or NULL. */
struct traceback *asb_get(const assemblies *a, const char *key);
/* Walks the assemblies; start with *pos 0. */
int asb_next(const assemblies *a, size_t *pos, const char **key,
             struct traceback **tb);
/* Whether a line of host may continue an open assembly (counters per
 * hash of the host: a line whose host has none needs no key built). */
int asb_may_be_open(const assemblies *a, const char *host);
/* Starts (or restarts) the assembly under key, empty, at ts, due to be
 * stored. */
struct traceback *asb_open(assemblies *a, const char *key, const char *host,
                           int64_t ts);
/* Forgets an assembly and remembers to delete its stored copy. */
void asb_end(assemblies *a, const char *key);
/* Open reports (a hint: 0 means none, recounted by whoever walks them). */
int asb_reports(const assemblies *a);
void asb_set_reports(assemblies *a, int n);

typedef int64_t (*asb_clock_fn)(void *arg, const char *cluster);
typedef void (*asb_change_fn)(void *arg, const char *key, const char *value);
/* Ends the assemblies past their age (by their cluster's clock), then
 * calls fn for each that changed (value) or ended (NULL) since the last
 * call. */
void asb_changes(assemblies *a, asb_clock_fn now_of, asb_change_fn fn,
                 void *arg);
/* One stored assembly read back: 0, or -1 when unreadable. */
int asb_restore(assemblies *a, const char *key, const char *value);

/* A frame line of a traceback: marks the pass it shows. */
void asb_frame_pass(struct traceback *tb, const char *line);
/* Whether line (without its rank prefix) continues a report: indented,
 * not before it, and while it is still being printed. */
int asb_report_continues(const struct traceback *tb, const char *line,
                         int64_t ts);
/* Adds a line to a report's detail (see assembly.c). */
void asb_report_add(struct traceback *tb, const char *line, int64_t ts);

#endif
