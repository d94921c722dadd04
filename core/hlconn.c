#include "core/hlconn.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>

#include "core/hlhead.h"
#include "core/log.h"
#include "core/mem.h"

typedef enum {
    HLC_HEAD,   /* a head is arriving: held back from evhttp */
    HLC_PASS,   /* accepted: evhttp reads the request */
    HLC_REFUSED /* evhttp reads the stand-in; the rest is dropped */
} hlc_state;

struct hlc {
    const hlc_cfg *cfg;
    struct bufferevent *bev;         /* one reference of ours */
    struct evbuffer_cb_entry *watch; /* on the bufferevent's input */
    struct event *deadline;
    struct evbuffer *head;           /* held back while it arrives */
    size_t scan, line;               /* hlh_end's place; the request line */
    hlc_state state;
    int code;
    const char *why;
    int moving; /* the input changes by our own hand: no client bytes */
};

/* ---- the deadline ------------------------------------------------------- */

static void arm(hlc *c)
{
    struct timeval tv = {c->cfg->deadline_s, 0};

    evtimer_add(c->deadline, &tv);
}

static void peer(const hlc *c, char *buf, size_t len)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    evutil_socket_t fd = bufferevent_getfd(c->bev);
    char addr[INET6_ADDRSTRLEN] = "?";
    int port = 0;

    if (fd >= 0 && !getpeername(fd, (struct sockaddr *)&ss, &sl)) {
        if (ss.ss_family == AF_INET) {
            struct sockaddr_in *in = (struct sockaddr_in *)&ss;
            inet_ntop(AF_INET, &in->sin_addr, addr, sizeof addr);
            port = ntohs(in->sin_port);
        } else if (ss.ss_family == AF_INET6) {
            struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
            inet_ntop(AF_INET6, &in6->sin6_addr, addr, sizeof addr);
            port = ntohs(in6->sin6_port);
        }
    }
    snprintf(buf, len, "%s:%d", addr, port);
}

/* The connection is failed as evhttp fails one whose read timed out: a
 * request being read is dropped with it. Only a connection that owes the
 * server a request has its deadline running, so no answer is lost. */
static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    hlc *c = arg;
    char who[64];

    (void)fd;
    (void)what;
    if (hlc_released(c))
        return;
    peer(c, who, sizeof who);
    log_warn(c->cfg->name, "%s: no whole request within %d s: closing", who,
             c->cfg->deadline_s);
    bufferevent_trigger_event(c->bev, BEV_EVENT_READING | BEV_EVENT_TIMEOUT,
                              0);
}

/* ---- the head ----------------------------------------------------------- */

/* Hands what is held to evhttp, ahead of anything it has not read. */
static void release(hlc *c)
{
    c->moving = 1;
    evbuffer_prepend_buffer(bufferevent_get_input(c->bev), c->head);
    c->moving = 0;
    c->scan = c->line = 0;
}

static void pass(hlc *c)
{
    c->state = HLC_PASS;
    release(c);
}

/* evhttp reads a stand-in for the request: its method and URI, no body,
 * and the connection to close after the answer. */
static void refuse(hlc *c, const hlh *h, int code, const char *why)
{
    c->state = HLC_REFUSED;
    c->code = code;
    c->why = why;
    evbuffer_drain(c->head, evbuffer_get_length(c->head));
    evbuffer_add_printf(c->head,
                        "%s %s %s\r\nContent-Length: 0\r\n"
                        "Connection: close\r\n\r\n",
                        h->head.method, h->head.uri, h->version);
    release(c);
}

/* Header fields over the limit: refused on the request line alone. One
 * that cannot be read goes to evhttp, which refuses it too. */
static void refuse_long(hlc *c)
{
    const char *why = NULL;
    hlh h;

    if (hlh_read(&h, c->head, c->line, &why))
        pass(c);
    else
        refuse(c, &h, 431, "header fields too large");
    hlh_free(&h);
}

static void judge_head(hlc *c, size_t end)
{
    const char *why = NULL;
    int rc, code = 0;
    hlh h;

    rc = hlh_read(&h, c->head, end, &why);
    if (rc == -1) {
        pass(c); /* evhttp refuses what it cannot read, with 400 */
    } else if (rc == -2) {
        refuse(c, &h, 400, why);
    } else if (h.lengths > 1) {
        refuse(c, &h, 400, "two Content-Length fields");
    } else if (c->cfg->on_headers &&
               (code = c->cfg->on_headers(&h.head, c->cfg->arg))) {
        refuse(c, &h, code, NULL);
    } else {
        pass(c);
    }
    hlh_free(&h);
}

/* Judges the head once it is whole, or refuses it once it is too long. A
 * request line that does not end within max_headers goes to evhttp, which
 * refuses it with 400 on its own. */
static void judge(hlc *c)
{
    size_t len = evbuffer_get_length(c->head);
    size_t end = hlh_end(c->head, &c->scan, &c->line);

    if (!c->line) {
        if (len > c->cfg->max_headers)
            pass(c);
    } else if ((end ? end : len) - c->line > c->cfg->max_headers) {
        refuse_long(c);
    } else if (end) {
        judge_head(c, end);
    }
}

/* Bytes a refused request's client sent after its head: dropped, those of
 * the stand-in that evhttp has not read yet kept. */
static void drop_added(struct evbuffer *in, size_t added)
{
    struct evbuffer *keep = evbuffer_new();

    if (keep)
        evbuffer_remove_buffer(in, keep, evbuffer_get_length(in) - added);
    evbuffer_drain(in, evbuffer_get_length(in));
    if (keep) {
        evbuffer_prepend_buffer(in, keep);
        evbuffer_free(keep);
    }
}

/* Runs as the bytes arrive, before evhttp's read callback sees them. */
static void on_input(struct evbuffer *in, const struct evbuffer_cb_info *info,
                     void *arg)
{
    hlc *c = arg;

    if (!info->n_added || c->moving || c->state == HLC_PASS)
        return;
    c->moving = 1;
    if (c->state == HLC_REFUSED)
        drop_added(in, info->n_added);
    else
        evbuffer_add_buffer(c->head, in);
    c->moving = 0;
    if (c->state == HLC_HEAD)
        judge(c);
}

/* The answer is written: the connection's next request starts, and any
 * of it already read is judged. */
static void on_answered(struct evhttp_request *req, void *arg)
{
    hlc *c = arg;

    (void)req;
    if (c->state == HLC_REFUSED)
        return; /* it closes */
    c->state = HLC_HEAD;
    arm(c);
    c->moving = 1;
    evbuffer_add_buffer(c->head, bufferevent_get_input(c->bev));
    c->moving = 0;
    judge(c);
}

/* ---- lifecycle ---------------------------------------------------------- */

hlc *hlc_new(struct event_base *base, const hlc_cfg *cfg)
{
    hlc *c = xcalloc(1, sizeof *c);

    c->cfg = cfg;
    c->head = evbuffer_new();
    c->deadline = evtimer_new(base, on_deadline, c);
    if (!c->head || !c->deadline ||
        !(c->bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE)))
        goto fail;
    c->watch = evbuffer_add_cb(bufferevent_get_input(c->bev), on_input, c);
    if (!c->watch) {
        bufferevent_free(c->bev);
        goto fail;
    }
    bufferevent_incref(c->bev);
    arm(c);
    return c;
fail:
    if (c->deadline)
        event_free(c->deadline);
    if (c->head)
        evbuffer_free(c->head);
    free(c);
    return NULL;
}

struct bufferevent *hlc_bev(const hlc *c)
{
    return c->bev;
}

int hlc_released(const hlc *c)
{
    bufferevent_data_cb rd, wr;
    bufferevent_event_cb ev;

    bufferevent_getcb(c->bev, &rd, &wr, &ev, NULL);
    return !rd && !wr && !ev;
}

int hlc_request(hlc *c, struct evhttp_request *req, const char **why)
{
    evtimer_del(c->deadline);
    evhttp_request_set_on_complete_cb(req, on_answered, c);
    *why = c->why;
    return c->state == HLC_REFUSED ? c->code : 0;
}

void hlc_free(hlc *c)
{
    evbuffer_remove_cb_entry(bufferevent_get_input(c->bev), c->watch);
    bufferevent_decref(c->bev); /* closes the socket when it is the last */
    event_free(c->deadline);
    evbuffer_free(c->head);
    free(c);
}
