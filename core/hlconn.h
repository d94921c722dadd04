/* One connection of an HTTP listener (core/hlisten.c), from its accept to
 * its close: the request deadline, and each request's head held back from
 * evhttp until it is judged.
 *
 * The bytes a client sends go into the connection's bufferevent; a watch
 * on its input takes them out before evhttp reads them, until the head is
 * whole (core/hlhead.h). The head is then judged: two Content-Length
 * fields are refused with 400, header fields over max_headers with 431,
 * and on_headers may refuse it. An accepted head goes back to evhttp with
 * whatever followed it, and the connection passes bytes on until that
 * request is answered. A refused one is replaced by a request of the same
 * method and URI with no body and "Connection: close", which evhttp reads
 * at once and the listener answers as refused; what the client sends
 * after it is dropped unread. (libevent 2.1 has no hook between a server
 * request's head and its body: evhttp_request_set_header_cb needs the
 * request before the head is read, and evhttp makes it out of sight.)
 *
 * The deadline runs from the accept, stops when a request has been read in
 * full, and starts again once it is answered; when it fires the connection
 * is failed as evhttp fails one that timed out. */
#ifndef CS_HLCONN_H
#define CS_HLCONN_H

#include <stddef.h>
#include <sys/time.h>

#include "core/hlisten.h"

struct bufferevent;
struct event_base;
struct evhttp_request;

/* The listener's settings; they outlive its connections. */
typedef struct hlc_cfg {
    const char *name; /* the listener's, for the log */
    size_t max_headers;
    int deadline_s;
    int (*on_headers)(const hl_head *head, void *arg);
    void *arg;
} hlc_cfg;

typedef struct hlc hlc;

/* A connection on a new socket bufferevent, for evhttp to use. */
hlc *hlc_new(struct event_base *base, const hlc_cfg *cfg);
/* Its bufferevent, on which it holds one reference. */
struct bufferevent *hlc_bev(const hlc *c);
/* Whether evhttp has let the connection go (bufferevent_free cleared the
 * bufferevent's callbacks); it may be freed then. */
int hlc_released(const hlc *c);
/* A request of the connection read in full: the deadline stops until it
 * is answered. 0 to serve it, or the status its head was refused with
 * (*why: the listener's reason, NULL for on_headers's). */
int hlc_request(hlc *c, struct evhttp_request *req, const char **why);
/* Drops the reference; the socket closes with the last one. */
void hlc_free(hlc *c);

#endif
