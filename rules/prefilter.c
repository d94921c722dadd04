#include "rules/prefilter.h"

#include <hs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "rules/litx.h"

struct pfl {
    size_t n;
    size_t always;
    int reused, ndb;
    uint64_t fp[SRC__COUNT];
    hs_database_t *db[SRC__COUNT];
    /* Per source, what a scan's answer starts as: 1 for the source's
     * patterns that its database does not hold (always tried), 0 for the
     * rest. */
    unsigned char *base[SRC__COUNT];
    /* The same as a list: the 1s of base[s], nalways[s] of them. */
    unsigned *always_ids[SRC__COUNT];
    size_t nalways[SRC__COUNT];
};

struct pfl_ctx {
    const pfl *p;
    hs_scratch_t *scratch;
    unsigned char *may;
    /* The patterns marked in may by the last scan, so that the next one
     * clears only those, and the classifier tries only those: a line
     * most patterns cannot match costs its few candidates, not the
     * catalog's size. nhits > n: every pattern (a scan error). */
    unsigned *hits;
    size_t nhits;
};

/* Copies a "(?<name>" / "(?P<name>" / "(?'name'" group opener's name and
 * returns the length of the opener, 0 when p is not one. */
static size_t named_opener(const char *p)
{
    const char *q = p + 2;
    char close;

    if (p[0] != '(' || p[1] != '?')
        return 0;
    if (*q == 'P')
        q++;
    if (*q == '<')
        close = '>';
    else if (*q == '\'')
        close = '\'';
    else
        return 0;
    q++;
    /* "(?<=" and "(?<!" are lookbehinds, not names */
    if (!(*q == '_' || (*q >= 'A' && *q <= 'Z') || (*q >= 'a' && *q <= 'z')))
        return 0;
    while (*q == '_' || (*q >= 'A' && *q <= 'Z') || (*q >= 'a' && *q <= 'z') ||
           (*q >= '0' && *q <= '9'))
        q++;
    return *q == close ? (size_t)(q + 1 - p) : 0;
}

/* The length of a back-reference by name ("\k<n>", "\k'n'", "\k{n}",
 * "\g{n}", "(?P=n)") at p, 0 when p is not one. */
static size_t named_backref(const char *p)
{
    const char *q;
    char close;

    if (p[0] == '(' && p[1] == '?' && p[2] == 'P' && p[3] == '=') {
        q = p + 4;
        close = ')';
    } else if (p[0] == '\\' && (p[1] == 'k' || p[1] == 'g') &&
               (p[2] == '<' || p[2] == '\'' || p[2] == '{')) {
        if (p[1] == 'g' && p[2] != '{')
            return 0;
        close = p[2] == '<' ? '>' : p[2] == '{' ? '}' : '\'';
        q = p + 3;
    } else {
        return 0;
    }
    if (!(*q == '_' || (*q >= 'A' && *q <= 'Z') || (*q >= 'a' && *q <= 'z')))
        return 0; /* \g{1}: a number, which Hyperscan reads itself */
    while (*q == '_' || (*q >= 'A' && *q <= 'Z') || (*q >= 'a' && *q <= 'z') ||
           (*q >= '0' && *q <= '9'))
        q++;
    return *q == close ? (size_t)(q + 1 - p) : 0;
}

/* Hyperscan reads PCRE syntax but refuses two groups of one name (PCRE2's
 * (?J)) and has no use for names: groups become plain groups. A
 * back-reference by name becomes "anything": in prefilter mode a pattern
 * may match more than the original, never less. Escapes, \Q...\E and
 * character classes are copied as they are. */
const char *pfl_rewrite(const char *pat, char *buf, size_t len)
{
    const char *p = pat;
    size_t at = 0, k;

    if (!strncmp(p, "(?J)", 4))
        p += 4;
    while (*p) {
        const char *from = p;

        if ((k = named_backref(p)) > 0) {
            if (at + 7 >= len)
                return NULL;
            memcpy(buf + at, "(?s:.*)", 7);
            at += 7;
            p += k;
            continue;
        }
        if (p[0] == '\\' && p[1] == 'Q') {
            const char *e = strstr(p + 2, "\\E");
            p = e ? e + 2 : p + strlen(p);
        } else if (p[0] == '\\') {
            p += p[1] ? 2 : 1;
        } else if (p[0] == '[') {
            p++;
            if (*p == '^')
                p++;
            if (*p == ']')
                p++;
            while (*p && *p != ']')
                p += (p[0] == '\\' && p[1]) ? 2 : 1;
            if (*p)
                p++;
        } else if ((k = named_opener(p)) > 0) {
            if (at + 1 >= len)
                return NULL;
            buf[at++] = '(';
            p += k;
            continue;
        } else {
            p++;
        }
        if (at + (size_t)(p - from) >= len)
            return NULL;
        memcpy(buf + at, from, (size_t)(p - from));
        at += (size_t)(p - from);
    }
    buf[at] = '\0';
    return buf;
}

static void mark(pfl_ctx *x, unsigned id)
{
    if (!x->may[id]) {
        x->may[id] = 1;
        x->hits[x->nhits++] = id;
    }
}

static int on_match(unsigned id, unsigned long long from,
                    unsigned long long to, unsigned flags, void *ctx)
{
    (void)from;
    (void)to;
    (void)flags;
    mark(ctx, id);
    return 0;
}

/* A source's patterns, rewritten for Hyperscan, with their indexes:
 * a pattern's required literals (several entries of its index), or the
 * pattern itself in prefilter mode. */
struct batch {
    size_t n, cap;
    const char **pats;
    char **bufs;
    unsigned *ids, *flags;
};

static void batch_free(struct batch *b, size_t cap)
{
    for (size_t i = 0; b->bufs && i < cap; i++)
        free(b->bufs[i]);
    free(b->bufs);
    free(b->pats);
    free(b->ids);
    free(b->flags);
}

/* A literal as a Hyperscan pattern: every byte but letters and digits
 * escaped. */
static char *literal_pattern(const char *lit)
{
    size_t n = strlen(lit);
    char *out = malloc(4 * n + 1), *o = out;

    if (!out)
        return NULL;
    for (const unsigned char *c = (const unsigned char *)lit; *c; c++) {
        if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
            (*c >= '0' && *c <= '9'))
            *o++ = (char)*c;
        else
            o += sprintf(o, "\\x%02x", *c);
    }
    *o = '\0';
    return out;
}

/* Pattern i's required literals into b, when it has good ones: 1 when
 * added, 0 when it goes in whole, -1 out of memory. */
static int batch_literals(struct batch *b, const char *pat, unsigned i)
{
    lx_set ls;

    if (lx_required(pat, &ls) < PFL_MIN_LITERAL)
        return 0;
    for (size_t k = 0; k < ls.n; k++) {
        if (!(b->bufs[b->n] = literal_pattern(ls.lit[k])))
            return -1;
        b->pats[b->n] = b->bufs[b->n];
        b->ids[b->n] = i;
        b->flags[b->n] = HS_FLAG_SINGLEMATCH |
                         (ls.caseless ? HS_FLAG_CASELESS : 0);
        b->n++;
    }
    return 1;
}

/* Collects src's patterns into b and their fingerprint into p->fp[src];
 * the source's patterns start as always candidates in base. A pattern
 * too long to rewrite stays one. */
static int batch_fill(pfl *p, struct batch *b, const char *const *pats,
                      const unsigned *sources, int src)
{
    uint64_t h = HASH_FNV_SEED;
    const char *ver = hs_version();
    char num[32];

    h = hash_fnv1a(h, ver, strlen(ver) + 1);
    snprintf(num, sizeof num, "%d/%zu/%d", src, p->n, PFL_MIN_PATTERNS);
    h = hash_fnv1a(h, num, strlen(num) + 1);
    b->cap = p->n * LX_MAX_LITS + 1;
    if (!(b->pats = calloc(b->cap, sizeof *b->pats)) ||
        !(b->bufs = calloc(b->cap, sizeof *b->bufs)) ||
        !(b->ids = calloc(b->cap, sizeof *b->ids)) ||
        !(b->flags = calloc(b->cap, sizeof *b->flags)))
        return -1;
    for (size_t i = 0; i < p->n; i++) {
        size_t len, from = b->n;
        int lits;

        if (!(sources[i] & (1u << src)) || !pats[i])
            continue;
        p->base[src][i] = 1;
        if ((lits = batch_literals(b, pats[i], (unsigned)i)) < 0)
            return -1;
        if (lits) {
            snprintf(num, sizeof num, "%zu", i);
            h = hash_fnv1a(h, num, strlen(num) + 1);
            for (size_t k = from; k < b->n; k++)
                h = hash_fnv1a(h, b->bufs[k], strlen(b->bufs[k]) + 1);
            continue;
        }
        len = strlen(pats[i]) + 1;
        if (!(b->bufs[b->n] = malloc(len)))
            return -1;
        if (!pfl_rewrite(pats[i], b->bufs[b->n], len)) {
            free(b->bufs[b->n]);
            b->bufs[b->n] = NULL;
            continue;
        }
        snprintf(num, sizeof num, "%zu", i);
        h = hash_fnv1a(h, num, strlen(num) + 1);
        h = hash_fnv1a(h, b->bufs[b->n], strlen(b->bufs[b->n]) + 1);
        b->pats[b->n] = b->bufs[b->n];
        b->ids[b->n] = (unsigned)i;
        b->flags[b->n] = HS_FLAG_PREFILTER | HS_FLAG_SINGLEMATCH |
                         HS_FLAG_ALLOWEMPTY;
        b->n++;
    }
    p->fp[src] = h;
    return 0;
}

/* A database compiled for other CPU features is refused at scan time:
 * probe it once (no callback: matches are not wanted). */
static int usable(const hs_database_t *db)
{
    hs_scratch_t *s = NULL;
    int ok = hs_alloc_scratch(db, &s) == HS_SUCCESS &&
             hs_scan(db, "", 0, 0, s, NULL, NULL) == HS_SUCCESS;

    hs_free_scratch(s);
    return ok;
}

/* Takes src's database from pre when it was compiled from the same
 * patterns; 1 when taken. */
static int take_pre(pfl *p, const pfl_pre *pre, int src)
{
    hs_database_t *db = NULL;

    if (!pre || pre->n != p->n || pre->fp[src] != p->fp[src] ||
        !pre->db[src] || !pre->held[src])
        return 0;
    if (hs_deserialize_database((const char *)pre->db[src], pre->len[src],
                                &db) != HS_SUCCESS)
        return 0;
    if (!usable(db)) {
        hs_free_database(db);
        return 0;
    }
    for (size_t i = 0; i < p->n; i++)
        if (pre->held[src][i])
            p->base[src][i] = 0;
    p->db[src] = db;
    return 1;
}

/* Compiles b; a pattern Hyperscan refuses is dropped (it stays an always
 * candidate) and the rest compiled again. */
static void compile(pfl *p, struct batch *b, int src)
{
    while (b->n > 0) {
        hs_compile_error_t *ce = NULL;
        int bad;

        if (hs_compile_multi(b->pats, b->flags, b->ids, (unsigned)b->n,
                             HS_MODE_BLOCK, NULL, &p->db[src], &ce) ==
            HS_SUCCESS)
            break;
        p->db[src] = NULL;
        bad = ce ? ce->expression : -1;
        hs_free_compile_error(ce);
        if (bad < 0 || (size_t)bad >= b->n) /* not one pattern's fault */
            return;
        memmove(&b->pats[bad], &b->pats[bad + 1],
                (b->n - (size_t)bad - 1) * sizeof *b->pats);
        memmove(&b->ids[bad], &b->ids[bad + 1],
                (b->n - (size_t)bad - 1) * sizeof *b->ids);
        memmove(&b->flags[bad], &b->flags[bad + 1],
                (b->n - (size_t)bad - 1) * sizeof *b->flags);
        b->n--;
    }
    if (p->db[src])
        for (size_t j = 0; j < b->n; j++)
            p->base[src][b->ids[j]] = 0;
}

static int build_source(pfl *p, const char *const *pats,
                        const unsigned *sources, const pfl_pre *pre, int src)
{
    struct batch b = {0};
    int rc = -1;

    if (batch_fill(p, &b, pats, sources, src))
        goto out;
    rc = 0;
    if (b.n < PFL_MIN_PATTERNS)
        goto out;
    if (take_pre(p, pre, src))
        p->reused++;
    else
        compile(p, &b, src);
    p->ndb += p->db[src] != NULL;
out:
    batch_free(&b, b.cap);
    return rc;
}

pfl *pfl_new(const char *const *pats, const unsigned *sources, size_t n,
             const pfl_pre *pre, cs_err *err)
{
    pfl *p = calloc(1, sizeof *p);
    int fast = hs_valid_platform() == HS_SUCCESS;

    if (!p)
        goto oom;
    p->n = n;
    for (int s = 0; s < SRC__COUNT; s++) {
        if (!(p->base[s] = calloc(n ? n : 1, 1)))
            goto oom;
        if (!fast) { /* no SSSE3: every pattern is tried in turn */
            for (size_t i = 0; i < n; i++)
                p->base[s][i] = (sources[i] & (1u << s)) != 0;
        } else if (build_source(p, pats, sources, pre, s)) {
            goto oom;
        }
    }
    for (size_t i = 0; i < n; i++) {
        int any = 0;
        for (int s = 0; s < SRC__COUNT; s++)
            any |= p->base[s][i];
        p->always += (size_t)any;
    }
    for (int s = 0; s < SRC__COUNT; s++) {
        if (!(p->always_ids[s] = calloc(n ? n : 1, sizeof *p->always_ids[s])))
            goto oom;
        for (size_t i = 0; i < n; i++)
            if (p->base[s][i])
                p->always_ids[s][p->nalways[s]++] = (unsigned)i;
    }
    return p;
oom:
    cs_err_set(err, "prefilter: out of memory");
    pfl_free(p);
    return NULL;
}

void pfl_free(pfl *p)
{
    if (!p)
        return;
    for (int s = 0; s < SRC__COUNT; s++) {
        hs_free_database(p->db[s]);
        free(p->base[s]);
        free(p->always_ids[s]);
    }
    free(p);
}

size_t pfl_always(const pfl *p)
{
    return p->always;
}

int pfl_bypassed(const pfl *p, size_t i)
{
    for (int s = 0; s < SRC__COUNT; s++)
        if (p->db[s] && p->base[s][i])
            return 1;
    return 0;
}

int pfl_reused(const pfl *p)
{
    return p->reused;
}

int pfl_databases(const pfl *p)
{
    return p->ndb;
}

static void write_bytes(FILE *out, const char *name, int s,
                        const unsigned char *d, size_t len)
{
    fprintf(out, "static const unsigned char %s%d[] = {", name, s);
    for (size_t i = 0; i < len; i++)
        fprintf(out, "%s%u,", i % 24 ? "" : "\n", d[i]);
    fprintf(out, "\n};\n");
}

int pfl_write_c(const pfl *p, FILE *out, cs_err *err)
{
    size_t len[SRC__COUNT] = {0};

    fprintf(out, "/* Generated when cascade is built (pfl_gen): the built-in "
                 "rule set's\n * prefilter databases, Hyperscan %s. */\n"
                 "#include \"rules/prefilter.h\"\n\n", hs_version());
    for (int s = 0; s < SRC__COUNT; s++) {
        char *bytes = NULL;
        unsigned char *held;

        if (!p->db[s])
            continue;
        if (hs_serialize_database(p->db[s], &bytes, &len[s]) != HS_SUCCESS) {
            cs_err_set(err, "prefilter: cannot serialize source %d", s);
            return -1;
        }
        write_bytes(out, "db", s, (const unsigned char *)bytes, len[s]);
        free(bytes);
        if (!(held = malloc(p->n ? p->n : 1))) {
            cs_err_set(err, "prefilter: out of memory");
            return -1;
        }
        for (size_t i = 0; i < p->n; i++)
            held[i] = !p->base[s][i];
        write_bytes(out, "held", s, held, p->n);
        free(held);
    }
    fprintf(out, "\nstatic const pfl_pre pre = {\n    .n = %zu,\n", p->n);
    for (int s = 0; s < SRC__COUNT; s++)
        if (p->db[s])
            fprintf(out, "    .fp[%d] = 0x%016llxULL,\n    .db[%d] = db%d,\n"
                         "    .len[%d] = %zu,\n    .held[%d] = held%d,\n",
                    s, (unsigned long long)p->fp[s], s, s, s, len[s], s, s);
    fprintf(out, "};\n\nconst pfl_pre *pfl_embedded(void)\n{\n"
                 "    return &pre;\n}\n");
    return ferror(out) ? (cs_err_set(err, "prefilter: write failed"), -1) : 0;
}

pfl_ctx *pfl_ctx_new(const pfl *p, cs_err *err)
{
    pfl_ctx *x = calloc(1, sizeof *x);

    if (!x || !(x->may = calloc(p->n ? p->n : 1, 1)) ||
        !(x->hits = calloc(p->n ? p->n : 1, sizeof *x->hits)))
        goto fail;
    x->p = p;
    for (int s = 0; s < SRC__COUNT; s++)
        if (p->db[s] && hs_alloc_scratch(p->db[s], &x->scratch) != HS_SUCCESS)
            goto fail;
    return x;
fail:
    cs_err_set(err, "prefilter: out of memory");
    pfl_ctx_free(x);
    return NULL;
}

void pfl_ctx_free(pfl_ctx *x)
{
    if (!x)
        return;
    hs_free_scratch(x->scratch);
    free(x->may);
    free(x->hits);
    free(x);
}

const unsigned char *pfl_scan(pfl_ctx *x, int source, const char *text,
                              size_t len)
{
    const pfl *p = x->p;

    if (x->nhits > p->n)
        memset(x->may, 0, p->n);
    else
        for (size_t i = 0; i < x->nhits; i++)
            x->may[x->hits[i]] = 0;
    x->nhits = 0;
    if (source < 0 || source >= SRC__COUNT)
        return x->may;
    for (size_t i = 0; i < p->nalways[source]; i++)
        mark(x, p->always_ids[source][i]);
    if (p->db[source] &&
        hs_scan(p->db[source], text, (unsigned)len, 0, x->scratch, on_match,
                x) != HS_SUCCESS) {
        memset(x->may, 1, p->n);
        x->nhits = p->n + 1;
    }
    return x->may;
}

const unsigned *pfl_hits(pfl_ctx *x, size_t *n)
{
    if (x->nhits > x->p->n)
        return NULL;
    for (size_t k = 1; k < x->nhits; k++) { /* insertion sort: k is small */
        unsigned v = x->hits[k];
        size_t j = k;
        for (; j > 0 && x->hits[j - 1] > v; j--)
            x->hits[j] = x->hits[j - 1];
        x->hits[j] = v;
    }
    *n = x->nhits;
    return x->hits;
}
