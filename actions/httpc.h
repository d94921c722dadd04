/* An HTTP client on the event loop: libcurl's multi interface driven by
 * libevent (curl tells us which sockets to watch and when its timer is
 * due), so a slow Slack or API server never blocks the executor.
 *
 * TLS peers are always verified (name and chain) unless a request says
 * insecure, which only an operator's explicit config can set; ca_file
 * replaces the system store for one request (a cluster's own CA). */
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
size_t httpc_in_flight(const httpc *h);
/* Percent-encodes s for a URL path segment or query value (RFC 3986
 * unreserved characters stay), truncated to fit len. */
void httpc_escape(const char *s, char *out, size_t len);
/* Drops requests in flight without calling their fn. */
void httpc_free(httpc *h);

#endif
