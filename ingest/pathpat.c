#include "ingest/pathpat.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* A pattern is kept as its text with each capture replaced by one byte
 * that cannot be in a path given here (they are control characters,
 * refused on compile). */
enum { CAP_JOB = 1, CAP_RANK = 2, CAP_HOST = 3 };

struct pp_pattern {
    char *code; /* literal bytes, '*', '?', CAP_* */
    char *glob;
    char *root;
};

static const struct {
    const char *name;
    char code;
} captures[] = {{"{job}", CAP_JOB}, {"{rank}", CAP_RANK}, {"{host}", CAP_HOST}};

static int compile_into(pp_pattern *p, const char *s, cs_err *err)
{
    size_t n = 0, g = 0;
    int seen[4] = {0};

    for (size_t i = 0; s[i]; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 0x20 || ch == 0x7f) {
            cs_err_set(err, "column %zu: a control character", i + 1);
            return -1;
        }
        if (ch == '[' || ch == ']' || ch == '\\' || ch == '}') {
            cs_err_set(err, "column %zu: '%c' is not part of a pattern "
                       "(only *, ? and {job}, {rank}, {host})", i + 1, ch);
            return -1;
        }
        if (ch != '{') {
            p->code[n++] = (char)ch;
            p->glob[g++] = (char)ch;
            continue;
        }
        size_t k = 0;
        while (k < 3 && strncmp(s + i, captures[k].name,
                                strlen(captures[k].name)))
            k++;
        if (k == 3) {
            cs_err_set(err, "column %zu: a capture is {job}, {rank} or "
                       "{host}", i + 1);
            return -1;
        }
        if (seen[(int)captures[k].code]++) {
            cs_err_set(err, "column %zu: %s given twice", i + 1,
                       captures[k].name);
            return -1;
        }
        p->code[n++] = captures[k].code;
        p->glob[g++] = '*';
        i += strlen(captures[k].name) - 1;
    }
    p->code[n] = p->glob[g] = '\0';
    if (!n) {
        cs_err_set(err, "the pattern is empty");
        return -1;
    }
    return 0;
}

/* The directory before the first special byte. */
static char *root_of(const char *code)
{
    size_t first = strcspn(code, "*?\x01\x02\x03"), slash = first;
    char *r;

    while (slash > 0 && code[slash - 1] != '/')
        slash--;
    if (slash == 0)
        return strdup(code[0] == '/' ? "/" : ".");
    if (!(r = strndup(code, slash > 1 ? slash - 1 : 1)))
        return NULL;
    return r;
}

pp_pattern *pp_compile(const char *pattern, cs_err *err)
{
    pp_pattern *p = calloc(1, sizeof *p);
    size_t len = strlen(pattern);

    if (len >= PATH_MAX) {
        cs_err_set(err, "the pattern is longer than %d bytes", PATH_MAX - 1);
        free(p);
        return NULL;
    }
    if (!p || !(p->code = malloc(len + 1)) || !(p->glob = malloc(len + 1))) {
        cs_err_set(err, "out of memory");
        goto fail;
    }
    if (compile_into(p, pattern, err))
        goto fail;
    if (!(p->root = root_of(p->code))) {
        cs_err_set(err, "out of memory");
        goto fail;
    }
    return p;
fail:
    pp_free(p);
    return NULL;
}

void pp_free(pp_pattern *p)
{
    if (!p)
        return;
    free(p->code);
    free(p->glob);
    free(p->root);
    free(p);
}

const char *pp_glob(const pp_pattern *p)
{
    return p->glob;
}

const char *pp_root(const pp_pattern *p)
{
    return p->root;
}

/* Where a capture's text goes. */
static int capture(pp_capture *c, char code, const char *s, size_t n)
{
    char *dst = code == CAP_HOST ? c->host : c->job;
    size_t cap = code == CAP_HOST ? sizeof c->host : sizeof c->job;

    if (code == CAP_RANK) {
        long v = 0;
        for (size_t i = 0; i < n; i++) {
            if (s[i] < '0' || s[i] > '9' || (v = v * 10 + (s[i] - '0')) >
                                                1000000)
                return 0;
        }
        c->rank = (int)v;
        return 1;
    }
    if (n >= cap)
        return 0;
    memcpy(dst, s, n);
    dst[n] = '\0';
    return 1;
}

/* Backtracking over '*' and the captures, each a run of characters
 * other than '/'. Whether the rest matches from a pair of places does
 * not depend on how they were reached, so a failed pair is remembered
 * (one bit each): the work is at most the pattern's length times the
 * path's, whatever the path, not a power of it. */
typedef struct matcher {
    const char *code, *path;
    size_t ns; /* strlen(path) + 1 */
    unsigned char *failed;
    pp_capture *c;
} matcher;

static int match_at(matcher *m, size_t ci, size_t si)
{
    const char *s = m->path + si;
    size_t bit = ci * m->ns + si;

    if (m->failed[bit / 8] & (1u << (bit % 8)))
        return 0;
    for (const char *code = m->code + ci; *code; code++, s++) {
        char k = *code;
        if (k == '*' || k == CAP_JOB || k == CAP_RANK || k == CAP_HOST) {
            size_t run = strcspn(s, "/");
            for (size_t n = k == '*' ? 0 : 1; n <= run; n++) {
                if (k != '*' && !capture(m->c, k, s, n))
                    continue;
                if (match_at(m, (size_t)(code + 1 - m->code),
                             (size_t)(s + n - m->path)))
                    return 1;
            }
            goto fail;
        }
        if (!*s || *s == '/' ? k != *s : (k != '?' && k != *s))
            goto fail;
    }
    if (*s == '\0')
        return 1;
fail:
    m->failed[bit / 8] |= (unsigned char)(1u << (bit % 8));
    return 0;
}

int pp_match(const pp_pattern *p, const char *path, pp_capture *c)
{
    pp_capture local;
    matcher m = {p->code, path, strlen(path) + 1, NULL, c ? c : &local};
    size_t bits = (strlen(p->code) + 1) * m.ns;
    int ok = 0;

    memset(m.c, 0, sizeof *m.c);
    m.c->rank = -1;
    if (m.ns <= PATH_MAX && (m.failed = calloc(bits / 8 + 1, 1)))
        ok = match_at(&m, 0, 0);
    free(m.failed);
    if (!ok) {
        memset(m.c, 0, sizeof *m.c);
        m.c->rank = -1;
    }
    return ok;
}
