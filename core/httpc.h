/* An HTTP client on the event loop: libcurl's multi interface driven by
 * libevent (curl tells us which sockets to watch and when its timer is
 * due), so a slow Slack or API server never blocks the executor.
 *
 * TLS peers are always verified (name and chain) unless a request says
 * insecure, which only an operator's explicit config can set; ca_file
 * (or ca_pem) replaces the system store for one request (a cluster's own
 * CA).
 *
 * Two kinds of request: httpc_send keeps the answer (1 MiB at most) and
 * calls back once; httpc_stream hands the body over as it arrives (a
 * Kubernetes watch: one answer that lasts minutes) and calls back at its
 * end. */
#ifndef CS_HTTPC_H
#define CS_HTTPC_H

#include <stddef.h>

#include "core/err.h"

struct event_base;

typedef struct httpc httpc;

typedef struct httpc_req {
    const char *method;       /* GET, POST, PUT, PATCH, DELETE */
    const char *url;
    const char *content_type; /* with body; NULL sends none */
    const char *body;
    const char *bearer;       /* Authorization: Bearer, or NULL */
    const char *basic;        /* "user:password" for Basic, or NULL */
    const char *ca_file;      /* NULL: the system's trust store */
    const char *unix_socket;  /* talk HTTP over this socket, or NULL */
    const char *const *headers; /* more "Name: value" lines, NULL-ended */
    const char *ca_pem;       /* the CA as PEM text (kubeconfig -data) */
    const char *cert_file, *key_file; /* a client certificate, or NULL */
    const char *cert_pem, *key_pem;   /* the same as PEM text, or NULL */
    const char *user_agent;   /* NULL: "cascade/1" */
    int insecure;             /* skip peer verification (never default) */
    long timeout_ms;          /* whole request; 0 = 30 s */
} httpc_req;

/* A 429 (the server did not take the request) is sent again after its
 * Retry-After (at most 30 s; else 1, 2, 4 s), three times at most; fn
 * sees the last answer.
 *
 * status: the HTTP status, or 0 when no answer came (error says why:
 * connect, TLS verification, timeout). body is the answer's body, NUL
 * terminated, at most 1 MiB kept. */
typedef void (*httpc_fn)(void *arg, long status, const char *body,
                         size_t len, const char *error);

httpc *httpc_new(struct event_base *base, cs_err *err);
/* Every string in r is copied; fn is called once, from the loop, never
 * from inside httpc_send. -1 (err set) when the request cannot start. */
int httpc_send(httpc *h, const httpc_req *r, httpc_fn fn, void *arg,
               cs_err *err);
/* A streamed request. data gets the body piece by piece, with the
 * answer's status (known before any of its body); returning -1 aborts
 * the transfer (done then says so). done is called once, at the end:
 * status 0 and error when no whole answer came (connect, TLS, timeout,
 * the server closed mid-body, aborted). No 429 retry: the caller owns
 * its schedule. TCP keepalive is on, so a dead peer shows before
 * timeout_ms. */
typedef int (*httpc_data_fn)(void *arg, long status, const char *p, size_t n);
typedef void (*httpc_done_fn)(void *arg, long status, const char *error);
typedef struct xfer httpc_xfer;

httpc_xfer *httpc_stream(httpc *h, const httpc_req *r, httpc_data_fn data,
                         httpc_done_fn done, void *arg, cs_err *err);
/* Ends x without calling its done; never from inside x's own callbacks. */
void httpc_cancel(httpc_xfer *x);
size_t httpc_in_flight(const httpc *h);
/* Percent-encodes s for a URL path segment or query value (RFC 3986
 * unreserved characters stay), truncated to fit len. */
void httpc_escape(const char *s, char *out, size_t len);
/* Drops requests in flight without calling their fn. */
void httpc_free(httpc *h);

#endif
