/* Reading a few fields of a JSON document without building it: where a
 * Kubernetes watch event ends, and the type, reason, message and
 * resourceVersion the edge filter needs (most of a cluster's Events are
 * Normal ones no rule reads); the twenty fields of a job that the SLURM
 * collector reads out of a hundred in squeue --json. Building a tree of
 * each costs 2-3x Python's json.loads (jansson allocates every value):
 * bench/k8s.sh, bench/slurm.sh.
 *
 * The scanner checks only what it reads: where strings end and the
 * nesting of what it skips. A document kept is parsed in full, which
 * checks the rest; one dropped is not published. Pure, fuzzed (against
 * jansson: what it finds must be what jansson reads). */
#ifndef CS_JSONSCAN_H
#define CS_JSONSCAN_H

#include <stddef.h>

/* The length of the object that starts p (n bytes): 0 when it is not
 * whole yet, -1 when p does not start an object (*bad: the offset). */
long jsc_object_end(const char *p, size_t n, size_t *bad);

typedef struct jsc_val {
    const char *v; /* raw bytes: a string's without its quotes */
    size_t len;
    int kind;      /* 0 absent, 1 a string, 2 another value */
} jsc_val;

/* The values of nkeys keys at the top of the object p, in one pass (the
 * first of a key given twice). 0, or -1 when the bytes on the way are
 * not JSON. */
int jsc_fields(const char *p, size_t n, const char *const *keys,
              size_t nkeys, jsc_val *out);

/* The value at a path of keys (NULL-ended) in the object p: its raw
 * bytes (a string's without its quotes, still escaped) in *v, *vlen.
 * 1 when found and a string, 2 when found and not a string, 0 when not
 * there, -1 when the bytes on the way are not JSON. */
int jsc_get(const char *p, size_t n, const char *const *path, const char **v,
           size_t *vlen);

/* A JSON string's raw bytes unescaped into out (cap bytes, cut at a
 * UTF-8 boundary, NUL-terminated). -1 on a bad escape. */
int jsc_unescape(const char *raw, size_t len, char *out, size_t cap);

#endif
