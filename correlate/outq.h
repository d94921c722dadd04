/* A batch's outputs (incidents, action requests, dead letters) in the
 * order they go out, and the outbox: the record of each incident and
 * action the correlator keeps in Redis ("cascade:{C}:outbox", a field a
 * record) from the moment the batch's state is written until Kafka has
 * it, so that a crash in between publishes it again instead of losing
 * it. */
#ifndef CS_OUTQ_H
#define CS_OUTQ_H

#include <stddef.h>
#include <stdint.h>

typedef struct pending {
    const char *topic; /* static */
    int32_t part;      /* KFK_ANY_PARTITION: by key */
    char *key;
    char *value;
    char *outbox;   /* "cascade:{C}:outbox", or NULL (dead letters) */
    char field[17]; /* the record's field: its topic's and value's hash */
} pending;

typedef struct outq {
    pending *v;
    size_t n, cap;
    size_t sent; /* produced so far */
} outq;

/* Appends an output: key is copied ("" for NULL), value is taken (a
 * NULL value, the caller's allocation failing, aborts). With a cluster
 * the output has an outbox record (incidents and actions); without, none
 * (dead letters). */
pending *outq_push(outq *q, const char *topic, int32_t part, const char *key,
                   char *value, const char *cluster);
/* Frees the outputs; the queue is empty and reusable. */
void outq_clear(outq *q);
void outq_free(outq *q);

/* The outbox record of p: "topic\nkey\nvalue" (malloc'd). */
char *outq_record(const pending *p);
/* Whether key is an outbox's ("cascade:{C}:outbox"). */
int outq_is_outbox(const char *key);
/* A record read back from outbox key's field: the output pushed, its
 * field the one of record (whatever its content hashes to now). part
 * gives its partition from its topic and cluster. 0, or -1 when the
 * record is malformed or of another topic than incidents and actions. */
int outq_restore(outq *q, const char *key, const char *field,
                 const char *rec,
                 int32_t (*part)(void *arg, const char *topic,
                                 const char *cluster),
                 void *arg);

#endif
