/* /metrics, /healthz, /readyz on the process's loop: see obsrv.h. */
#include "core/obsrv.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "core/hlisten.h"
#include "core/mem.h"
#include "core/str.h"

struct obsrv {
    hlisten *http;
    obs_part parts[OBS_MAX_PARTS];
    size_t nparts;
    char process[64], version[64], commit[64];
    double started; /* wall clock, s */
    unsigned long scrapes;
};

static const mx_family PROC_MX[] = {
    {"cascade_build_info", MX_GAUGE,
     "The binary's version and git commit, and which process this is (1).",
     "version,commit,process"},
    {"process_start_time_seconds", MX_GAUGE,
     "When the process started (seconds since the epoch).", NULL},
    {"process_cpu_seconds_total", MX_COUNTER,
     "CPU time the process used, user and system.", NULL},
    {"process_resident_memory_bytes", MX_GAUGE,
     "Resident memory of the process.", NULL},
    {"cascade_ready", MX_GAUGE,
     "1 when the process is ready (/readyz answers 200), else 0.", NULL},
    {"cascade_scrapes_total", MX_COUNTER,
     "Scrapes of /metrics this process answered.", NULL},
};

static double wall_now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_REALTIME, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, rss = 0;

    if (!f)
        return 0;
    if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
        rss = 0;
    fclose(f);
    return (double)rss * (double)sysconf(_SC_PAGESIZE);
}

static void process_metrics(obsrv *s, mx_out *o)
{
    const char *build[] = {s->version, s->commit, s->process};
    struct rusage ru;
    char why[512]; /* only ready or not is used; the reason fits */

    getrusage(RUSAGE_SELF, &ru);
    mx_family_begin(o, &PROC_MX[0]);
    mx_sample(o, &PROC_MX[0], build, 1);
    mx_single(o, &PROC_MX[1], s->started);
    mx_single(o, &PROC_MX[2],
              (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                  (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
    mx_single(o, &PROC_MX[3], rss_bytes());
    mx_single(o, &PROC_MX[4], obs_ready(s, why, sizeof why));
    mx_single(o, &PROC_MX[5], (double)s->scrapes);
}

mx_out *obs_render(obsrv *s)
{
    mx_out *o = mx_out_new();

    s->scrapes++;
    for (size_t i = 0; i < s->nparts; i++)
        if (s->parts[i].metrics)
            s->parts[i].metrics(o, s->parts[i].arg);
    process_metrics(s, o);
    return o;
}

int obs_ready(obsrv *s, char *why, size_t len)
{
    char part[256];

    for (size_t i = 0; i < s->nparts; i++) {
        const obs_part *p = &s->parts[i];
        if (p->ready && !p->ready(part, sizeof part, p->arg)) {
            snprintf(why, len, "%s: %s", p->name, part);
            return 0;
        }
    }
    snprintf(why, len, "ready");
    return 1;
}

static void reply(struct evhttp_request *req, int code, const char *reason,
                  const char *type, const char *body, size_t len)
{
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                      type);
    evbuffer_add(evhttp_request_get_output_buffer(req), body, len);
    evhttp_send_reply(req, code, reason, NULL);
}

static void on_request(struct evhttp_request *req, void *arg)
{
    obsrv *s = arg;
    const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
    char why[512];

    if (evhttp_request_get_command(req) != EVHTTP_REQ_GET) {
        evhttp_add_header(evhttp_request_get_output_headers(req), "Allow",
                          "GET");
        reply(req, 405, "Method Not Allowed", "text/plain", "GET only\n", 9);
    } else if (path && strcmp(path, "/metrics") == 0) {
        size_t len;
        mx_out *o = obs_render(s);
        const char *text = mx_out_text(o, &len);
        reply(req, 200, "OK", "text/plain; version=0.0.4; charset=utf-8",
              text, len);
        mx_out_free(o);
    } else if (path && strcmp(path, "/healthz") == 0) {
        reply(req, 200, "OK", "text/plain", "ok\n", 3);
    } else if (path && strcmp(path, "/readyz") == 0) {
        int ok = obs_ready(s, why, sizeof why - 1);
        strcat(why, "\n");
        reply(req, ok ? 200 : 503, ok ? "OK" : "Service Unavailable",
              "text/plain", why, strlen(why));
    } else {
        static const char nf[] = "no such path (/metrics, /healthz, /readyz)\n";
        reply(req, 404, "Not Found", "text/plain", nf, sizeof nf - 1);
    }
}

obsrv *obs_start(struct event_base *base, const char *addr, int port,
                 const obs_build *b, cs_err *err)
{
    obsrv *s = xcalloc(1, sizeof *s);

    str_copy(s->process, sizeof s->process, b->process);
    str_copy(s->version, sizeof s->version, b->version);
    str_copy(s->commit, sizeof s->commit, b->commit);
    s->started = wall_now();
    s->http = hl_start(base, &(hl_opts){.name = "metrics",
                                        .listen_addr = addr,
                                        .port = port,
                                        .max_body = 1024,
                                        .max_connections = 32,
                                        .on_request = on_request,
                                        .arg = s},
                       err);
    if (!s->http) {
        free(s);
        return NULL;
    }
    return s;
}

int obs_port(const obsrv *s)
{
    return hl_port(s->http);
}

int obs_add(obsrv *s, const obs_part *p)
{
    if (s->nparts >= OBS_MAX_PARTS)
        return -1;
    s->parts[s->nparts++] = *p;
    return 0;
}

void obs_free(obsrv *s)
{
    if (!s)
        return;
    hl_free(s->http);
    free(s);
}
