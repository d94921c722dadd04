/* What the collector commands share: the producer a collector publishes
 * with (its config's kafka and collect sections read), numeric flags,
 * and the loop a long-running collector runs on (SIGINT, SIGTERM and
 * --for end it; its counters logged once a minute). */
#ifndef CS_CMD_COLRUN_H
#define CS_CMD_COLRUN_H

#include <event2/event.h>

#include "core/err.h"
#include "core/kafka.h"
#include "core/obsrv.h"
#include "ingest/colcfg.h"
#include "ingest/colmx.h"

/* --brokers, else kafka.brokers of the config (--config,
 * $CASCADE_CONFIG), with its kafka.properties, the topics a collector
 * writes checked, and the config's collect section into cc (NULL: not
 * read). NULL with the reason printed as "cascade WHO: ...". */
kfk_producer *colrun_producer(const char *who, const char *brokers,
                              const char *config, const char *codec,
                              ccf_conf *cc);
/* v as a whole number from lo to hi: -1 with "WHAT wants LO..HI, not
 * 'V'" printed. */
int colrun_int(const char *what, const char *v, int lo, int hi, int *out);

typedef struct colrun_loop {
    struct event_base *base;
    kfk_producer *p; /* attached: detached before the base goes */
    struct event *ev[4]; /* SIGINT, SIGTERM, --for, the minute's report */
    obsrv *obs;          /* metrics.ingest: /metrics, /healthz, /readyz */
    /* and systemd's READY=1, sent by colrun_observe */
    const char *collector;
    void (*counts)(void *arg, cmx_counts *c);
    void *counts_arg;
} colrun_loop;

/* seconds: --for (0: until a signal); p is polled from the loop. */
int colrun_open(colrun_loop *l, int seconds, kfk_producer *p, cs_err *err);
/* fn(arg) once a minute from the loop. */
int colrun_report(colrun_loop *l, event_callback_fn fn, void *arg,
                  cs_err *err);
/* The collector's /metrics (core/obsrv.h) on metrics.listen and
 * metrics.ingest of its config (none when that port is 0): counts(arg)
 * fills the shared collector families (ingest/colmx.h) at each scrape.
 * -1 with the reason in err. */
int colrun_observe(colrun_loop *l, const char *collector, const char *config,
                   void (*counts)(void *arg, cmx_counts *c), void *arg,
                   cs_err *err);
/* Detaches the producer, then frees the loop. */
void colrun_close(colrun_loop *l);

#endif
