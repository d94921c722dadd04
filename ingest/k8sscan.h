/* Reading a few fields of a JSON document without building it: where a
 * watch event ends, and the type, reason, message and resourceVersion
 * the edge filter needs. Most of a cluster's Events are Normal ones no
 * rule reads (Scheduled, Pulled, Created, Started); deciding that from
 * the bytes spares building a tree of each (jansson's parse of a watch
 * event costs 2-3x Python's json.loads: bench/k8s.sh).
 *
 * The scanner checks only what it reads: where strings end and the
 * nesting of what it skips. A document kept is parsed in full, which
 * checks the rest; one dropped is not published. Pure, fuzzed (against
 * jansson: what it finds must be what jansson reads). */
#ifndef CS_K8SSCAN_H
#define CS_K8SSCAN_H

#include <stddef.h>

/* The length of the object that starts p (n bytes): 0 when it is not
 * whole yet, -1 when p does not start an object (*bad: the offset). */
long ks_object_end(const char *p, size_t n, size_t *bad);

typedef struct ks_val {
    const char *v; /* raw bytes: a string's without its quotes */
    size_t len;
    int kind;      /* 0 absent, 1 a string, 2 another value */
} ks_val;

/* The values of nkeys keys at the top of the object p, in one pass (the
 * first of a key given twice). 0, or -1 when the bytes on the way are
 * not JSON. */
int ks_fields(const char *p, size_t n, const char *const *keys,
              size_t nkeys, ks_val *out);

/* The value at a path of keys (NULL-ended) in the object p: its raw
 * bytes (a string's without its quotes, still escaped) in *v, *vlen.
 * 1 when found and a string, 2 when found and not a string, 0 when not
 * there, -1 when the bytes on the way are not JSON. */
int ks_get(const char *p, size_t n, const char *const *path, const char **v,
           size_t *vlen);

/* A JSON string's raw bytes unescaped into out (cap bytes, cut at a
 * UTF-8 boundary, NUL-terminated). -1 on a bad escape. */
int ks_unescape(const char *raw, size_t len, char *out, size_t cap);

#endif
