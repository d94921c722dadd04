/* A process's own observability endpoint, on its event loop (core/hlisten):
 *
 *   GET /metrics  Prometheus text exposition (core/metrics.h): what the
 *                 process's parts write, then process and build facts
 *   GET /healthz  200 "ok" while the loop runs (liveness)
 *   GET /readyz   200 "ready", or 503 with the first reason it is not
 *                 (a dependency gone, state not restored yet)
 *
 * The process registers its parts (each a metrics writer and, optionally,
 * a readiness check) before or after starting; a scrape calls them in
 * order on the loop, so they read their counts without locks. */
#ifndef CS_OBSRV_H
#define CS_OBSRV_H

#include "core/err.h"
#include "core/metrics.h"

struct event_base;

typedef struct obs_part {
    const char *name; /* "correlator": readiness reasons begin with it */
    /* Writes the part's families; NULL: none. */
    void (*metrics)(mx_out *o, void *arg);
    /* 1 when ready; 0 with the reason in why. NULL: always ready. */
    int (*ready)(char *why, size_t len, void *arg);
    void *arg;
} obs_part;

typedef struct obsrv obsrv;

/* What cascade_build_info says of the binary and the process. */
typedef struct obs_build {
    const char *process; /* "correlate", "ingest webhook", "act" */
    const char *version, *commit;
} obs_build;

/* Listens on addr:port (port 0: any; read back with obs_port). NULL with
 * the reason in err. */
obsrv *obs_start(struct event_base *base, const char *addr, int port,
                 const obs_build *b, cs_err *err);
int obs_port(const obsrv *s);
/* Adds a part (copied); at most OBS_MAX_PARTS. -1 when full. */
#define OBS_MAX_PARTS 16
int obs_add(obsrv *s, const obs_part *p);
/* The exposition /metrics would answer now (for tests and `--once`
 * dumps): caller frees with mx_out_free. */
mx_out *obs_render(obsrv *s);
/* Whether /readyz would answer 200; the first reason otherwise. */
int obs_ready(obsrv *s, char *why, size_t len);
void obs_free(obsrv *s);

#endif
