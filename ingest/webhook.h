/* Alertmanager webhook receiver: an evhttp server on the daemon's event
 * loop that turns every alert of an authenticated webhook (version 4) post
 * into one normalised signal on cascade.signals, keyed by cluster.
 *
 * Routes: POST /api/v1/alerts, / and /webhook take a webhook body
 * (200 {"accepted": N}; 400 malformed, 401 bad or missing bearer token,
 * 413 too large, 503 + Retry-After: retry it, see below);
 * GET /healthz answers "ok". The token is checked on the request's head:
 * a post without it, or any request with a body and without it, is
 * answered 401 before its body is read. A post is validated whole before
 * any of its alerts is published; one of more than max_alerts alerts, or
 * whose signals would take more than max_output, is refused with 413
 * before any signal is built. A signal's id is the hash of the post's
 * common fields, its alert and its time.
 *
 * 200 means Kafka has acknowledged every alert of the post (the producer
 * is idempotent, so acks=all): the answer waits for the last delivery
 * report. 503 means not all are known to be stored: the producer queue
 * was full, Kafka refused one for good, ack_timeout_s passed first, or
 * the webhook is stopping. Alerts of a 503'd post may still arrive; the
 * retried post repeats them under the same signal ids (at least once,
 * never lost). A client that hangs up while its post waits costs
 * nothing: its answer is dropped when it comes. */
#ifndef CS_WEBHOOK_H
#define CS_WEBHOOK_H

#include <stddef.h>

#include "core/err.h"
#include "core/metrics.h"
#include "core/kafka.h"
#include "core/signal.h"

struct event_base;

typedef struct wh_config {
    const char *listen_addr; /* default "127.0.0.1" */
    int port;                /* 0 = ephemeral; read back with wh_port() */
    const char *token;       /* required bearer token */
    size_t max_body;         /* default 1 MiB */
    size_t max_headers;      /* default 16 KiB */
    int max_connections;     /* default 256 */
    int timeout_s;           /* default 10: the longest silence */
    int request_timeout_s;   /* default 30: the longest a request may take
                              * to arrive, head and body */
    size_t max_alerts;       /* default 5000 alerts in one post */
    size_t max_output;       /* default 16 MiB: the most one post's signals
                              * may take, each alert with the post's common
                              * fields, as JSON */
    int ack_timeout_s;       /* default 5: the longest a post waits for
                              * Kafka's acknowledgement of its alerts
                              * before it is answered 503 */
} wh_config;

typedef struct webhook webhook;

/* Zero fields take the defaults above. Fails without a token. The
 * producer must outlive the webhook and be polled (kfk_producer_attach). */
webhook *wh_start(struct event_base *base, const wh_config *cfg,
                  kfk_producer *prod, cs_err *err);
int wh_port(const webhook *w);
/* Replaces the bearer token (config reload); the old one stops working at
 * once. Ignored when empty. */
void wh_set_token(webhook *w, const char *token);
typedef struct wh_stat {
    unsigned long accepted;    /* alerts published by successful posts */
    unsigned long rejected;    /* requests answered with an error by this
                                * module (evhttp's own 413 and 501 are not
                                * counted), the two below included */
    unsigned long over_alerts; /* posts refused: over max_alerts */
    unsigned long over_output; /* posts refused: over max_output */
    unsigned long over_message; /* posts refused: a signal over Kafka's
                                 * message limit */
    unsigned long delivery_failed;  /* posts answered 503: the producer
                                     * queue was full, or Kafka refused one
                                     * of their alerts for good */
    unsigned long delivery_timeout; /* posts answered 503: not all their
                                     * alerts acknowledged within
                                     * ack_timeout_s */
    unsigned long waiting; /* posts whose answer waits for Kafka now */
} wh_stat;

void wh_get_stats(const webhook *w, wh_stat *st);
/* The same counts as metric families, for /metrics (core/obsrv.h). */
void wh_metrics(const webhook *w, mx_out *o);
/* /readyz's check: 1 while its producer is connected to Kafka, else 0
 * with the reason in why. */
int wh_ready(const webhook *w, char *why, size_t len);
/* Stopping: posts that arrive from now on are answered 503, and
 * done(arg) is called once none waits for Kafka any more (ack_timeout_s
 * at most) and the last answers had a moment to be written; at once when
 * called a second time. */
void wh_drain(webhook *w, void (*done)(void *), void *arg);
/* The parser behind a post: a webhook body (JSON text, version 4) to one
 * signal per alert, all or nothing, without the server's limits. NULL
 * with the reason in err (which alert, which field); free the array with
 * wh_free_signals. */
sig *wh_signals(const char *body, size_t len, size_t *n, cs_err *err);
void wh_free_signals(sig *s, size_t n);
/* What the server publishes for the same body: each signal's msgpack, as
 * sig_to_msgpack writes wh_signals' (the bytes are the same, written
 * without the objects), keyed by its cluster. Free with pw_msgs_free. */
struct pw_msg;
struct pw_msg *wh_messages(const char *body, size_t len, size_t *n,
                           cs_err *err);
/* Closes the listener and all connections; posts still waiting are
 * answered 503, which reaches their clients only if the loop runs again
 * (otherwise they see the connection close: also retried). NULL is
 * fine. */
void wh_free(webhook *w);

#endif
