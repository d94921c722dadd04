/* Delivery order per topic and partition (core/dlvorder.h). A producer
 * writes to a handful of topics: a short list, each with an array of
 * its partitions' last offsets. */
#include <stdlib.h>
#include <string.h>

#include "core/dlvorder.h"
#include "core/mem.h"

typedef struct dlo_topic {
    char *name;
    int64_t *last; /* by partition; -1: none yet */
    int32_t n;
} dlo_topic;

struct dlo {
    dlo_topic *t;
    size_t n;
};

dlo *dlo_new(void)
{
    return xcalloc(1, sizeof(dlo));
}

void dlo_free(dlo *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->n; i++) {
        free(d->t[i].name);
        free(d->t[i].last);
    }
    free(d->t);
    free(d);
}

static dlo_topic *find(const dlo *d, const char *topic)
{
    for (size_t i = 0; i < d->n; i++)
        if (!strcmp(d->t[i].name, topic))
            return &d->t[i];
    return NULL;
}

static dlo_topic *topic_of(dlo *d, const char *topic)
{
    dlo_topic *t = find(d, topic);

    if (t)
        return t;
    d->t = xrealloc(d->t, (d->n + 1) * sizeof *d->t);
    t = &d->t[d->n++];
    *t = (dlo_topic){.name = xstrdup(topic)};
    return t;
}

/* Room for partition p, the new slots at -1. */
static void reach(dlo_topic *t, int32_t p)
{
    int32_t n = t->n;

    if (p < n)
        return;
    t->n = p + 1 > 2 * n ? p + 1 : 2 * n;
    t->last = xrealloc(t->last, (size_t)t->n * sizeof *t->last);
    for (int32_t i = n; i < t->n; i++)
        t->last[i] = -1;
}

int dlo_check(dlo *d, const char *topic, int32_t partition, int64_t offset)
{
    dlo_topic *t;

    if (partition < 0 || !topic)
        return 0;
    if (offset < 0)
        return 1;
    t = topic_of(d, topic);
    reach(t, partition);
    if (offset <= t->last[partition])
        return 1;
    t->last[partition] = offset;
    return 0;
}

int64_t dlo_last(const dlo *d, const char *topic, int32_t partition)
{
    const dlo_topic *t = find(d, topic);

    return t && partition >= 0 && partition < t->n ? t->last[partition] : -1;
}
