/* The collectors' shared families: see colmx.h. */
#include "ingest/colmx.h"

enum { X_READ, X_PUBLISHED, X_DROPPED, X_ERRORS, X_KAFKA, X__COUNT };
static const mx_family FAM[X__COUNT] = {
    [X_READ] = {"cascade_collector_read_total", MX_COUNTER,
                "What the collector read: lines, journal entries, API "
                "objects or polls.", "collector"},
    [X_PUBLISHED] = {"cascade_collector_published_total", MX_COUNTER,
                     "Signals the collector published to cascade.signals.",
                     "collector"},
    [X_DROPPED] = {"cascade_collector_dropped_total", MX_COUNTER,
                   "What the collector did not publish, by reason: filtered "
                   "at the edge, rejected (unreadable), dead-lettered.",
                   "collector,reason"},
    [X_ERRORS] = {"cascade_collector_errors_total", MX_COUNTER,
                  "Failed polls, HTTP and network errors of the collector.",
                  "collector"},
    [X_KAFKA] = {"cascade_collector_kafka_up", MX_GAUGE,
                 "1 while the collector's producer has a broker connection "
                 "up.", "collector"},
};

void cmx_write(mx_out *o, const char *collector, const cmx_counts *c)
{
    const char *v[] = {collector, NULL};
    const char *reasons[] = {"filtered", "rejected", "dead_lettered"};
    const unsigned long long n[] = {c->filtered, c->rejected, c->dead};

    mx_family_begin(o, &FAM[X_READ]);
    mx_sample(o, &FAM[X_READ], v, (double)c->read);
    mx_family_begin(o, &FAM[X_PUBLISHED]);
    mx_sample(o, &FAM[X_PUBLISHED], v, (double)c->published);
    mx_family_begin(o, &FAM[X_DROPPED]);
    for (int i = 0; i < 3; i++) {
        v[1] = reasons[i];
        mx_sample(o, &FAM[X_DROPPED], v, (double)n[i]);
    }
    mx_family_begin(o, &FAM[X_ERRORS]);
    mx_sample(o, &FAM[X_ERRORS], v, (double)c->errors);
    mx_family_begin(o, &FAM[X_KAFKA]);
    mx_sample(o, &FAM[X_KAFKA], v, c->kafka_up);
}
