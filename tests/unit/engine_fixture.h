/* The engine driven directly by a unit test: store callbacks that count
 * what it writes (no Redis, no loop), and signals fed from JSON lines. */
#ifndef CS_TEST_ENGINE_FIXTURE_H
#define CS_TEST_ENGINE_FIXTURE_H

#include <stdio.h>
#include <string.h>

#include "check.h"
#include "engine/engine.h"

typedef struct rec {
    int zadd, trim, hset;
    char last_member[256];
    char last_key[256];
} rec;

static inline void w_add(void *ctx, const char *key, int64_t ts, const char *member)
{
    rec *r = ctx;
    (void)ts;
    r->zadd++;
    snprintf(r->last_key, sizeof r->last_key, "%s", key);
    snprintf(r->last_member, sizeof r->last_member, "%s", member);
}

static inline void w_trim(void *ctx, const char *key, int64_t before)
{
    (void)key;
    (void)before;
    ((rec *)ctx)->trim++;
}

static inline void h_put(void *ctx, const char *key, const char *f, const char *v)
{
    (void)key;
    (void)f;
    (void)v;
    ((rec *)ctx)->hset++;
}

static inline void h_del(void *ctx, const char *key, const char *f)
{
    (void)ctx;
    (void)key;
    (void)f;
}

static const eng_store_ops ops = {w_add, w_trim, h_put, h_del};

/* eng_feed's answer: 1 taken, 0 nothing new (or seen before). */
static inline int feed(engine *e, const char *line)
{
    sig s;
    cs_err err;
    int n;

    if (sig_parse_json(&s, line, strlen(line), &err)) {
        fprintf(stderr, "bad test line: %s\n", err.msg);
        CHECK(0);
        return -1;
    }
    n = eng_feed(e, &s);
    sig_free(&s);
    return n;
}

static inline json_t *only_incident(engine *e)
{
    json_t *all = eng_incidents(e);
    CHECK_INT(json_array_size(all), 1);
    json_t *inc = json_incref(json_array_get(all, 0));
    json_decref(all);
    return inc;
}

#define JOB(ts, id, state, nodes) \
    "{\"ts\":\"" ts "\",\"source\":\"job\",\"job\":\"" id "\",\"state\":\"" \
    state "\",\"nodes\":" nodes "}"
#define XID79(ts, host) \
    "{\"ts\":\"" ts "\",\"source\":\"kernel\",\"host\":\"" host "\",\"line\":" \
    "\"NVRM: Xid (PCI:0000:3a:00): 79, pid=1, name=python3, GPU has fallen " \
    "off the bus.\"}"


#endif
