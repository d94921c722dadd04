/* Reading YAML files: the one helper set every reader of a YAML file
 * uses (the process configuration, the executors' configuration, the
 * rule files). A document keeps its name so that every problem is told
 * as "FILE:LINE:COL" with a message, to a sink the reader chooses (the
 * rules collect all problems; the configurations keep the first).
 *
 * A block (a mapping of known keys) is read against one keyword table:
 * each key's name, type, whether it is required, and either where its
 * value goes in the reader's struct or a setter that takes it. yd_read
 * reports unknown keys, keys given twice, missing required keys and
 * values of the wrong type, each at its own line and column; what a key
 * means together with the others stays with the reader. */
#ifndef CS_YDOC_H
#define CS_YDOC_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <yaml.h>

#include "core/err.h"

typedef struct yd_doc yd_doc;

/* where: "FILE:LINE:COL" (or the file alone when it cannot be read). */
typedef void (*yd_sink)(void *arg, const char *where, const char *msg);

/* How deep blocks may nest: no file of cascade's needs ten. */
#define YD_MAX_DEPTH 64

/* Parses text; a YAML syntax error, nesting deeper than YD_MAX_DEPTH or a
 * second document is reported and NULL returned. */
yd_doc *yd_parse(const char *name, const char *text, size_t len, yd_sink fn,
                 void *arg);
/* The same for a file; one that cannot be read is reported too. */
yd_doc *yd_parse_file(const char *path, yd_sink fn, void *arg);
void yd_free(yd_doc *d);

/* A sink that keeps the first problem in a cs_err (arg), as
 * "FILE:LINE:COL: message". */
void yd_sink_first(void *arg, const char *where, const char *msg);

yaml_node_t *yd_root(yd_doc *d);
const char *yd_name(const yd_doc *d);
/* Problems reported so far. */
int yd_errors(const yd_doc *d);
void yd_problem(yd_doc *d, const yaml_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* "FILE:LINE:COL" of n. */
void yd_where(const yd_doc *d, const yaml_node_t *n, char *buf, size_t len);
/* n's line, from 1. */
int yd_line(const yaml_node_t *n);

/* ---- nodes ---- */
/* A scalar's text, or NULL for any other node (and for NULL). */
const char *yd_scalar(const yaml_node_t *n);
/* The value of key in a mapping (the first, if given twice), or NULL. */
yaml_node_t *yd_get(yd_doc *d, yaml_node_t *map, const char *key);
/* a if set, else b: where to report about a key that may be absent. */
yaml_node_t *yd_or(yaml_node_t *a, yaml_node_t *b);
/* Items of a sequence, pairs of a mapping; 0 for anything else. */
size_t yd_len(const yaml_node_t *n);
yaml_node_t *yd_item(yd_doc *d, const yaml_node_t *seq, size_t i);
yaml_node_t *yd_pair_key(yd_doc *d, const yaml_node_t *map, size_t i);
yaml_node_t *yd_pair_value(yd_doc *d, const yaml_node_t *map, size_t i);

/* ---- values ---- */
/* v's index in names[0..n), or -1. */
int yd_pick(const char *v, const char *const *names, int n);
/* "30s", "10m", "1h" in ms; -1 when it is not a duration. */
int64_t yd_duration_ms(const char *v);
/* "1048576", "512KiB", "1MiB", "2GiB"; -1 when it is not a size. */
int yd_size(const char *v, long long *out);
/* true/false and plain numbers as themselves, other text as a string. */
json_t *yd_json_scalar(const char *v);

/* ---- blocks ---- */
typedef enum yd_type {
    YD_TEXT,     /* a scalar: const char *, pointing into the document */
    YD_BUF,      /* a scalar copied into char[max] */
    YD_BOOL,     /* true or false: int */
    YD_INT,      /* a whole number from min to max: int */
    YD_SIZE,     /* bytes from min to max, "64KiB" and "1MiB" allowed: size_t */
    YD_DURATION, /* "30s", "10m", "1h": int64_t milliseconds */
    YD_ENUM,     /* one of names: int, its index */
    YD_LIST,     /* a sequence: yaml_node_t * */
    YD_MAP,      /* a mapping: yaml_node_t * */
    YD_NODE,     /* any node: yaml_node_t *, for the reader to look at */
    YD_SCALAR,   /* a scalar, nothing stored: for a setter */
} yd_type;

#define YD_REQUIRED 1u

struct yd_key;
/* Takes a checked value instead of storing it at off: reports and
 * returns -1 when it cannot. obj is yd_read's. */
typedef int (*yd_setter)(yd_doc *d, const struct yd_key *k, yaml_node_t *v,
                         void *obj);

typedef struct yd_key {
    const char *name;
    yd_type type;
    unsigned flags;            /* YD_REQUIRED */
    size_t off;                /* where the value goes in obj */
    long long min, max;        /* YD_INT, YD_SIZE: the range; YD_BUF: max is
                                  the buffer's size */
    const char *const *names;  /* YD_ENUM */
    int nnames;
    const char *bad;           /* the problem with a wrong value: a format
                                  of the value's text ("" if not a scalar) */
    yd_setter set;
} yd_key;

typedef struct yd_table {
    const char *kind; /* the block in messages: "a playbook", "'kafka'" */
    const yd_key *keys;
    size_t n;
} yd_table;

#define YD_TABLE(kind, keys) {kind, keys, sizeof keys / sizeof *keys}

/* The reference of a block as a Markdown table: every key of t, its type,
 * its value in defaults (an object of the type yd_read fills; NULL: none
 * shown), and what it allows (a range, the names of an enum). What
 * docs/CONFIG.md is made of, so that it cannot drift from the tables. */
void yd_reference(void *stdio_file, const yd_table *t, const char *title,
                  const void *defaults);

/* Reads map against t into obj (fields of absent keys keep their
 * values). prefix goes before each problem with a value ("playbook
 * a.b: ", "kafka."; NULL for none). Returns the problems found. */
int yd_read(yd_doc *d, yaml_node_t *map, const yd_table *t,
            const char *prefix, void *obj);
/* A problem with k's value, worded as yd_read words it. */
void yd_bad(yd_doc *d, const yd_key *k, const yaml_node_t *v,
            const char *prefix);

#endif
