#include "core/hlisten.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <event2/util.h>

#include "core/hlconn.h"
#include "core/log.h"
#include "core/str.h"
#include "core/mem.h"

#define HL_DEFAULT_ADDR "127.0.0.1"
#define HL_DEFAULT_MAX_BODY (1024 * 1024)
#define HL_DEFAULT_MAX_HEADERS (16 * 1024)
#define HL_DEFAULT_MAX_CONNECTIONS 256
#define HL_DEFAULT_TIMEOUT_S 10
/* Three times the silence a connection may keep: a client that sends
 * anything at all gets a little more than a silent one, and a whole
 * 1 MiB post needs only about 35 KB/s. */
#define HL_DEFAULT_DEADLINE_S 30

#define HL_REAP_MS 200

/* Counts open connections and pauses accepting at the limit. libevent
 * 2.1 tells nobody when evhttp drops a connection, so the gate keeps a
 * reference on each connection's bufferevent (core/hlconn.h) and notices
 * the drop by the callbacks bufferevent_free() clears. (A filter
 * bufferevent with a free callback would say so directly, but evhttp then
 * frees a connection while its last response still sits in the socket
 * bufferevent: 413 answers and "Connection: close" replies were lost that
 * way.) */
typedef struct hl_gate {
    hlc **conns;
    int active, max, paused;
    struct evconnlistener *lst;
    struct event *reap;
    const hlc_cfg *cfg; /* each connection's */
} hl_gate;

struct hlisten {
    struct evhttp *http;
    struct evhttp_bound_socket *bound;
    char *name;
    hl_gate gate;
    hlc_cfg conn;
    void (*on_request)(struct evhttp_request *req, void *arg);
    void (*on_refused)(struct evhttp_request *req, int code, const char *why,
                       void *arg);
    void *arg;
};

/* ---- connection limit --------------------------------------------------- */

static void gate_reap(hl_gate *g)
{
    int i = 0;

    while (i < g->active) {
        if (hlc_released(g->conns[i])) {
            hlc_free(g->conns[i]); /* closes the socket */
            g->conns[i] = g->conns[--g->active];
        } else {
            i++;
        }
    }
    if (g->paused && g->active < g->max && g->lst) {
        evconnlistener_enable(g->lst);
        g->paused = 0;
    }
}

static void gate_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    gate_reap(arg);
}

/* evhttp asks for a bufferevent per accepted connection. */
static struct bufferevent *gate_bev(struct event_base *base, void *arg)
{
    hl_gate *g = arg;
    hlc *c;

    gate_reap(g);
    /* Only when accepting could not pause: evhttp then makes its own,
     * with neither deadline nor judged heads. evconnlistener looks at
     * whether it is enabled after each accept, so this does not happen. */
    if (g->active >= g->max || !(c = hlc_new(base, g->cfg)))
        return NULL;
    g->conns[g->active++] = c;
    if (g->active >= g->max && g->lst) {
        evconnlistener_disable(g->lst);
        g->paused = 1;
        log_warn(g->cfg->name, "%d connections open: pausing accept",
                 g->active);
    }
    return hlc_bev(c);
}

static hlc *gate_find(const hl_gate *g, struct evhttp_request *req)
{
    struct evhttp_connection *con = evhttp_request_get_connection(req);
    struct bufferevent *bev = con ? evhttp_connection_get_bufferevent(con)
                                  : NULL;

    for (int i = 0; bev && i < g->active; i++)
        if (hlc_bev(g->conns[i]) == bev)
            return g->conns[i];
    return NULL;
}

static int gate_init(hl_gate *g, struct event_base *base, int max,
                     const hlc_cfg *cfg)
{
    struct timeval tv = {0, HL_REAP_MS * 1000};

    g->max = max;
    g->cfg = cfg;
    g->conns = xcalloc((size_t)max, sizeof *g->conns);
    g->reap = event_new(base, -1, EV_PERSIST, gate_tick, g);
    return g->reap && event_add(g->reap, &tv) == 0 ? 0 : -1;
}

/* After evhttp_free: every connection is released by then. */
static void gate_free(hl_gate *g)
{
    if (g->reap)
        event_free(g->reap);
    for (int i = 0; i < g->active; i++)
        hlc_free(g->conns[i]);
    free(g->conns);
}

/* ---- requests ----------------------------------------------------------- */

/* evhttp's one callback: a request read in full, or the stand-in of one
 * refused at its head. */
static void hl_request(struct evhttp_request *req, void *arg)
{
    hlisten *h = arg;
    hlc *c = gate_find(&h->gate, req);
    const char *why = NULL;
    int code = c ? hlc_request(c, req, &why) : 0;

    if (!code)
        h->on_request(req, h->arg);
    else if (h->on_refused)
        h->on_refused(req, code, why, h->arg);
    else
        evhttp_send_error(req, code, why);
}

/* ---- lifecycle ---------------------------------------------------------- */

static void apply_limits(struct evhttp *http, const hl_opts *o)
{
    evhttp_set_max_body_size(
        http, (ev_ssize_t)(o->max_body ? o->max_body : HL_DEFAULT_MAX_BODY));
    evhttp_set_max_headers_size(
        http, (ev_ssize_t)(o->max_headers ? o->max_headers
                                          : HL_DEFAULT_MAX_HEADERS));
    evhttp_set_timeout(http,
                       o->timeout_s > 0 ? o->timeout_s : HL_DEFAULT_TIMEOUT_S);
    evhttp_set_allowed_methods(http, EVHTTP_REQ_GET | EVHTTP_REQ_POST);
    /* Read an oversized body to its end before answering 413, so that the
     * client sees the answer instead of a connection reset. */
    evhttp_set_flags(http, EVHTTP_SERVER_LINGERING_CLOSE);
}

static int hl_bind(hlisten *h, const hl_opts *o, cs_err *err)
{
    const char *addr = o->listen_addr && *o->listen_addr ? o->listen_addr
                                                         : HL_DEFAULT_ADDR;

    if (o->port < 0 || o->port > 65535) {
        cs_err_set(err, "%s port %d is out of range", h->name, o->port);
        return -1;
    }
    h->bound = evhttp_bind_socket_with_handle(h->http, addr,
                                              (ev_uint16_t)o->port);
    if (!h->bound) {
        cs_err_set(err, "%s cannot listen on %s:%d: %s", h->name, addr,
                   o->port, strerror(errno));
        return -1;
    }
    h->gate.lst = evhttp_bound_socket_get_listener(h->bound);
    return 0;
}

static void set_callbacks(hlisten *h, const hl_opts *o)
{
    h->on_request = o->on_request;
    h->on_refused = o->on_refused;
    h->arg = o->arg;
    h->conn = (hlc_cfg){
        .name = h->name,
        .max_headers = o->max_headers ? o->max_headers
                                      : HL_DEFAULT_MAX_HEADERS,
        .deadline_s = o->request_deadline_s > 0 ? o->request_deadline_s
                                                : HL_DEFAULT_DEADLINE_S,
        .on_headers = o->on_headers,
        .arg = o->arg};
}

static int hl_init(hlisten *h, struct event_base *base, const hl_opts *o,
                   cs_err *err)
{
    set_callbacks(h, o);
    h->http = evhttp_new(base);
    if (!h->http ||
        gate_init(&h->gate, base, o->max_connections > 0
                                      ? o->max_connections
                                      : HL_DEFAULT_MAX_CONNECTIONS,
                  &h->conn)) {
        cs_err_set(err, "%s: cannot create the HTTP server", h->name);
        return -1;
    }
    apply_limits(h->http, o);
    evhttp_set_bevcb(h->http, gate_bev, &h->gate);
    evhttp_set_gencb(h->http, hl_request, h);
    return hl_bind(h, o, err);
}

hlisten *hl_start(struct event_base *base, const hl_opts *o, cs_err *err)
{
    hlisten *h = xcalloc(1, sizeof *h);

    h->name = xstrdup(o->name && *o->name ? o->name : "http");
    if (hl_init(h, base, o, err)) {
        hl_free(h);
        return NULL;
    }
    return h;
}

int hl_port(const hlisten *h)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    evutil_socket_t fd = evhttp_bound_socket_get_fd(h->bound);

    if (getsockname(fd, (struct sockaddr *)&ss, &len))
        return -1;
    if (ss.ss_family == AF_INET)
        return ntohs(((struct sockaddr_in *)&ss)->sin_port);
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return -1;
}

const char *hl_log_uri(const struct evhttp_request *req, char *buf,
                       size_t len)
{
    const char *uri = evhttp_request_get_uri(req);
    size_t path;

    if (!uri)
        uri = "?";
    path = strcspn(uri, "?#");
    snprintf(buf, len, "%.*s%s", (int)path, uri,
             uri[path] ? "?<redacted>" : "");
    return buf;
}

void hl_free(hlisten *h)
{
    if (!h)
        return;
    h->gate.lst = NULL; /* evhttp_free closes it */
    if (h->http)
        evhttp_free(h->http);
    gate_free(&h->gate);
    free(h->name);
    free(h);
}

int hl_bearer_ok(const struct evkeyvalq *headers, const char *token,
                 size_t len)
{
    const char *h = evhttp_find_header(headers, "Authorization");

    if (!h || strncasecmp(h, "Bearer ", 7) != 0)
        return 0;
    for (h += 7; *h == ' '; h++)
        ;
    return str_secret_equal(h, strlen(h), token, len);
}
