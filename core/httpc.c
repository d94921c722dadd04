#include "core/httpc.h"

#include <curl/curl.h>
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

#define HTTPC_MAX_BODY (1u << 20)
/* A 429 means the server did not take the request: it is sent again
 * after the server's Retry-After (else 1, 2, 4 s), at most this often. */
#define HTTPC_RETRIES_429 3
#define HTTPC_MAX_RETRY_S 30

typedef struct xfer {
    struct xfer *prev, *next;
    httpc *h;
    CURL *easy;
    struct curl_slist *headers;
    char *body;
    size_t len, cap;
    int truncated;
    httpc_fn fn;
    httpc_data_fn data;   /* a stream's: the body as it comes */
    httpc_done_fn done;
    void *arg;
    int retries;          /* 429s answered so far */
    struct event *again;  /* the retry's timer */
    char error[CURL_ERROR_SIZE];
} xfer;

struct httpc {
    struct event_base *base;
    CURLM *multi;
    struct event *timer;
    xfer *list;
    size_t n;
};

static void scrub_headers(struct curl_slist *l)
{
    /* The Authorization header holds a secret: leave no copy in freed
     * memory for a core dump to show. */
    for (struct curl_slist *i = l; i; i = i->next)
        explicit_bzero(i->data, strlen(i->data));
    curl_slist_free_all(l);
}

static void xfer_free(xfer *x)
{
    if (x->prev)
        x->prev->next = x->next;
    else
        x->h->list = x->next;
    if (x->next)
        x->next->prev = x->prev;
    x->h->n--;
    curl_multi_remove_handle(x->h->multi, x->easy);
    curl_easy_cleanup(x->easy);
    if (x->again)
        event_free(x->again);
    scrub_headers(x->headers);
    free(x->body);
    free(x);
}

static void on_again(evutil_socket_t fd, short what, void *arg)
{
    xfer *x = arg;

    (void)fd;
    (void)what;
    if (curl_multi_add_handle(x->h->multi, x->easy) != CURLM_OK) {
        x->fn(x->arg, 0, "", 0, "cannot send the request again after a 429");
        xfer_free(x);
    }
}

/* 1 when x is sent again later (a 429 with retries left). */
static int retry_later(xfer *x, long status)
{
    curl_off_t after = 0;
    struct timeval tv = {0, 0};

    if (status != 429 || x->retries >= HTTPC_RETRIES_429)
        return 0;
    if (!x->again && !(x->again = evtimer_new(x->h->base, on_again, x)))
        return 0;
    curl_easy_getinfo(x->easy, CURLINFO_RETRY_AFTER, &after);
    tv.tv_sec = after > 0 ? (after < HTTPC_MAX_RETRY_S ? after : HTTPC_MAX_RETRY_S)
                          : 1L << x->retries;
    x->retries++;
    x->len = 0;
    x->truncated = 0;
    if (x->body)
        x->body[0] = 0;
    curl_multi_remove_handle(x->h->multi, x->easy);
    evtimer_add(x->again, &tv);
    return 1;
}

static void check_done(httpc *h)
{
    CURLMsg *msg;
    int left;

    while ((msg = curl_multi_info_read(h->multi, &left))) {
        xfer *x = NULL;
        CURLcode rc = msg->data.result;
        long status = 0;

        if (msg->msg != CURLMSG_DONE)
            continue;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
        curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &status);
        if (rc == CURLE_OK && retry_later(x, status))
            continue;
        if (rc != CURLE_OK && !x->error[0])
            snprintf(x->error, sizeof x->error, "%s", curl_easy_strerror(rc));
        if (x->done) {
            x->done(x->arg, rc == CURLE_OK ? status : 0,
                    rc == CURLE_OK ? NULL : x->error);
            xfer_free(x);
            continue;
        }
        x->fn(x->arg, rc == CURLE_OK ? status : 0, x->body ? x->body : "",
              x->len, rc == CURLE_OK ? NULL : x->error);
        xfer_free(x);
    }
}

static void on_event(evutil_socket_t fd, short what, void *arg)
{
    httpc *h = arg;
    int running, flags = ((what & EV_READ) ? CURL_CSELECT_IN : 0) |
                         ((what & EV_WRITE) ? CURL_CSELECT_OUT : 0);

    curl_multi_socket_action(h->multi, fd, flags, &running);
    check_done(h);
}

static void on_timeout(evutil_socket_t fd, short what, void *arg)
{
    httpc *h = arg;
    int running;

    (void)fd;
    (void)what;
    curl_multi_socket_action(h->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    check_done(h);
}

static int on_socket(CURL *e, curl_socket_t s, int what, void *userp,
                     void *socketp)
{
    httpc *h = userp;
    struct event *ev = socketp;
    short kind = EV_PERSIST;

    (void)e;
    if (what == CURL_POLL_REMOVE) {
        if (ev)
            event_free(ev);
        return 0;
    }
    if (what & CURL_POLL_IN)
        kind |= EV_READ;
    if (what & CURL_POLL_OUT)
        kind |= EV_WRITE;
    if (ev) {
        event_del(ev);
        event_assign(ev, h->base, s, kind, on_event, h);
    } else {
        ev = event_new(h->base, s, kind, on_event, h);
        if (!ev)
            return -1;
        curl_multi_assign(h->multi, s, ev);
    }
    return event_add(ev, NULL);
}

static int on_timer_set(CURLM *m, long ms, void *userp)
{
    httpc *h = userp;
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};

    (void)m;
    if (ms < 0)
        return evtimer_del(h->timer);
    return evtimer_add(h->timer, &tv);
}

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
    xfer *x = arg;
    size_t got = size * n, keep = got;

    if (x->data) {
        long status = 0;
        curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
        if (x->data(x->arg, status, data, got) < 0) {
            snprintf(x->error, sizeof x->error, "aborted by its reader");
            return 0;
        }
        return got;
    }

    if (x->len + keep > HTTPC_MAX_BODY) {
        keep = HTTPC_MAX_BODY - x->len;
        x->truncated = 1;
    }
    if (x->len + keep + 1 > x->cap) {
        size_t cap = x->cap ? x->cap : 4096;
        char *nb;
        while (cap < x->len + keep + 1)
            cap *= 2;
        if (!(nb = realloc(x->body, cap)))
            return 0;
        x->body = nb;
        x->cap = cap;
    }
    memcpy(x->body + x->len, data, keep);
    x->len += keep;
    x->body[x->len] = 0;
    return got;
}

httpc *httpc_new(struct event_base *base, cs_err *err)
{
    httpc *h = calloc(1, sizeof *h);

    if (!h || curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        cs_err_set(err, "cannot initialise libcurl");
        free(h);
        return NULL;
    }
    h->base = base;
    h->multi = curl_multi_init();
    h->timer = evtimer_new(base, on_timeout, h);
    if (!h->multi || !h->timer) {
        cs_err_set(err, "cannot create the HTTP client");
        httpc_free(h);
        return NULL;
    }
    curl_multi_setopt(h->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(h->multi, CURLMOPT_SOCKETDATA, h);
    curl_multi_setopt(h->multi, CURLMOPT_TIMERFUNCTION, on_timer_set);
    curl_multi_setopt(h->multi, CURLMOPT_TIMERDATA, h);
    /* A storm of actions must not open a connection per request against
     * one API server (nor trip its rate limits): beyond this they queue
     * in curl and reuse the open ones. */
    curl_multi_setopt(h->multi, CURLMOPT_MAX_HOST_CONNECTIONS, 8L);
    return h;
}

/* "Name: value"; an empty value ("Expect:") removes curl's own header. */
static int add_header(xfer *x, const char *name, const char *prefix,
                      const char *v)
{
    char line[4096];
    struct curl_slist *l;

    if ((size_t)snprintf(line, sizeof line, "%s:%s%s%s", name, *v ? " " : "",
                         prefix, v) >= sizeof line)
        return -1;
    l = curl_slist_append(x->headers, line);
    explicit_bzero(line, sizeof line);
    if (!l)
        return -1;
    x->headers = l;
    return 0;
}

static int set_method(xfer *x, const httpc_req *r)
{
    CURL *e = x->easy;
    int rc = 0;

    if (!strcmp(r->method, "GET"))
        rc |= curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    else if (strcmp(r->method, "POST"))
        rc |= curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r->method);
    if (r->body) {
        rc |= curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
                               (curl_off_t)strlen(r->body));
        rc |= curl_easy_setopt(e, CURLOPT_COPYPOSTFIELDS, r->body);
    } else if (!strcmp(r->method, "POST")) {
        rc |= curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
        rc |= curl_easy_setopt(e, CURLOPT_COPYPOSTFIELDS, "");
    }
    return rc;
}

/* PEM text for a blob option, copied by curl (CURL_BLOB_COPY). */
static int set_blob(CURL *e, CURLoption opt, const char *pem)
{
    struct curl_blob b = {.data = (void *)pem, .len = strlen(pem),
                          .flags = CURL_BLOB_COPY};

    return curl_easy_setopt(e, opt, &b);
}

static int set_tls_blobs(CURL *e, const httpc_req *r)
{
    int rc = 0;

    if (r->ca_pem)
        rc |= set_blob(e, CURLOPT_CAINFO_BLOB, r->ca_pem);
    if (r->cert_file)
        rc |= curl_easy_setopt(e, CURLOPT_SSLCERT, r->cert_file);
    if (r->key_file)
        rc |= curl_easy_setopt(e, CURLOPT_SSLKEY, r->key_file);
    if (r->cert_pem)
        rc |= set_blob(e, CURLOPT_SSLCERT_BLOB, r->cert_pem);
    if (r->key_pem)
        rc |= set_blob(e, CURLOPT_SSLKEY_BLOB, r->key_pem);
    return rc;
}

static int set_options(xfer *x, const httpc_req *r)
{
    CURL *e = x->easy;
    long t = r->timeout_ms > 0 ? r->timeout_ms : 30000;
    int rc = 0;

    rc |= curl_easy_setopt(e, CURLOPT_URL, r->url);
    rc |= curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    /* A redirect would carry the token to a host nobody configured. */
    rc |= curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    rc |= curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    rc |= curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, t);
    rc |= curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, t < 10000 ? t : 10000);
    rc |= curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, r->insecure ? 0L : 1L);
    rc |= curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, r->insecure ? 0L : 2L);
    if (r->ca_file)
        rc |= curl_easy_setopt(e, CURLOPT_CAINFO, r->ca_file);
    rc |= set_tls_blobs(e, r);
    if (r->unix_socket)
        rc |= curl_easy_setopt(e, CURLOPT_UNIX_SOCKET_PATH, r->unix_socket);
    if (r->basic) {
        rc |= curl_easy_setopt(e, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        rc |= curl_easy_setopt(e, CURLOPT_USERPWD, r->basic);
    }
    rc |= curl_easy_setopt(e, CURLOPT_USERAGENT,
                           r->user_agent ? r->user_agent : "cascade/1");
    rc |= curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    rc |= curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
    rc |= curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->error);
    rc |= curl_easy_setopt(e, CURLOPT_PRIVATE, x);
    rc |= set_method(x, r);
    if (add_header(x, "Accept", "", "application/json") ||
        add_header(x, "Expect", "", "") ||
        (r->content_type && add_header(x, "Content-Type", "", r->content_type)) ||
        (r->bearer && add_header(x, "Authorization", "Bearer ", r->bearer)))
        return -1;
    for (const char *const *h = r->headers; h && *h; h++) {
        struct curl_slist *l = curl_slist_append(x->headers, *h);
        if (!l)
            return -1;
        x->headers = l;
    }
    rc |= curl_easy_setopt(e, CURLOPT_HTTPHEADER, x->headers);
    return rc ? -1 : 0;
}

static xfer *start(httpc *h, const httpc_req *r, xfer *x, cs_err *err)
{
    x->h = h;
    x->next = h->list;
    if (h->list)
        h->list->prev = x;
    h->list = x;
    h->n++;
    if (set_options(x, r)) {
        cs_err_set(err, "%s %.200s: libcurl refused the request's options",
                   r->method, r->url);
        goto fail;
    }
    /* a stream's body in big reads: fewer calls, fewer cut documents */
    if (x->data && (curl_easy_setopt(x->easy, CURLOPT_BUFFERSIZE, 256L * 1024) ||
                    curl_easy_setopt(x->easy, CURLOPT_TCP_KEEPALIVE, 1L) ||
                    curl_easy_setopt(x->easy, CURLOPT_TCP_KEEPIDLE, 30L) ||
                    curl_easy_setopt(x->easy, CURLOPT_TCP_KEEPINTVL, 10L))) {
        cs_err_set(err, "%.200s: libcurl refused TCP keepalive", r->url);
        goto fail;
    }
    if (curl_multi_add_handle(h->multi, x->easy) != CURLM_OK) {
        cs_err_set(err, "%s %.200s: cannot start the request", r->method,
                   r->url);
        goto fail;
    }
    return x;
fail:
    xfer_free(x);
    return NULL;
}

httpc_xfer *httpc_stream(httpc *h, const httpc_req *r, httpc_data_fn data,
                         httpc_done_fn done, void *arg, cs_err *err)
{
    xfer *x = calloc(1, sizeof *x);

    if (!x || !(x->easy = curl_easy_init())) {
        cs_err_set(err, "out of memory for an HTTP request");
        free(x);
        return NULL;
    }
    x->data = data;
    x->done = done;
    x->arg = arg;
    x->retries = HTTPC_RETRIES_429; /* the caller schedules its own */
    return start(h, r, x, err);
}

void httpc_cancel(httpc_xfer *x)
{
    if (x)
        xfer_free(x);
}

int httpc_send(httpc *h, const httpc_req *r, httpc_fn fn, void *arg,
               cs_err *err)
{
    xfer *x = calloc(1, sizeof *x);

    if (!x || !(x->easy = curl_easy_init())) {
        cs_err_set(err, "out of memory for an HTTP request");
        free(x);
        return -1;
    }
    x->fn = fn;
    x->arg = arg;
    return start(h, r, x, err) ? 0 : -1;
}

void httpc_escape(const char *s, char *out, size_t len)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = 0;

    for (; *s && n + 4 < len; s++) {
        unsigned char ch = (unsigned char)*s;
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
            (ch >= '0' && ch <= '9') || strchr("-_.~", ch)) {
            out[n++] = (char)ch;
        } else {
            out[n++] = '%';
            out[n++] = hex[ch >> 4];
            out[n++] = hex[ch & 15];
        }
    }
    out[n] = 0;
}

size_t httpc_in_flight(const httpc *h)
{
    return h->n;
}

void httpc_free(httpc *h)
{
    if (!h)
        return;
    while (h->list)
        xfer_free(h->list);
    if (h->multi)
        curl_multi_cleanup(h->multi);
    if (h->timer)
        event_free(h->timer);
    free(h);
    curl_global_cleanup();
}
