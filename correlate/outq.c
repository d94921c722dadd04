#include "correlate/outq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "core/mem.h"
#include "core/str.h"
#include "core/topics.h"

pending *outq_push(outq *q, const char *topic, int32_t part, const char *key,
                   char *value, const char *cluster)
{
    pending *p;

    if (!value) /* the caller's json_dumps, out of memory */
        abort();
    if (q->n == q->cap) {
        q->cap = q->cap ? q->cap * 2 : 64;
        q->v = xrealloc(q->v, q->cap * sizeof *q->v);
    }
    p = &q->v[q->n++];
    memset(p, 0, sizeof *p);
    p->topic = topic;
    p->part = part;
    p->key = xstrdup(key ? key : "");
    p->value = value;
    if (cluster) {
        uint64_t h = hash_fnv1a(HASH_FNV_SEED, topic, strlen(topic) + 1);
        size_t len = strlen(cluster) + 32;
        h = hash_fnv1a(h, value, strlen(value));
        snprintf(p->field, sizeof p->field, "%016llx", (unsigned long long)h);
        p->outbox = xmalloc(len);
        snprintf(p->outbox, len, "cascade:{%s}:outbox", cluster);
    }
    return p;
}

void outq_clear(outq *q)
{
    for (size_t i = 0; i < q->n; i++) {
        free(q->v[i].key);
        free(q->v[i].value);
        free(q->v[i].outbox);
    }
    q->n = q->sent = 0;
}

void outq_free(outq *q)
{
    outq_clear(q);
    free(q->v);
    q->v = NULL;
    q->cap = 0;
}

char *outq_record(const pending *p)
{
    size_t len = strlen(p->topic) + strlen(p->key) + strlen(p->value) + 3;
    char *rec = xmalloc(len);

    snprintf(rec, len, "%s\n%s\n%s", p->topic, p->key, p->value);
    return rec;
}

int outq_is_outbox(const char *key)
{
    size_t n = strlen(key);

    return n > 17 && strncmp(key, "cascade:{", 9) == 0 &&
           strcmp(key + n - 8, "}:outbox") == 0;
}

int outq_restore(outq *q, const char *key, const char *field,
                 const char *rec,
                 int32_t (*part)(void *arg, const char *topic,
                                 const char *cluster),
                 void *arg)
{
    const char *nl1 = strchr(rec, '\n');
    const char *nl2 = nl1 ? strchr(nl1 + 1, '\n') : NULL;
    const char *topic = NULL;
    char *k, *cluster;

    if (!nl2 || !outq_is_outbox(key))
        return -1;
    if (!strncmp(rec, KFK_TOPIC_INCIDENTS, (size_t)(nl1 - rec)))
        topic = KFK_TOPIC_INCIDENTS;
    else if (!strncmp(rec, KFK_TOPIC_ACTIONS, (size_t)(nl1 - rec)))
        topic = KFK_TOPIC_ACTIONS;
    if (!topic)
        return -1;
    k = xstrndup(nl1 + 1, (size_t)(nl2 - nl1 - 1));
    /* "cascade:{" CLUSTER "}:outbox" */
    cluster = xstrndup(key + 9, strlen(key) - 17);
    str_copy(outq_push(q, topic, part(arg, topic, cluster), k,
                       xstrdup(nl2 + 1), cluster)->field,
             sizeof ((pending *)0)->field, field);
    free(k);
    free(cluster);
    return 0;
}
