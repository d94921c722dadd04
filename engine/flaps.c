/* Link flaps, judged by how long the link was down, not how often it went.
 *
 * An InfiniBand port's state changes in the kernel log (kernel.ib_link_down,
 * a net.ib_down fault naming the device; kernel.ib_link_up, its recovery)
 * go to the host's "flap:HOST" window, the device in the job slot. The
 * first down of a link is net.ib_down, as ever, and its link-up resolves
 * it. At every link-up the link's downtime over FLAP_WINDOW is summed,
 * each down to the up that ended it: FLAP_DOWNTIME or more over two
 * downs or more is a link that keeps failing (a cable, a transceiver),
 * net.link_flap for the node (key "flap:HOST|DEV"), which takes in the
 * node's net.ib_down incident. While it is fresh the link's downs fold
 * into it instead of reopening net.ib_down; it resolves after its fold
 * window without one. Fifty bounces of a tenth of a second add up to five
 * seconds: that is net.ib_down reopening and resolving, not a link to
 * replace. A link that goes down and stays down is net.ib_down; its
 * downtime is counted when it comes back.
 *
 * A detector (engine/detect.h). */
#include <stdio.h>
#include <string.h>

#include "core/str.h"
#include "engine/detect.h"
#include "engine/faults.h"
#include "engine/state.h"

#define FLAP_WINDOW TS_HOUR
#define FLAP_DOWNTIME (60 * TS_SEC)
#define FLAP_DOWNS 2

static int link_event(const fact *f)
{
    return f->sig_id && f->detail[0] &&
           (!strcmp(f->sig_id, "kernel.ib_link_down") ||
            !strcmp(f->sig_id, "kernel.ib_link_up"));
}

static void flap_key(char *buf, size_t len, const char *host, const char *dev)
{
    snprintf(buf, len, "flap:%.120s|%.60s", host, dev);
}

/* The link's completed downs since `since` and their total length. */
static int64_t downtime(const node_win *w, const char *dev, int64_t since,
                        size_t *downs)
{
    int64_t total = 0, down_at = 0;

    *downs = 0;
    for (size_t i = 0; w && i < w->n; i++) {
        const entry *en = &w->v[i];
        if (strcmp(en->job, dev))
            continue;
        if (en->kind == FACT_NODE_FAULT && !down_at)
            down_at = en->ts;
        else if (en->kind == FACT_RECOVERY && down_at) {
            if (en->ts >= since) {
                total += en->ts - (down_at > since ? down_at : since);
                (*downs)++;
            }
            down_at = 0;
        }
    }
    return total;
}

static void open_flap(engine *e, const sig *s, const char *host,
                      const fact *f, int64_t total, size_t downs)
{
    cstate *cs = eng_cs(e, s->cluster);
    incident *flap, *cur;
    char key[200], msg[400];
    fact ff;

    flap_key(key, sizeof key, host, f->detail);
    eng_rule_fact(&ff, FACT_NODE_FAULT, "net.link_flap", host, NULL);
    str_copy(ff.detail, sizeof ff.detail, f->detail);
    snprintf(msg, sizeof msg,
             "%.40s on %.60s down %zu times for %lld s in all within the "
             "hour", f->detail, host, downs, (long long)(total / TS_SEC));
    str_copy(ff.excerpt, sizeof ff.excerpt, msg);
    eng_advisory(e, s, &ff, key, 1); /* opened, or touched (reopened) */
    if (!(flap = strmap_get(cs->open_node, key)))
        return;
    cur = strmap_get(cs->open_node, host);
    if (cur && cur != flap && !cur->merged[0] &&
        !strcmp(cur->sc->id, "net.ib_down"))
        eng_merge(e, flap, cur);
}

static int flaps_on_fact(engine *e, const sig *s, const fact *f)
{
    const char *host = f->host[0] ? f->host : s->host;
    char win[160], key[200];
    incident *flap;
    size_t downs;
    int64_t total;

    if (!link_event(f) || !host || !*host)
        return 0;
    snprintf(win, sizeof win, "flap:%.120s", host);
    eng_win_add(e, s, win, f->kind, f->detail, f->scenario, f->sig_id);
    flap_key(key, sizeof key, host, f->detail);
    flap = strmap_get(eng_cs(e, s->cluster)->open_node, key);
    if (eng_fresh(e, flap)) {
        eng_touch(flap, s);
        return f->kind == FACT_NODE_FAULT; /* not net.ib_down again */
    }
    if (f->kind != FACT_RECOVERY || !pb_find(e->cat, "net.link_flap"))
        return 0;
    total = downtime(eng_win_find(e, s->cluster, win), f->detail,
                     e->now - FLAP_WINDOW, &downs);
    if (downs >= FLAP_DOWNS && total >= FLAP_DOWNTIME)
        open_flap(e, s, host, f, total, downs);
    return 0; /* the link-up resolves net.ib_down as well */
}

static const char *const flaps_scenarios[] = {"net.link_flap", NULL};

const eng_detector eng_det_flaps = {
    .name = "flaps",
    .scenarios = flaps_scenarios,
    .on_fact = flaps_on_fact,
};
