/* Prometheus text exposition: see metrics.h. */
#include "core/metrics.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"

const double mx_bounds_step_s[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                   0.1,   0.25,   0.5,   1,    2.5,   5, 10};
const size_t mx_nbounds_step_s = sizeof mx_bounds_step_s / sizeof(double);
const double mx_bounds_detect_s[] = {0.1, 0.25, 0.5, 1,  2.5, 5,
                                     10,  30,   60,  120, 300, 600};
const size_t mx_nbounds_detect_s = sizeof mx_bounds_detect_s / sizeof(double);
const double mx_bounds_batch[] = {1, 10, 100, 1000, 10000, 100000};
const size_t mx_nbounds_batch = sizeof mx_bounds_batch / sizeof(double);

struct mx_out {
    char *buf;
    size_t len, cap;
};

void mx_hist_init(mx_hist *h, const double *bounds, size_t n)
{
    memset(h, 0, sizeof *h);
    h->bounds = bounds;
    h->nbounds = n > MX_BUCKETS ? MX_BUCKETS : n;
}

void mx_hist_observe(mx_hist *h, double v)
{
    size_t i = 0;

    while (i < h->nbounds && v > h->bounds[i])
        i++;
    h->counts[i]++;
    h->sum += v;
    h->count++;
}

mx_out *mx_out_new(void)
{
    mx_out *o = xcalloc(1, sizeof *o);

    o->cap = 4096;
    o->buf = xmalloc(o->cap);
    o->buf[0] = '\0';
    return o;
}

const char *mx_out_text(const mx_out *o, size_t *len)
{
    if (len)
        *len = o->len;
    return o->buf;
}

void mx_out_free(mx_out *o)
{
    if (!o)
        return;
    free(o->buf);
    free(o);
}

static void put(mx_out *o, const char *s, size_t n)
{
    if (o->len + n + 1 > o->cap) {
        while (o->len + n + 1 > o->cap)
            o->cap *= 2;
        o->buf = xrealloc(o->buf, o->cap);
    }
    memcpy(o->buf + o->len, s, n);
    o->len += n;
    o->buf[o->len] = '\0';
}

static void putf(mx_out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void putf(mx_out *o, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof small) {
        put(o, small, (size_t)n);
        return;
    }
    char *big = xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    put(o, big, (size_t)n);
    free(big);
}

/* HELP text escapes backslash and newline; label values also '"'. */
static void put_escaped(mx_out *o, const char *s, int quote)
{
    for (; *s; s++) {
        if (*s == '\\')
            put(o, "\\\\", 2);
        else if (*s == '\n')
            put(o, "\\n", 2);
        else if (quote && *s == '"')
            put(o, "\\\"", 2);
        else
            put(o, s, 1);
    }
}

static void put_value(mx_out *o, double v)
{
    if (isnan(v))
        put(o, "NaN", 3);
    else if (isinf(v))
        put(o, v > 0 ? "+Inf" : "-Inf", 4);
    else if (v == floor(v) && fabs(v) < 1e15)
        putf(o, "%.0f", v);
    else
        putf(o, "%.15g", v);
}

static const char *type_name(mx_type t)
{
    return t == MX_COUNTER ? "counter" : t == MX_GAUGE ? "gauge" : "histogram";
}

void mx_family_begin(mx_out *o, const mx_family *f)
{
    putf(o, "# HELP %s ", f->name);
    put_escaped(o, f->help, 0);
    putf(o, "\n# TYPE %s %s\n", f->name, type_name(f->type));
}

/* {a="x",b="y"} from f's label names and values, with one extra pair
 * (the histogram's le) when extra is set. Nothing when there are none. */
static void put_labels(mx_out *o, const mx_family *f,
                       const char *const *values, const char *extra_name,
                       const char *extra)
{
    const char *n = f->labels;
    size_t i = 0;
    int any = 0;

    if ((!n || !*n) && !extra)
        return;
    put(o, "{", 1);
    while (n && *n) {
        size_t len = strcspn(n, ",");
        if (any)
            put(o, ",", 1);
        put(o, n, len);
        put(o, "=\"", 2);
        put_escaped(o, values && values[i] ? values[i] : "", 1);
        put(o, "\"", 1);
        any = 1;
        i++;
        n += len + (n[len] == ',');
    }
    if (extra) {
        if (any)
            put(o, ",", 1);
        putf(o, "%s=\"%s\"", extra_name, extra);
    }
    put(o, "}", 1);
}

void mx_sample(mx_out *o, const mx_family *f, const char *const *values,
               double v)
{
    put(o, f->name, strlen(f->name));
    put_labels(o, f, values, NULL, NULL);
    put(o, " ", 1);
    put_value(o, v);
    put(o, "\n", 1);
}

void mx_hist_write(mx_out *o, const mx_family *f, const char *const *values,
                   const mx_hist *h)
{
    uint64_t cum = 0;
    char le[32];

    for (size_t i = 0; i <= h->nbounds; i++) {
        cum += h->counts[i];
        if (i < h->nbounds)
            snprintf(le, sizeof le, "%g", h->bounds[i]);
        else
            snprintf(le, sizeof le, "+Inf");
        putf(o, "%s_bucket", f->name);
        put_labels(o, f, values, "le", le);
        putf(o, " %llu\n", (unsigned long long)cum);
    }
    putf(o, "%s_sum", f->name);
    put_labels(o, f, values, NULL, NULL);
    put(o, " ", 1);
    put_value(o, h->sum);
    putf(o, "\n%s_count", f->name);
    put_labels(o, f, values, NULL, NULL);
    putf(o, " %llu\n", (unsigned long long)h->count);
}

void mx_single(mx_out *o, const mx_family *f, double v)
{
    mx_family_begin(o, f);
    mx_sample(o, f, NULL, v);
}
