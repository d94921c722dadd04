#include "core/hlconn.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>

#include "core/log.h"
#include "core/mem.h"

struct hlc {
    const hlc_cfg *cfg;
    struct bufferevent *bev; /* one reference of ours */
    struct event *deadline;
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

/* The answer is written: the connection's next request starts. */
static void on_answered(struct evhttp_request *req, void *arg)
{
    (void)req;
    arm(arg);
}

/* ---- lifecycle ---------------------------------------------------------- */

hlc *hlc_new(struct event_base *base, const hlc_cfg *cfg)
{
    hlc *c = xcalloc(1, sizeof *c);

    c->cfg = cfg;
    c->deadline = evtimer_new(base, on_deadline, c);
    if (!c->deadline ||
        !(c->bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE)))
        goto fail;
    bufferevent_incref(c->bev);
    arm(c);
    return c;
fail:
    if (c->deadline)
        event_free(c->deadline);
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

void hlc_request(hlc *c, struct evhttp_request *req)
{
    evtimer_del(c->deadline);
    evhttp_request_set_on_complete_cb(req, on_answered, c);
}

void hlc_free(hlc *c)
{
    bufferevent_decref(c->bev); /* closes the socket when it is the last */
    event_free(c->deadline);
    free(c);
}
