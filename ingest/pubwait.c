#include "ingest/pubwait.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <event2/http.h>

#include "core/log.h"
#include "core/mem.h"
#include "core/topics.h"

/* Alertmanager gives a notification, its retries included, the longer of
 * group_interval and 10 s; Prometheus' remote_timeout is 30 s: a request
 * answered 503 after 5 s is retried well within either. */
#define PW_DEFAULT_ACK_TIMEOUT_S 5
/* After the last held answer of a drain, a loop turn or so for it to be
 * written before the process stops. */
#define PW_DRAIN_GRACE_MS 100

typedef struct pw_wait pw_wait;

struct pubwait {
    pw_hooks h;
    struct event_base *base;
    int ack_timeout_s;
    struct timeval ack_tv; /* a common timeout: one queue for all requests */
    pw_wait *waiting;
    unsigned long failing; /* requests answered 503 since the last success */
    int draining;
    struct event *drain_ev;
    void (*on_drained)(void *);
    void *drained_arg;
    pw_stat st;
};

struct pw_wait {
    pubwait *p;
    struct evhttp_request *req; /* answered once, its client still there
                                 * or not: evhttp frees it either way */
    kfk_tracker *trk;
    struct event *timer;
    size_t n;
    char *note;
    pw_wait *prev, *next;
};

/* ---- publishing ----------------------------------------------------------- */

void pw_msgs_free(pw_msg *m, size_t n)
{
    for (size_t i = 0; m && i < n; i++) {
        free(m[i].val);
        free(m[i].key);
    }
    free(m);
}

int pw_publish(kfk_producer *prod, pw_msg *m, size_t n, const char *what,
               kfk_tracker *t, cs_err *err)
{
    int rc = KFK_OK;

    for (size_t i = 0; i < n; i++)
        if (!kfk_fits(strlen(m[i].key), m[i].len)) {
            cs_err_set(err, "%s %zu of %zu makes a signal of %zu bytes, "
                       "over Kafka's %d-byte message limit", what, i + 1, n,
                       m[i].len, KFK_MESSAGE_MAX_BYTES);
            for (size_t j = 0; j < n; j++) {
                free(m[j].val);
                m[j].val = NULL;
            }
            return KFK_TOO_BIG;
        }
    for (size_t i = 0; i < n; i++) {
        if (rc == KFK_OK)
            rc = kfk_produce_take(prod, KFK_TOPIC_SIGNALS, m[i].key,
                                  strlen(m[i].key), m[i].val, m[i].len, t,
                                  err);
        else
            free(m[i].val);
        m[i].val = NULL; /* taken, or freed */
    }
    return rc;
}

/* ---- answers -------------------------------------------------------------- */

void pw_accepted(pubwait *p, struct evhttp_request *req, size_t n,
                 const char *note)
{
    if (p->failing) {
        log_info(p->h.name, "Kafka acknowledges requests again, after %lu "
                 "answered 503", p->failing);
        p->failing = 0;
    }
    p->st.accepted += n;
    p->h.accepted(req, n, note, p->h.arg);
}

static void unavailable_v(pubwait *p, struct evhttp_request *req,
                          const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

static void unavailable_v(pubwait *p, struct evhttp_request *req,
                          const char *fmt, va_list ap)
{
    char msg[300];

    vsnprintf(msg, sizeof msg, fmt, ap);
    if (p->failing++ % 1000 == 0)
        log_warn(p->h.name, "request answered 503: %s (%lu so far since "
                 "the last success)", msg, p->failing);
    p->st.unavailable++;
    evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After",
                      "1");
    p->h.unavailable(req, msg, p->h.arg);
}

void pw_unavailable(pubwait *p, struct evhttp_request *req, const char *fmt,
                    ...)
{
    va_list ap;

    va_start(ap, fmt);
    unavailable_v(p, req, fmt, ap);
    va_end(ap);
}

/* ---- waiting -------------------------------------------------------------- */

static void on_drain_grace(evutil_socket_t fd, short what, void *arg)
{
    pubwait *p = arg;
    void (*fn)(void *) = p->on_drained;

    (void)fd;
    (void)what;
    p->on_drained = NULL;
    if (fn)
        fn(p->drained_arg);
}

static void drain_check(pubwait *p)
{
    struct timeval grace = {0, PW_DRAIN_GRACE_MS * 1000};

    if (p->on_drained && !p->waiting)
        evtimer_add(p->drain_ev, &grace);
}

static void wait_end(pw_wait *a)
{
    pubwait *p = a->p;

    if (a->prev)
        a->prev->next = a->next;
    else
        p->waiting = a->next;
    if (a->next)
        a->next->prev = a->prev;
    p->st.waiting--;
    event_free(a->timer);
    kfk_tracker_release(a->trk); /* later reports no longer call us */
    free(a->note);
    free(a);
    drain_check(p);
}

/* The last of the request's signals was reported, delivered or not. */
static void on_acked(void *arg)
{
    pw_wait *a = arg;
    unsigned long failed = kfk_tracker_take_failed(a->trk);

    if (failed) {
        a->p->st.delivery_failed++;
        pw_unavailable(a->p, a->req, "Kafka refused %lu of the %s's %zu "
                       "%s (the kafka log says why); retry", failed,
                       a->p->h.request, a->n, a->p->h.what);
    } else {
        pw_accepted(a->p, a->req, a->n, a->note);
    }
    wait_end(a);
}

/* What is still in flight may yet be delivered: the retried request then
 * repeats those signals, which the correlator counts once. */
static void on_ack_timeout(evutil_socket_t fd, short what, void *arg)
{
    pw_wait *a = arg;

    (void)fd;
    (void)what;
    a->p->st.delivery_timeout++;
    pw_unavailable(a->p, a->req, "%lu of the %s's %zu %s not "
                   "acknowledged by Kafka within %d s; retry",
                   kfk_tracker_pending(a->trk), a->p->h.request, a->n,
                   a->p->h.what,
                   a->p->ack_timeout_s);
    wait_end(a);
}

static void hold(pubwait *p, struct evhttp_request *req, kfk_tracker *t,
                 size_t n, const char *note)
{
    pw_wait *a = xcalloc(1, sizeof *a);

    *a = (pw_wait){.p = p, .req = req, .trk = t, .n = n, .next = p->waiting,
                   .note = note ? xstrdup(note) : NULL};
    a->timer = cs_oom(evtimer_new(p->base, on_ack_timeout, a));
    evtimer_add(a->timer, &p->ack_tv);
    kfk_tracker_on_done(t, on_acked, a);
    if (p->waiting)
        p->waiting->prev = a;
    p->waiting = a;
    p->st.waiting++;
}

int pw_answer(pubwait *p, struct evhttp_request *req, int rc, size_t n,
              kfk_tracker *t, const char *note)
{
    if (rc == KFK_OK && kfk_tracker_pending(t)) {
        hold(p, req, t, n, note);
        return 0;
    }
    kfk_tracker_release(t); /* what was enqueued may still be delivered */
    if (rc == KFK_QUEUE_FULL) {
        p->st.delivery_failed++;
        pw_unavailable(p, req, "signal queue is full; retry later");
        return 0;
    }
    if (rc != KFK_OK)
        return rc;
    pw_accepted(p, req, n, note); /* nothing to wait for */
    return 0;
}

/* ---- lifecycle ------------------------------------------------------------ */

pubwait *pw_new(struct event_base *base, int ack_timeout_s,
                const pw_hooks *h)
{
    pubwait *p = xcalloc(1, sizeof *p);
    const struct timeval *common;

    p->h = *h;
    p->base = base;
    p->ack_timeout_s = ack_timeout_s > 0 ? ack_timeout_s
                                         : PW_DEFAULT_ACK_TIMEOUT_S;
    p->ack_tv = (struct timeval){p->ack_timeout_s, 0};
    /* every request waits as long: a queue in order instead of a heap
     * (NULL past libevent's 256 such durations on one loop) */
    if ((common = event_base_init_common_timeout(base, &p->ack_tv)))
        p->ack_tv = *common;
    p->drain_ev = cs_oom(evtimer_new(base, on_drain_grace, p));
    return p;
}

int pw_ack_timeout(const pubwait *p)
{
    return p->ack_timeout_s;
}

int pw_draining(const pubwait *p)
{
    return p->draining;
}

void pw_drain(pubwait *p, void (*done)(void *), void *arg)
{
    p->on_drained = done;
    p->drained_arg = arg;
    if (p->draining) { /* asked again: stop waiting */
        evtimer_del(p->drain_ev);
        on_drain_grace(-1, 0, p);
        return;
    }
    p->draining = 1;
    log_info(p->h.name, "stopping: %lu requests await Kafka's "
             "acknowledgement (%d s at most); new ones are answered 503",
             p->st.waiting, p->ack_timeout_s);
    drain_check(p);
}

void pw_get_stats(const pubwait *p, pw_stat *st)
{
    *st = p->st;
}

void pw_free(pubwait *p)
{
    if (!p)
        return;
    /* Requests still waiting (a second stop signal): 503, which goes out
     * only if the loop runs again; a hung-up client's request is freed by
     * it, the others with their connections. */
    while (p->waiting) {
        pw_unavailable(p, p->waiting->req, "%s stopped; retry", p->h.name);
        wait_end(p->waiting);
    }
    event_free(p->drain_ev);
    free(p);
}
