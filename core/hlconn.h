/* One connection of an HTTP listener (core/hlisten.c), from its accept to
 * its close, and its request deadline.
 *
 * The deadline runs from the accept, stops when a request has been read in
 * full, and starts again once it is answered; when it fires the connection
 * is failed as evhttp fails one that timed out. evhttp's own timeout
 * starts again with every byte, so a client trickling its head or body
 * kept a connection as long as it liked. */
#ifndef CS_HLCONN_H
#define CS_HLCONN_H

#include <stddef.h>

struct bufferevent;
struct event_base;
struct evhttp_request;

/* The listener's settings; they outlive its connections. */
typedef struct hlc_cfg {
    const char *name; /* the listener's, for the log */
    int deadline_s;
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
 * is answered. */
void hlc_request(hlc *c, struct evhttp_request *req);
/* Drops the reference; the socket closes with the last one. */
void hlc_free(hlc *c);

#endif
