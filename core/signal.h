/* The normalised signal: what every collector emits and the correlator
 * consumes. Its JSON form is the docs/FORMATS.md line format; on Kafka it is the
 * same object as msgpack. A sig owns one JSON object (the normalised form);
 * every pointer below borrows from it. */
#ifndef CS_SIGNAL_H
#define CS_SIGNAL_H

#include <jansson.h>

#include "core/topics.h"
#include <stdint.h>

#include "core/err.h"

typedef enum {
    SRC_KERNEL,
    SRC_APP,
    SRC_RAY,
    SRC_SLURM,
    SRC_K8S,
    SRC_ALERTMANAGER,
    SRC_METRIC,
    SRC_JOB,
    SRC_INVENTORY,
    SRC__COUNT
} sig_source;

typedef struct sig {
    /* Normalised object; owns the strings below. NULL for a plain line
     * signal read off the wire without one (sig_parse_msgpack): its
     * strings are then in raw, after a copy of its bytes; sig_json()
     * gives its object when one is wanted. */
    json_t *obj;
    char *raw;
    size_t raw_len;
    int64_t ts;       /* event time, us since epoch */
    uint64_t id;      /* hash of the normalised object: the window member */
    sig_source source;
    const char *cluster; /* never NULL: "default" when absent */
    const char *host, *job, *job_name;
    const char *line; /* kernel, app, ray, slurm */
    int rank;         /* app: -1 when absent */
    /* metric */
    const char *name;
    double value;
    json_t *labels;
    /* job */
    const char *state;
    json_t *nodes, *config;
    /* alertmanager payload, k8s event, slurm record (string) */
    json_t *body;
} sig;

/* Limits on one signal, so one bad producer cannot exhaust the engine:
 * a signal's JSON line (replay, `cascade ingest file`) is at most this
 * long, which keeps its Kafka message (msgpack, no larger than the JSON
 * but for a few bytes per field) within KFK_MESSAGE_MAX_BYTES. One limit
 * everywhere: a line one side took and the other refused, or that Kafka
 * refused after the collector took it, was lost or retried forever. */
#define SIG_MAX_BYTES (KFK_MESSAGE_MAX_BYTES - KFK_RECORD_OVERHEAD)

const char *sig_source_name(sig_source s);
/* A time field (v, named `field` in errors): an RFC 3339 string or epoch
 * seconds, into us since epoch. -1 with err set when absent or bad. */
int sig_time(json_t *v, const char *field, int64_t *ts, cs_err *err);
int sig_source_parse(const char *name, sig_source *out);

/* Validates and normalises a decoded object (takes a reference of its own).
 * On error returns -1 and names the field and the reason. */
int sig_from_json(sig *s, json_t *obj, cs_err *err);
/* The same, taking the caller's reference instead of copying: for an
 * object built for this signal alone (normalised in place; released with
 * the signal, or at once on error). */
int sig_adopt_json(sig *s, json_t *obj, cs_err *err);
/* One JSON Lines line (no newline needed). */
int sig_parse_json(sig *s, const char *text, size_t len, cs_err *err);
/* One msgpack-encoded signal as it travels on Kafka. */
int sig_parse_msgpack(sig *s, const char *data, size_t len, cs_err *err);
/* The signal's normalised object, a new reference (built for a signal
 * read without one); NULL only when out of memory. */
json_t *sig_json(const sig *s);
/* msgpack encoding; *out is malloc'd. */
int sig_to_msgpack(const sig *s, char **out, size_t *len);
/* A collector's log line as msgpack, written without a JSON object: byte
 * for byte what sig_to_msgpack writes for the signal of the object
 * {ts, source, line, host, job, cluster, id} built in that order (host
 * and job left out when NULL or "", cluster when NULL; then cluster
 * "default" goes after id, as normalising adds it). ts: the collector's
 * RFC 3339 time; id: 16 hex digits. -1 when a text is not valid UTF-8,
 * or line or cluster is "", and the caller takes the JSON path (which
 * replaces such bytes, or refuses the signal with the reason); *out is
 * malloc'd. */
int sig_log_msgpack(const char *ts, sig_source source, const char *line,
                    const char *host, const char *job, const char *cluster,
                    const char *id, char **out, size_t *len);
/* A metric sample as msgpack, written without a JSON object: byte for
 * byte what sig_to_msgpack writes for the signal of the object {ts, id,
 * source: "metric", cluster, host, name, value (a real), labels, job}
 * built in that order (job left out when NULL). labels: the n pairs
 * lk[i]: lv[i] in order, as a JSON object holds them: a name that comes
 * again keeps its first place and takes the last value. -1 when a text
 * is not valid UTF-8, cluster, host or name is "", or value is not
 * finite (the object path refuses those); *out is malloc'd. */
int sig_metric_msgpack(const char *ts, const char *id, const char *cluster,
                       const char *host, const char *name, double value,
                       const char *const *lk, const char *const *lv,
                       size_t n, const char *job, char **out, size_t *len);
void sig_free(sig *s);

#endif
