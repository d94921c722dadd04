/* Prometheus's text exposition format (version 0.0.4), written at scrape
 * time from the counts a module already keeps. A module declares its
 * metric families once, as a table of mx_family (name, type, help, label
 * names); its writer goes over the table, and mx_family_begin emits each
 * family's HELP and TYPE lines before its samples, so no name or help
 * text is ever written twice by hand. Histograms keep fixed buckets
 * (mx_hist) that a module observes into as it works.
 *
 * Pure: no sockets, no clock. The HTTP side is core/obsrv.h. */
#ifndef CS_METRICS_H
#define CS_METRICS_H

#include <stddef.h>
#include <stdint.h>

typedef enum { MX_COUNTER, MX_GAUGE, MX_HISTOGRAM } mx_type;

typedef struct mx_family {
    const char *name;   /* cascade_..., _total for a counter */
    mx_type type;
    const char *help;
    const char *labels; /* label names, comma-separated; NULL: none */
} mx_family;

/* Up to MX_BUCKETS upper bounds (ascending), and +Inf. */
#define MX_BUCKETS 16
typedef struct mx_hist {
    const double *bounds;
    size_t nbounds;
    uint64_t counts[MX_BUCKETS + 1]; /* per bucket, not cumulative */
    double sum;
    uint64_t count;
} mx_hist;

/* Bucket bounds shared by the modules: seconds of a short step (1 ms to
 * 10 s), seconds of detection (0.1 s to 10 min), batch sizes. */
extern const double mx_bounds_step_s[];
extern const size_t mx_nbounds_step_s;
extern const double mx_bounds_detect_s[];
extern const size_t mx_nbounds_detect_s;
extern const double mx_bounds_batch[];
extern const size_t mx_nbounds_batch;

void mx_hist_init(mx_hist *h, const double *bounds, size_t n);
void mx_hist_observe(mx_hist *h, double v);

/* The exposition being written: a growing buffer. */
typedef struct mx_out mx_out;

mx_out *mx_out_new(void);
/* The text so far (NUL-terminated) and its length. */
const char *mx_out_text(const mx_out *o, size_t *len);
void mx_out_free(mx_out *o);

/* HELP and TYPE of f: once, before f's samples. */
void mx_family_begin(mx_out *o, const mx_family *f);
/* One sample of f (counter or gauge); values[i] for each of f's label
 * names in order (NULL when f has none). Label values are escaped. */
void mx_sample(mx_out *o, const mx_family *f, const char *const *values,
               double v);
/* A histogram's _bucket (cumulative, +Inf last), _sum and _count lines. */
void mx_hist_write(mx_out *o, const mx_family *f, const char *const *values,
                   const mx_hist *h);

/* A whole family with one unlabelled sample: begin, then the value. */
void mx_single(mx_out *o, const mx_family *f, double v);

#endif
