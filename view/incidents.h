/* The incidents as an operator looks them up: the last version of each
 * incident read from cascade.incidents (docs/FORMATS.md), selected by
 * status, scenario, cluster, node, job and time, newest first. What the
 * command line, the console, the report and the agents' tools all read.
 * The caller feeds it the topic's messages (core/kafka_scan.h); nothing
 * here reads Kafka itself. */
#ifndef CS_VW_INCIDENTS_H
#define CS_VW_INCIDENTS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

typedef struct vw_incidents vw_incidents;

vw_incidents *vw_incidents_new(void);
void vw_incidents_free(vw_incidents *v);
/* One message of cascade.incidents: the incident it carries becomes that
 * id's current version (messages of one id come in order: they share a
 * key). -1 when it is not an incident record (left out). */
int vw_incidents_add(vw_incidents *v, const char *json, size_t len);
/* The same, giving the id of the incident stored (valid while it is the
 * current version), or NULL: for a caller that keys more by it. */
const char *vw_incidents_take(vw_incidents *v, const char *json, size_t len);
size_t vw_incidents_count(const vw_incidents *v);
/* The current version of an incident (borrowed), or NULL. */
const json_t *vw_incidents_get(const vw_incidents *v, const char *id);

/* An incident as a list shows it (a new reference): id, scenario,
 * status (vw_status), scope, opened, updated, summary, and how many
 * actions it proposed. */
json_t *vw_summary(const json_t *inc);

/* What a selection keeps; NULL or 0 fields keep everything. */
typedef struct vw_filter {
    const char *status;   /* open, resolved, merged */
    const char *scenario; /* an id, or a prefix ending in '.' (hw.) */
    const char *cluster;
    const char *node;     /* in its scope, root cause, chain or children */
    const char *job;      /* likewise */
    int64_t since_us;     /* updated at or after (event time) */
} vw_filter;

/* The status an operator reads: "merged" for one merged into a storm,
 * else the record's own. */
const char *vw_status(const json_t *inc);
/* Whether inc is kept by f. */
int vw_match(const json_t *inc, const vw_filter *f);
/* The kept incidents (borrowed), newest opened first, ties by id; the
 * caller frees the array. n gets how many. */
const json_t **vw_select(const vw_incidents *v, const vw_filter *f,
                         size_t *n);

/* A --since value: a duration back from now_us ("90m", "12h", "7d",
 * "30s") or an RFC 3339 time, as event time in us. -1 when neither. */
int vw_since(const char *s, int64_t now_us, int64_t *out);

#endif
