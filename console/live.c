/* The console's live view (console/live.h). */
#include "console/live.h"

#include <stdlib.h>
#include <string.h>

#include "core/kafka.h"
#include "core/mem.h"
#include "core/strmap.h"
#include "core/topics.h"

struct cn_live {
    kfk_consumer *inc, *aud;
    vw_incidents *incs;
    vw_trail *trail;
    strmap *changed; /* incident id -> (uintptr_t) seq */
    uint64_t seq;
};

static void on_incidents(void *arg, rd_kafka_message_t **m, size_t n)
{
    cn_live *l = arg;

    for (size_t i = 0; i < n; i++) {
        const char *id = vw_incidents_take(l->incs, m[i]->payload, m[i]->len);
        if (id)
            strmap_put(l->changed, id, (void *)(uintptr_t)++l->seq);
    }
    kfk_consumer_release(l->inc); /* nothing is ever committed */
}

static void on_audit(void *arg, rd_kafka_message_t **m, size_t n)
{
    cn_live *l = arg;

    for (size_t i = 0; i < n; i++)
        if (!vw_trail_add(l->trail, m[i]->payload, m[i]->len))
            l->seq++;
    kfk_consumer_release(l->aud);
}

static kfk_consumer *consumer(struct event_base *base, const cs_config *cfg,
                              const char *group, const char *topic,
                              kfk_batch_fn fn, cn_live *l, cs_err *err)
{
    kfk_consumer_opts o = kfk_consumer_defaults(cfg->brokers, group, topic);

    o.props = &cfg->kprops;
    o.max_batch = 500;
    o.on_batch = fn;
    o.arg = l;
    return kfk_consumer_open(base, &o, err);
}

cn_live *cn_live_start(struct event_base *base, const cs_config *cfg,
                       const char *group, cs_err *err)
{
    cn_live *l = xcalloc(1, sizeof *l);
    char g[256];

    l->incs = vw_incidents_new();
    l->trail = vw_trail_new(NULL);
    l->changed = strmap_new();
    snprintf(g, sizeof g, "%s.incidents", group);
    if (!(l->inc = consumer(base, cfg, g, KFK_TOPIC_INCIDENTS, on_incidents, l, err)))
        goto fail;
    snprintf(g, sizeof g, "%s.audit", group);
    if (!(l->aud = consumer(base, cfg, g, KFK_TOPIC_AUDIT, on_audit, l, err)))
        goto fail;
    return l;
fail:
    cn_live_free(l);
    return NULL;
}

const vw_incidents *cn_live_incidents(const cn_live *l)
{
    return l->incs;
}

const vw_trail *cn_live_trail(const cn_live *l)
{
    return l->trail;
}

uint64_t cn_live_seq(const cn_live *l)
{
    return l->seq;
}

uint64_t cn_live_changed(const cn_live *l, const char *id)
{
    return (uint64_t)(uintptr_t)strmap_get(l->changed, id);
}

int cn_live_ready(cn_live *l)
{
    return kfk_consumer_owned(l->inc) && kfk_consumer_owned(l->aud);
}

void cn_live_free(cn_live *l)
{
    if (!l)
        return;
    kfk_consumer_free(l->inc);
    kfk_consumer_free(l->aud);
    vw_incidents_free(l->incs);
    vw_trail_free(l->trail);
    strmap_free(l->changed, NULL);
    free(l);
}
