#include "correlate/replay.h"

#include <errno.h>
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "core/ts.h"
#include "core/redisproc.h"
#include "core/signal.h"
#include "engine/engine.h"
#include "correlate/store.h"
#include "rules/playbooks.h"

/* One input file with one parsed signal of look-ahead, for the merge. */
typedef struct source {
    const char *path;
    FILE *f;
    char *buf;
    size_t cap;
    long lineno;
    sig cur;
    int has;
} source;

typedef struct run {
    source *src;
    int nsrc;
    engine *eng;
    store *st;
    struct event *next;
    const replay_opts *o;
    long rejected, fed;
    int failed, finishing;
} run;

/* Advances a source to its next valid signal; bad lines are reported with
 * their line number and skipped (the run goes on, the exit code says). */
static void advance(run *r, source *s)
{
    ssize_t n;
    cs_err err;

    s->has = 0;
    while (s->f && (n = getline(&s->buf, &s->cap, s->f)) >= 0) {
        s->lineno++;
        while (n > 0 && (s->buf[n - 1] == '\n' || s->buf[n - 1] == '\r'))
            s->buf[--n] = '\0';
        if (n == 0 || strspn(s->buf, " \t") == (size_t)n)
            continue;
        if (sig_parse_json(&s->cur, s->buf, (size_t)n, &err) == 0) {
            s->has = 1;
            return;
        }
        fprintf(stderr, "%s:%ld: %s\n", s->path, s->lineno, err.msg);
        r->rejected++;
    }
    if (s->f && ferror(s->f)) {
        fprintf(stderr, "%s: read error: %s\n", s->path, strerror(errno));
        r->failed = 1;
    }
}

/* Earliest event time first; ties keep file order, so runs are stable. */
static source *pick(run *r)
{
    source *best = NULL;

    for (int i = 0; i < r->nsrc; i++)
        if (r->src[i].has && (!best || r->src[i].cur.ts < best->cur.ts))
            best = &r->src[i];
    return best;
}

static void on_acked(void *arg)
{
    run *r = arg;

    if (r->finishing) {
        event_base_loopbreak(event_get_base(r->next));
        return;
    }
    event_active(r->next, 0, 0); /* no recursion: the loop calls us back */
}

static void next_batch(evutil_socket_t fd, short what, void *arg)
{
    run *r = arg;
    size_t n = 0;
    source *s;

    (void)fd;
    (void)what;
    while (n < r->o->batch && (s = pick(r))) {
        if (eng_feed(r->eng, &s->cur) < 0) {
            char why[256];
            eng_refusal_reason(r->eng, &s->cur, why, sizeof why);
            fprintf(stderr, "%s:%ld: %s\n", s->path, s->lineno, why);
            r->rejected++;
        }
        sig_free(&s->cur);
        advance(r, s);
        n++;
        r->fed++;
    }
    if (n == 0) {
        r->finishing = 1;
        eng_drain(r->eng);
        eng_flush(r->eng, NULL, NULL); /* incidents into Redis too */
    }
    store_flush(r->st, on_acked, r);
}

static int open_sources(run *r, char **files, int nfiles)
{
    r->src = calloc((size_t)nfiles, sizeof *r->src);
    r->nsrc = nfiles;
    if (!r->src)
        return -1;
    for (int i = 0; i < nfiles; i++) {
        source *s = &r->src[i];
        s->path = files[i];
        s->f = strcmp(files[i], "-") == 0 ? stdin : fopen(files[i], "r");
        if (!s->f) {
            fprintf(stderr, "%s: %s\n", files[i], strerror(errno));
            return -1;
        }
        advance(r, s);
    }
    return 0;
}

static void close_sources(run *r)
{
    for (int i = 0; r->src && i < r->nsrc; i++) {
        source *s = &r->src[i];
        if (s->has)
            sig_free(&s->cur);
        if (s->f && s->f != stdin)
            fclose(s->f);
        free(s->buf);
    }
    free(r->src);
}

static int print_incidents(run *r)
{
    json_t *all = eng_incidents(r->eng), *inc;
    size_t i;

    json_array_foreach(all, i, inc) {
        char *txt = json_dumps(inc, JSON_COMPACT);
        fprintf(r->o->out, "%s\n", txt);
        free(txt);
    }
    json_decref(all);
    return fflush(r->o->out) == 0 ? 0 : -1;
}

int replay_run(char **files, int nfiles, const replay_opts *o)
{
    run r = {.o = o};
    rproc *rp = NULL;
    struct event_base *base = NULL;
    char prefix[64] = "";
    const rtarget *target = o->redis;
    rtarget private;
    cs_err err = {{0}};
    int rc = 2;
    struct pb_catalog *rules = o->rules; /* ours until the engine takes it */

    if (!target) {
        if (!(rp = rproc_start(&err))) {
            fprintf(stderr, "cascade replay: %s\n", err.msg);
            pb_catalog_free(rules);
            return 2;
        }
        rproc_target(rp, &private);
        target = &private;
    } else {
        /* A shared Redis: keep this run's keys apart from live state. */
        snprintf(prefix, sizeof prefix, "replay:%d:", (int)getpid());
    }
    base = event_base_new();
    if (!base || !(r.st = store_new(base, target, prefix, &err)) ||
        !(r.eng = eng_new(store_ops(), r.st, &err)))
        goto out;
    /* A file of the past: nothing in it can be later than now. */
    eng_set_wall(r.eng, o->now ? o->now : ts_now());
    if (rules) {
        struct pb_catalog *cat = rules;
        rules = NULL; /* eng_set_catalog takes it, also on error */
        if (eng_set_catalog(r.eng, cat, &err))
            goto out;
    }
    if (open_sources(&r, files, nfiles))
        goto out;
    r.next = event_new(base, -1, 0, next_batch, &r);
    event_active(r.next, 0, 0);
    event_base_dispatch(base);
    if (r.failed || print_incidents(&r))
        goto out;
    log_debug("replay", "%ld signals, %ld rejected, %lu redis commands (%lu hash writes)",
              r.fed, r.rejected, store_commands_sent(r.st), store_hash_writes(r.st));
    rc = r.rejected ? 1 : 0;
out:
    if (rc == 2 && err.msg[0] && !r.failed)
        fprintf(stderr, "cascade replay: %s\n", err.msg);
    close_sources(&r);
    if (r.next)
        event_free(r.next);
    store_free(r.st);
    eng_free(r.eng);
    if (base)
        event_base_free(base);
    rproc_stop(rp);
    pb_catalog_free(rules);
    return rc;
}
