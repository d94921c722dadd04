/* Answers held for Kafka: how cascade's receivers (the Alertmanager
 * webhook, the remote-write receiver) tell a sender "stored" only once it
 * is. A request's signals are published with one tracker of their own;
 * its answer waits for the last delivery report (the producer is
 * idempotent, so acks=all: a report means every in-sync replica has the
 * message), or is 503 after ack_timeout_s. A 503 says "retry": the
 * retried request repeats the same signal ids, which the correlator counts
 * once (at least once, never lost). During an outage every request gets
 * one; the first is logged with its reason, then one in a thousand, and
 * the first success after them says how many there were. Prefix pw_. */
#ifndef CS_PUBWAIT_H
#define CS_PUBWAIT_H

#include <stddef.h>

#include "core/err.h"
#include "core/kafka.h"

struct event_base;
struct evhttp_request;

/* One signal as its Kafka message: msgpack value and key (the cluster). */
typedef struct pw_msg {
    char *val, *key;
    size_t len;
} pw_msg;

void pw_msgs_free(pw_msg *m, size_t n);
/* Publishes m[0..n) to the signals topic under t. A message over Kafka's
 * limit refuses them all before any goes (KFK_TOO_BIG, err names which of
 * the n `what`); else KFK_OK, or KFK_QUEUE_FULL or -1 at the first that
 * could not be enqueued (those before it stay published). The values are
 * taken (set to NULL) either way. */
int pw_publish(kfk_producer *prod, pw_msg *m, size_t n, const char *what,
               kfk_tracker *t, cs_err *err);

typedef struct pw_hooks {
    const char *name; /* the log tag: "webhook" */
    const char *request; /* what a request is called: "post" */
    const char *what;    /* what n counts, plural: "alerts" */
    /* Writes the success answer of a request of n signals; note is what
     * the request was held with (pw_answer), NULL when none. */
    void (*accepted)(struct evhttp_request *req, size_t n, const char *note,
                     void *arg);
    /* Writes the 503 answer, msg its reason (Retry-After is set). */
    void (*unavailable)(struct evhttp_request *req, const char *msg,
                        void *arg);
    void *arg;
} pw_hooks;

typedef struct pw_stat {
    unsigned long accepted;         /* signals of requests answered OK */
    unsigned long unavailable;      /* requests answered 503, all reasons */
    unsigned long delivery_failed;  /* ... the queue was full, or Kafka
                                     * refused one of their signals */
    unsigned long delivery_timeout; /* ... not all acknowledged within
                                     * ack_timeout_s */
    unsigned long waiting;          /* requests waiting for Kafka now */
} pw_stat;

typedef struct pubwait pubwait;

/* ack_timeout_s 0: 5 s. The hooks are copied. */
pubwait *pw_new(struct event_base *base, int ack_timeout_s,
                const pw_hooks *h);
int pw_ack_timeout(const pubwait *p);
/* The answer after pw_publish returned rc for req's n signals under t
 * (taken): held for the acknowledgements, or answered now (nothing to
 * wait for: success; queue full: 503). note (copied; NULL: none) goes to
 * the accepted hook. Returns 0 when req is answered or held; rc
 * (KFK_TOO_BIG, -1) for the caller to answer. */
int pw_answer(pubwait *p, struct evhttp_request *req, int rc, size_t n,
              kfk_tracker *t, const char *note);
void pw_accepted(pubwait *p, struct evhttp_request *req, size_t n,
                 const char *note);
void pw_unavailable(pubwait *p, struct evhttp_request *req, const char *fmt,
                    ...) __attribute__((format(printf, 3, 4)));
/* Stopping: 1 once pw_drain was called; the receiver answers new
 * requests 503. done(arg) is called once none waits (ack_timeout_s at
 * most) and the last answers had a moment to be written; at once when
 * called a second time. */
int pw_draining(const pubwait *p);
void pw_drain(pubwait *p, void (*done)(void *), void *arg);
void pw_get_stats(const pubwait *p, pw_stat *st);
/* Requests still waiting are answered 503 (sent only if the loop runs
 * again). NULL is fine. */
void pw_free(pubwait *p);

#endif
