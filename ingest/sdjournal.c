#include "ingest/sdjournal.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <systemd/sd-journal.h>

#include "core/hash.h"
#include "core/log.h"
#include "core/signal.h"
#include "core/str.h"
#include "ingest/fpos.h"
#include "ingest/linepub.h"
#include "ingest/logline.h"
#include "ingest/syslog.h"

#define SDJ_HEADER "cascade-journal 1"
/* Entries read before the loop serves anything else. */
#define SDJ_TURN 20000
#define SDJ_RETRY_MS 100
/* What inotify may miss (a journal on a network file system). */
#define SDJ_POLL_MS 1000

/* What one turn handed to the producer: acknowledged when t's last
 * message is; then every entry up to cursor is delivered. */
typedef struct sdj_mark {
    sdj_reader *r;
    kfk_tracker *t;
    char *cursor;
    int done;
    struct sdj_mark *next;
} sdj_mark;

struct sdj_reader {
    struct event_base *base;
    sdj_opts o;
    kfk_producer *p;
    sd_journal *j;
    ll_encoder *enc;
    char *line; /* SIG_MAX_BYTES + 1 */
    char *acked; /* the cursor of the last entry delivered, with all before */
    sdj_mark *marks, *marks_tail;
    int redo, dirty, stopping;
    struct event *fd_ev, *timer, *save_ev, *more_ev;
    sdj_stats st;
};

/* ---- the checkpoint ----------------------------------------------------- */

static int write_cursor(FILE *f, void *arg)
{
    return fprintf(f, "%s\n%s\n", SDJ_HEADER, (const char *)arg) < 0;
}

static int save(sdj_reader *r, cs_err *err)
{
    if (!r->o.checkpoint || !r->acked)
        return 0;
    if (fpos_replace(r->o.checkpoint, "checkpoint", write_cursor, r->acked,
                     err))
        return -1;
    r->dirty = 0;
    return 0;
}

/* The saved cursor, or NULL (none yet: *err untouched) ; -1 on a file
 * that is not one. */
static int load(sdj_reader *r, char **cursor, cs_err *err)
{
    char buf[4096], cur[4096];
    FILE *f = fopen(r->o.checkpoint, "r");

    *cursor = NULL;
    if (!f && errno == ENOENT)
        return 0;
    if (!f) {
        cs_err_set(err, "checkpoint %s: %s", r->o.checkpoint, strerror(errno));
        return -1;
    }
    if (!fgets(buf, sizeof buf, f) || strcmp(buf, SDJ_HEADER "\n") ||
        !fgets(cur, sizeof cur, f) || cur[0] == '\n' ||
        !strchr(cur, '\n')) {
        fclose(f);
        cs_err_set(err, "%s:1: not a journal checkpoint (expected '%s' and "
                   "a cursor)", r->o.checkpoint, SDJ_HEADER);
        return -1;
    }
    fclose(f);
    cur[strcspn(cur, "\n")] = '\0';
    *cursor = strdup(cur);
    return *cursor ? 0 : -1;
}

/* ---- delivery ----------------------------------------------------------- */

static void kick(sdj_reader *r, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

    if (!r->stopping && !evtimer_pending(r->more_ev, NULL))
        evtimer_add(r->more_ev, &tv);
}

/* To the entry after the checkpoint (the first when there is none). */
static int seek_acked(sdj_reader *r)
{
    int rc;

    if (!r->acked)
        return sd_journal_seek_head(r->j);
    if ((rc = sd_journal_seek_cursor(r->j, r->acked)) < 0)
        return rc;
    /* on the saved entry: the next read steps past it. If it was
     * vacuumed, the entry there is the first not seen: seeked to by its
     * cursor, so that the next read's step lands on it (a previous()
     * that cannot move would skip it) */
    if (sd_journal_next(r->j) > 0 && sd_journal_test_cursor(r->j, r->acked) <= 0) {
        char *here = NULL;
        r->st.lost_gaps++;
        log_warn("journal", "the checkpoint's entry is gone (vacuumed or "
                 "rotated away, or no longer matched): going on from the "
                 "next there is; what lay between is lost");
        if (sd_journal_get_cursor(r->j, &here) >= 0 &&
            sd_journal_previous(r->j) <= 0) {
            /* nothing before it: read from the head, which is it */
            sd_journal_seek_head(r->j);
        }
        free(here);
    }
    return 0;
}

static void settle(sdj_reader *r)
{
    sdj_mark *m;

    while ((m = r->marks) && m->done) {
        unsigned long failed = m->t ? kfk_tracker_take_failed(m->t) : 0;
        if (failed && !r->redo) {
            r->redo = 1;
            r->st.redeliveries++;
            log_warn("journal", "%lu signals were not delivered: reading "
                     "again from the checkpoint", failed);
        } else if (!failed && !r->redo && m->cursor) {
            free(r->acked);
            r->acked = m->cursor;
            m->cursor = NULL;
            r->dirty = 1;
        }
        r->marks = m->next;
        if (!r->marks)
            r->marks_tail = NULL;
        kfk_tracker_release(m->t);
        free(m->cursor);
        free(m);
    }
    if (!r->marks && r->redo) {
        r->redo = 0;
        if (seek_acked(r) < 0)
            log_error("journal", "cannot seek back to the checkpoint");
        kick(r, SDJ_RETRY_MS);
    }
}

static void mark_done(void *arg)
{
    sdj_mark *m = arg;

    m->done = 1;
    settle(m->r);
}

static void push_mark(sdj_reader *r, kfk_tracker *t, char *cursor)
{
    sdj_mark *m = calloc(1, sizeof *m);

    if (!m) {
        kfk_tracker_release(t);
        free(cursor);
        return;
    }
    *m = (sdj_mark){r, t, cursor, 0, NULL};
    if (r->marks_tail)
        r->marks_tail->next = m;
    else
        r->marks = m;
    r->marks_tail = m;
    if (!t || !kfk_tracker_pending(t)) {
        m->done = 1;
        settle(r);
    } else {
        kfk_tracker_on_done(t, mark_done, m);
    }
}

/* ---- entries ------------------------------------------------------------ */

/* A field's value (after "NAME=") into out, NUL-terminated; 0 when the
 * entry has none. */
static size_t field(sdj_reader *r, const char *name, char *out, size_t cap)
{
    const void *d;
    size_t len, n = strlen(name);

    if (sd_journal_get_data(r->j, name, &d, &len) < 0 || len <= n)
        return 0;
    len -= n + 1;
    if (len >= cap)
        len = cap - 1;
    memcpy(out, (const char *)d + n + 1, len);
    out[len] = '\0';
    return len ? len : 0;
}

/* The entry the journal is on: KFK_OK when taken, KFK_QUEUE_FULL to try
 * again, -1 on failure. */
static int one_entry(sdj_reader *r, const char *cursor, kfk_tracker **t,
                     cs_err *err)
{
    char host[256] = "", ident[128] = "", transport[32] = "";
    uint64_t usec = 0;
    size_t len;
    ll_origin from = {SRC_APP, host, NULL, -1, 0, 0};
    int rc;

    field(r, "_HOSTNAME", host, sizeof host);
    field(r, "_TRANSPORT", transport, sizeof transport);
    if (!field(r, "SYSLOG_IDENTIFIER", ident, sizeof ident))
        field(r, "_COMM", ident, sizeof ident);
    from.source = !strcmp(transport, "kernel") ? SRC_KERNEL
                                               : slg_source_of(ident);
    sd_journal_get_realtime_usec(r->j, &usec);
    from.ts = (int64_t)usec;
    from.place = hash_fnv1a(HASH_FNV_SEED, cursor, strlen(cursor));
    lp_outcome out = LP_BLANK;

    if ((len = field(r, "MESSAGE", r->line, SIG_MAX_BYTES + 1)) &&
        (rc = lp_line(r->enc, r->p, &from, r->line, len, cursor, 0, "journal",
                      t, &out, err)) != KFK_OK)
        return rc;
    r->st.published += out == LP_PUBLISHED;
    r->st.rejected += out == LP_REJECTED;
    r->st.dropped += out == LP_DROPPED;
    r->st.entries++;
    return KFK_OK;
}

/* Reads what the journal holds after where it is, up to SDJ_TURN
 * entries. */
static void read_turn(sdj_reader *r)
{
    kfk_tracker *t = NULL;
    char *last = NULL, *cursor;
    cs_err err = {{0}};
    int n = 0, rc = KFK_OK, got;

    if (r->redo || r->stopping)
        return;
    while (n < SDJ_TURN && (got = sd_journal_next(r->j)) > 0) {
        if (sd_journal_get_cursor(r->j, &cursor) < 0) {
            sd_journal_previous(r->j);
            rc = -1;
            cs_err_set(&err, "cannot read an entry's cursor");
            break;
        }
        if ((rc = one_entry(r, cursor, &t, &err)) != KFK_OK) {
            /* this entry again, later: seeking to its cursor makes the
             * next read's step land on it (previous() cannot move before
             * the first entry) */
            sd_journal_seek_cursor(r->j, cursor);
            free(cursor);
            break;
        }
        free(last);
        last = cursor;
        n++;
    }
    if (rc == KFK_QUEUE_FULL || n == SDJ_TURN)
        kick(r, rc == KFK_QUEUE_FULL ? SDJ_RETRY_MS : 0);
    else if (rc < 0) {
        log_error("journal", "%s", err.msg);
        kick(r, 1000);
    }
    if (last || t)
        push_mark(r, t, last);
}

static void on_journal(evutil_socket_t fd, short what, void *arg)
{
    sdj_reader *r = arg;

    (void)fd;
    (void)what;
    sd_journal_process(r->j); /* APPEND, INVALIDATE: new files are in */
    read_turn(r);
}

static void on_save(evutil_socket_t fd, short what, void *arg)
{
    sdj_reader *r = arg;
    cs_err err;

    (void)fd;
    (void)what;
    if (r->dirty && save(r, &err))
        log_error("journal", "%s", err.msg);
}

/* ---- the reader --------------------------------------------------------- */

static int open_journal(sdj_reader *r, cs_err *err)
{
    int rc;

    if (r->o.files)
        rc = sd_journal_open_files(&r->j, (const char **)r->o.files, 0);
    else if (r->o.directory)
        rc = sd_journal_open_directory(&r->j, r->o.directory, 0);
    else
        rc = sd_journal_open(&r->j, SD_JOURNAL_LOCAL_ONLY | SD_JOURNAL_SYSTEM);
    if (rc < 0) {
        cs_err_set(err, "cannot open the journal%s%s: %s",
                   r->o.directory ? " in " : "",
                   r->o.directory ? r->o.directory : "", strerror(-rc));
        return -1;
    }
    sd_journal_set_data_threshold(r->j, 0); /* whole fields, not 64 KiB */
    return 0;
}

/* kernel messages OR each unit's */
static int matches(sdj_reader *r, cs_err *err)
{
    char m[512];
    int any = 0;

    if (r->o.kernel) {
        if (sd_journal_add_match(r->j, "_TRANSPORT=kernel", 0) < 0)
            goto fail;
        any = 1;
    }
    for (const char *const *u = r->o.units; u && *u; u++) {
        if (any && sd_journal_add_disjunction(r->j) < 0)
            goto fail;
        snprintf(m, sizeof m, "_SYSTEMD_UNIT=%s%s", *u,
                 strchr(*u, '.') ? "" : ".service");
        if (sd_journal_add_match(r->j, m, 0) < 0)
            goto fail;
        any = 1;
    }
    if (!any) {
        cs_err_set(err, "nothing to read: neither kernel messages nor a unit");
        return -1;
    }
    return 0;
fail:
    cs_err_set(err, "cannot set the journal's matches");
    return -1;
}

static int start_at(sdj_reader *r, cs_err *err)
{
    char *cursor = NULL;

    if (r->o.checkpoint && load(r, &cursor, err))
        return -1;
    if (cursor) {
        r->acked = cursor;
        log_info("journal", "going on after %s", cursor);
        if (seek_acked(r) < 0) {
            cs_err_set(err, "cannot seek to the checkpoint's cursor");
            return -1;
        }
        return 0;
    }
    if (r->o.from_start)
        return sd_journal_seek_head(r->j) < 0 ? -1 : 0;
    /* from now: after the last entry there is, which is where a failed
     * delivery reads again from (never the journal's start); none yet:
     * from its head, where the first will be */
    if (sd_journal_seek_tail(r->j) < 0)
        return -1;
    if (sd_journal_previous(r->j) <= 0)
        return sd_journal_seek_head(r->j) < 0 ? -1 : 0;
    if (sd_journal_get_cursor(r->j, &r->acked) < 0)
        r->acked = NULL;
    return 0;
}

static int events(sdj_reader *r, cs_err *err)
{
    int fd = sd_journal_get_fd(r->j);
    struct timeval poll = {SDJ_POLL_MS / 1000, (SDJ_POLL_MS % 1000) * 1000};
    struct timeval save_tv = {r->o.checkpoint_ms / 1000,
                              (r->o.checkpoint_ms % 1000) * 1000};

    if (fd >= 0)
        r->fd_ev = event_new(r->base, fd, EV_READ | EV_PERSIST, on_journal, r);
    r->timer = event_new(r->base, -1, EV_PERSIST, on_journal, r);
    r->save_ev = event_new(r->base, -1, EV_PERSIST, on_save, r);
    r->more_ev = evtimer_new(r->base, on_journal, r);
    if ((fd >= 0 && (!r->fd_ev || event_add(r->fd_ev, NULL))) || !r->timer ||
        !r->save_ev || !r->more_ev || event_add(r->timer, &poll) ||
        event_add(r->save_ev, &save_tv)) {
        cs_err_set(err, "cannot set up the journal's events");
        return -1;
    }
    return 0;
}

sdj_reader *sdj_start(struct event_base *base, const sdj_opts *o,
                      kfk_producer *p, cs_err *err)
{
    sdj_reader *r = calloc(1, sizeof *r);
    ll_opts lo;

    if (!r) {
        cs_err_set(err, "out of memory");
        return NULL;
    }
    r->base = base;
    r->o = *o;
    r->p = p;
    if (r->o.checkpoint_ms <= 0)
        r->o.checkpoint_ms = 200;
    lo = (ll_opts){LL_PLAIN, o->cluster, 0, o->edge};
    if (!(r->enc = ll_new(&lo)) || !(r->line = malloc(SIG_MAX_BYTES + 1))) {
        cs_err_set(err, "out of memory");
        goto fail;
    }
    if (open_journal(r, err) || matches(r, err) || start_at(r, err) ||
        events(r, err))
        goto fail;
    read_turn(r);
    return r;
fail:
    if (!err->msg[0])
        cs_err_set(err, "cannot start reading the journal");
    sdj_free(r);
    return NULL;
}

void sdj_get_stats(const sdj_reader *r, sdj_stats *st)
{
    *st = r->st;
}

int sdj_stop(sdj_reader *r, int timeout_ms, cs_err *err)
{
    unsigned long pending = 0;
    int rc;

    r->stopping = 1;
    if (r->fd_ev)
        event_del(r->fd_ev);
    event_del(r->timer);
    event_del(r->save_ev);
    event_del(r->more_ev);
    kfk_producer_flush(r->p, timeout_ms);
    for (sdj_mark *m = r->marks; m; m = m->next)
        pending += m->t ? kfk_tracker_pending(m->t) : 0;
    rc = save(r, err);
    if (!rc && pending) {
        cs_err_set(err, "%lu signals still undelivered after %d ms: read "
                   "again at the next start", pending, timeout_ms);
        rc = -1;
    }
    return rc;
}

void sdj_free(sdj_reader *r)
{
    if (!r)
        return;
    while (r->marks) {
        sdj_mark *m = r->marks;
        r->marks = m->next;
        kfk_tracker_release(m->t); /* released, a tracker calls nobody */
        free(m->cursor);
        free(m);
    }
    if (r->fd_ev)
        event_free(r->fd_ev);
    if (r->timer)
        event_free(r->timer);
    if (r->save_ev)
        event_free(r->save_ev);
    if (r->more_ev)
        event_free(r->more_ev);
    if (r->j)
        sd_journal_close(r->j);
    ll_free(r->enc);
    free(r->line);
    free(r->acked);
    free(r);
}
