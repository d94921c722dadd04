/* The correlator's metrics: the counts and histograms its batch cycle
 * records as it goes (cm_* calls from correlator.c), written at scrape
 * time with what the engine, the store and the consumer know then (open
 * incidents, the Redis link, consumer lag). Its families are declared
 * once, in cmetrics.c's table. */
#ifndef CS_CMETRICS_H
#define CS_CMETRICS_H

#include <stddef.h>
#include <stdint.h>

#include "core/metrics.h"

struct engine;
struct store;
struct kfk_consumer;

typedef struct cmetrics cmetrics;

enum cm_dead { CM_DEAD_UNDECODABLE, CM_DEAD_REFUSED, CM_DEAD__COUNT };
enum cm_phase { CM_FEED, CM_REDIS, CM_KAFKA, CM_COMMIT, CM_PHASE__COUNT };

cmetrics *cm_new(void);
void cm_free(cmetrics *m);

/* A signal fed: its source (sig_source), cluster, and event time (us). */
void cm_signal(cmetrics *m, int source, const char *cluster, int64_t ts_us);
void cm_dead(cmetrics *m, enum cm_dead why);
/* A batch committed: its size and each phase's duration (s). */
void cm_batch(cmetrics *m, size_t n, const double phase_s[CM_PHASE__COUNT]);
/* An incident published: eng_flush_kind's kind; detect_s, from the first
 * signal of the incident to its first publication (opened only). */
void cm_incident(cmetrics *m, int kind, double detect_s);
/* An action requested, by playbook and approval class. */
void cm_action(cmetrics *m, const char *playbook, const char *approval);
void cm_republished(cmetrics *m, size_t n);

/* The families, with the engine's open incidents by scenario, the store's
 * link and the consumer's lag (each may be NULL), and whether the Kafka
 * clients are connected (kfk_*_up). */
void cm_write(const cmetrics *m, mx_out *o, const struct engine *e,
              const struct store *st, const struct kfk_consumer *cons,
              int kafka_up);

#endif
