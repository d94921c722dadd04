#include "ingest/k8sframe.h"

#include <stdlib.h>
#include <string.h>

#include "ingest/jsonscan.h"

struct kf_framer {
    char *buf;
    size_t len, cap;
    size_t off;        /* where the next document starts */
    size_t tried;      /* len at the last try that wanted more; 0: none */
    int newline;       /* a newline came since that try */
    unsigned long long consumed; /* stream bytes before buf[0] */
};

kf_framer *kf_new(void)
{
    return calloc(1, sizeof(kf_framer));
}

void kf_free(kf_framer *f)
{
    if (f) {
        free(f->buf);
        free(f);
    }
}

void kf_reset(kf_framer *f)
{
    f->len = f->off = f->tried = 0;
    f->newline = 0;
    f->consumed = 0;
}

size_t kf_pending(const kf_framer *f)
{
    return f->len - f->off;
}

/* Moves the unread part to the front. */
static void compact(kf_framer *f)
{
    if (!f->off)
        return;
    memmove(f->buf, f->buf + f->off, f->len - f->off);
    f->len -= f->off;
    if (f->tried)
        f->tried = f->tried > f->off ? f->tried - f->off : 0;
    f->consumed += f->off;
    f->off = 0;
}

int kf_feed(kf_framer *f, const char *p, size_t n, cs_err *err)
{
    if (!n)
        return 0;
    compact(f);
    if (f->len + n > KF_MAX_DOC) {
        cs_err_set(err, "a watch event over %u bytes (at stream byte %llu): "
                   "not a Kubernetes object", KF_MAX_DOC, f->consumed);
        return -1;
    }
    if (f->len + n > f->cap) {
        size_t cap = f->cap ? f->cap : 16384;
        char *nb;
        while (cap < f->len + n)
            cap *= 2;
        if (!(nb = realloc(f->buf, cap))) {
            cs_err_set(err, "out of memory for a watch event");
            return -1;
        }
        f->buf = nb;
        f->cap = cap;
    }
    memcpy(f->buf + f->len, p, n);
    f->len += n;
    if (memchr(p, '\n', n))
        f->newline = 1;
    return 0;
}

static void skip_space(kf_framer *f)
{
    while (f->off < f->len && strchr(" \t\r\n", f->buf[f->off]))
        f->off++;
}

int kf_next_raw(kf_framer *f, const char **doc, size_t *len, cs_err *err)
{
    size_t bad;
    long end;

    *doc = NULL;
    *len = 0;
    skip_space(f);
    if (f->off == f->len) {
        f->off = f->len = f->tried = 0;
        f->newline = 0;
        return 0;
    }
    /* Wanted more last time, and neither a newline nor twice the bytes
     * came since: it would want more again. */
    if (f->tried && !f->newline && f->len < 2 * f->tried)
        return 0;
    end = jsc_object_end(f->buf + f->off, f->len - f->off, &bad);
    if (end == 0) {
        f->tried = f->len;
        f->newline = 0;
        return 0;
    }
    if (end < 0) {
        cs_err_set(err, "watch stream byte %llu: not a JSON object",
                   f->consumed + f->off + (unsigned long long)bad);
        return -1;
    }
    *doc = f->buf + f->off;
    *len = (size_t)end;
    f->off += (size_t)end;
    f->tried = 0;
    f->newline = 0;
    return 1;
}

int kf_next(kf_framer *f, json_t **out, cs_err *err)
{
    json_error_t je;
    const char *doc;
    size_t len;
    int rc = kf_next_raw(f, &doc, &len, err);

    *out = NULL;
    if (rc != 1)
        return rc;
    if (!(*out = json_loadb(doc, len, JSON_ALLOW_NUL, &je))) {
        cs_err_set(err, "watch stream byte %llu: not JSON: %s",
                   f->consumed + (unsigned long long)(doc - f->buf) +
                       (unsigned long long)je.position, je.text);
        return -1;
    }
    return 1;
}
