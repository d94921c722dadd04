/* Remote-write request bodies for the tests, written by hand (not by the
 * generated code the receiver decodes with): a protobuf writer for the
 * few fields of prometheus.WriteRequest, then libsnappy's compressor. */
#ifndef CS_TEST_RWBODY_H
#define CS_TEST_RWBODY_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <snappy-c.h>

typedef struct pbuf {
    unsigned char b[65536];
    size_t n;
} pbuf;

static inline void pb_varint(pbuf *p, uint64_t v)
{
    do {
        p->b[p->n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
}

static inline void pb_bytes(pbuf *p, int field, const void *data, size_t len)
{
    pb_varint(p, (uint64_t)field << 3 | 2);
    pb_varint(p, len);
    memcpy(p->b + p->n, data, len);
    p->n += len;
}

static inline void pb_label(pbuf *ts, const char *name, const char *value)
{
    pbuf l = {.n = 0};

    pb_bytes(&l, 1, name, strlen(name));
    pb_bytes(&l, 2, value, strlen(value));
    pb_bytes(ts, 1, l.b, l.n);
}

/* A sample; proto3 leaves out a field at its default (0), as Prometheus
 * does: value 0 or timestamp 0 are not written. */
static inline void pb_sample(pbuf *ts, double v, int64_t ms)
{
    pbuf s = {.n = 0};
    uint64_t bits;

    memcpy(&bits, &v, sizeof bits);
    if (bits) {
        s.b[s.n++] = 1 << 3 | 1; /* fixed64, little-endian */
        for (int i = 0; i < 8; i++)
            s.b[s.n++] = (unsigned char)(bits >> (8 * i));
    }
    if (ms) {
        s.b[s.n++] = 2 << 3 | 0;
        pb_varint(&s, (uint64_t)ms);
    }
    pb_bytes(ts, 2, s.b, s.n);
}

/* The series ts (labels and samples) into the request wr. */
static inline void pb_series(pbuf *wr, const pbuf *ts)
{
    pb_bytes(wr, 1, ts->b, ts->n);
}

/* data snappy-compressed: malloc'd, its length in *len. */
static inline char *rw_snap_raw(const void *data, size_t n, size_t *len)
{
    size_t cap = snappy_max_compressed_length(n);
    char *out = malloc(cap);

    *len = cap;
    if (!out || snappy_compress((const char *)data, n, out, len) !=
                    SNAPPY_OK) {
        free(out);
        return NULL;
    }
    return out;
}

/* wr snappy-compressed: malloc'd, its length in *len. */
static inline char *rw_snap(const pbuf *wr, size_t *len)
{
    return rw_snap_raw(wr->b, wr->n, len);
}

#endif
