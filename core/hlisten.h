/* An HTTP listener on the process's event loop: the one way cascade's
 * servers (the Alertmanager webhook, the approvals API) take requests.
 * It binds one address and port, and holds every server to the same
 * limits: request body and header sizes, a read/write timeout, GET and
 * POST only, and at most max_connections open connections (accepting
 * pauses at the limit and resumes when one closes). An oversized body is
 * read to its end before evhttp answers 413, so the client sees the answer
 * rather than a reset. Every request goes to one callback, which answers
 * it (evhttp_send_reply) now or later on the same loop.
 *
 * A client has request_deadline_s for a whole request, head and body,
 * counted from the connection's accept or from the answer to its previous
 * request: trickling a byte at a time (which restarts timeout_s on every
 * byte) does not keep a connection past it. The clock stops while the
 * server works on a request it has read in full.
 *
 * A request's head is read before its body, and judged: two
 * Content-Length fields (RFC 9112 section 6.3) are refused with 400, header
 * fields over max_headers with 431, and on_headers may refuse it (a
 * missing credential: 401). A refused request's body is never read; the
 * connection closes after the answer. */
#ifndef CS_HLISTEN_H
#define CS_HLISTEN_H

#include <stddef.h>

#include "core/err.h"

struct event_base;
struct evhttp_request;
struct evkeyvalq;

/* A request's head, before any of its body is read. */
typedef struct hl_head {
    const char *method; /* as sent: "GET", "POST" */
    const char *uri;    /* as sent: path and query */
    const char *path;   /* the URI's path, not decoded; "" when none */
    const struct evkeyvalq *headers; /* evhttp_find_header reads them */
    int has_body;       /* a Content-Length over 0, or Transfer-Encoding */
} hl_head;

typedef struct hl_opts {
    const char *name;        /* "webhook": begins its errors, tags its log */
    const char *listen_addr; /* default "127.0.0.1"; IPv4 or IPv6 */
    int port;                /* 0 = any free port; read back with hl_port() */
    size_t max_body;         /* default 1 MiB */
    size_t max_headers;      /* default 16 KiB: the header fields, line
                              * ends included (the request line apart) */
    int max_connections;     /* default 256 */
    int timeout_s;           /* default 10: the longest silence */
    int request_deadline_s;  /* default 30: the longest a request may take
                              * to arrive, head and body */
    void (*on_request)(struct evhttp_request *req, void *arg);
    /* Optional: 0 reads the body and hands the request to on_request; an
     * HTTP status (401) refuses it unread. */
    int (*on_headers)(const hl_head *head, void *arg);
    /* Answers a request refused at its head: code is what on_headers
     * returned (why NULL), or 400 or 431 from the listener itself (why
     * says what was wrong). req has the method and URI, no header fields
     * and no body. NULL: evhttp's plain error page. */
    void (*on_refused)(struct evhttp_request *req, int code, const char *why,
                       void *arg);
    void *arg;
} hl_opts;

typedef struct hlisten hlisten;

/* Zero fields take the defaults above. Listening from the return on; NULL
 * with "NAME cannot listen on ADDR:PORT: why" (or the port out of range)
 * in err. */
hlisten *hl_start(struct event_base *base, const hl_opts *o, cs_err *err);
/* The port actually bound (the one the system chose for port 0); -1 if
 * the socket cannot say. */
int hl_port(const hlisten *h);
/* The request's URI as a log line may show it: the path, and
 * "?<redacted>" for a query, which may hold a credential (?token=...).
 * Written into buf (truncated to len), which is returned. */
const char *hl_log_uri(const struct evhttp_request *req, char *buf,
                       size_t len);
/* Whether headers carry "Authorization: Bearer TOKEN" with token (its
 * len bytes), compared in constant time. */
int hl_bearer_ok(const struct evkeyvalq *headers, const char *token,
                 size_t len);
/* Closes the listener and every connection; a request not answered yet
 * is dropped with its connection. NULL is fine. */
void hl_free(hlisten *h);

#endif
