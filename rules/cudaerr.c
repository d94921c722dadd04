#include "rules/cudaerr.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const ce_error table[] = {
#include "rules/cudaerr_table.h"
};
#define NCODES (sizeof table / sizeof *table)

/* Runtime codes under 100 that CUDA before 10.1 numbered the same (the
 * renumbering moved the rest): a bare number elsewhere under 100 may be
 * an older release's other code. */
static const int stable_low[] = {2,  3,  12, 13, 16, 17, 18, 19, 20, 21, 22,
                                 23, 24, 25, 26, 27, 28, 31, 32, 35, 37, 43,
                                 44, 45, 46, 49};

static const ce_error *by_code(long code)
{
    for (size_t i = 0; i < NCODES; i++)
        if (table[i].code == code)
            return &table[i];
    return NULL;
}

/* An identifier at p (letters, digits, '_') equal to name. */
static int ident_is(const char *p, const char *name)
{
    size_t n = strlen(name);
    return !strncmp(p, name, n) && !isalnum((unsigned char)p[n]) && p[n] != '_';
}

static const ce_error *by_name(const char *p, int drv)
{
    for (size_t i = 0; i < NCODES; i++) {
        const char *n = drv ? table[i].drv : table[i].rt;
        if (n && ident_is(p, n))
            return &table[i];
    }
    return NULL;
}

/* The code whose text starts at p (a longer one first: "unspecified
 * launch failure in prior launch" before "unspecified launch failure"),
 * of at least min bytes. */
static const ce_error *by_text(const char *p, size_t min)
{
    const ce_error *best = NULL;
    size_t blen = 0;

    for (size_t i = 0; i < NCODES; i++) {
        size_t n;
        if (table[i].text[0] != *p)
            continue;
        n = strlen(table[i].text);
        if (n >= min && n > blen && !strncmp(p, table[i].text, n)) {
            best = &table[i];
            blen = n;
        }
    }
    return best;
}

/* word (lower case) in s, any case: a first-letter test a byte, the
 * rest only where it passes (most lines hold no "cuda" at all) */
static const char *find_ci(const char *s, const char *word)
{
    size_t n = strlen(word);

    for (; *s; s++)
        if ((*s | 0x20) == word[0] && !strncasecmp(s, word, n))
            return s;
    return NULL;
}

static int stable_number(long n)
{
    if (n >= 100)
        return 1;
    for (size_t i = 0; i < sizeof stable_low / sizeof *stable_low; i++)
        if (stable_low[i] == n)
            return 1;
    return 0;
}

/* After "error" or "failure" at p: separators, maybe a number (bare or in
 * parentheses), separators, then maybe a code's text. *num gets the
 * number (-1: none); the text's code, or NULL. */
static const ce_error *after_word(const char *p, long *num)
{
    char *end;

    *num = -1;
    p += strspn(p, " \t:=#(");
    if (isdigit((unsigned char)*p)) {
        *num = strtol(p, &end, 10);
        p = end + strspn(end, ") \t:=-'\"(");
        if (*p == '(' || *p == ',') /* "code=2(cudaError..." has the name */
            return NULL;
    } else {
        p += strspn(p, "'\"");
    }
    return by_text(p, 1);
}

/* "CUDA error: text", "Cuda failure 2 'text'", "cuda runtime error (2) :
 * text", torch's "Error 803: text": a code's text after an error word, or
 * a bare number right after CUDA's own. */
static const ce_error *by_words(const char *line)
{
    static const char *const words[] = {"error", "failure"};
    const ce_error *e;
    long num;

    for (size_t w = 0; w < 2; w++)
        for (const char *p = find_ci(line, words[w]); p;
             p = find_ci(p + 1, words[w]))
            if ((e = after_word(p + strlen(words[w]), &num)))
                return e;
    /* a number alone: only after "CUDA [runtime|driver] error|failure",
     * and one older releases gave another meaning only when the line
     * also holds its text ("CUDA error 34 in file F line 164: CUDA driver
     * is a stub library") */
    for (const char *p = find_ci(line, "cuda"); p; p = find_ci(p + 4, "cuda")) {
        const char *q = p + 4;
        if (!strncasecmp(q, " runtime ", 9))
            q += 8;
        else if (!strncasecmp(q, " driver ", 8))
            q += 7;
        if (*q != ' ')
            continue;
        q++;
        for (size_t w = 0; w < 2; w++)
            if (!strncasecmp(q, words[w], strlen(words[w]))) {
                after_word(q + strlen(words[w]), &num);
                if (num > 0 && (e = by_code(num)) &&
                    (stable_number(num) || strstr(q, e->text)))
                    return e;
            }
    }
    return NULL;
}

/* A long text after any ": " (a check macro's "(803 vs. 0) : text", a
 * binding's "cuCtxEnablePeerAccess failed: text"): long enough to say
 * CUDA alone, where "out of memory" or "invalid argument" would not. */
#define CE_TEXT_ALONE 17

static const ce_error *after_colon(const char *line)
{
    const ce_error *e;

    for (const char *p = strstr(line, ": "); p; p = strstr(p + 2, ": "))
        if ((e = by_text(p + 2, CE_TEXT_ALONE)))
            return e;
    return NULL;
}

/* Whether the line may report a CUDA error at all: it says "cuda" in any
 * case, or names a driver API call ("cuInit", "cuCtxEnablePeerAccess").
 * Most lines do neither; strchr finds the few 'c's fast. */
static int may_report(const char *line)
{
    for (const char *p = strchr(line, 'c'); p; p = strchr(p + 1, 'c')) {
        if ((p[1] | 0x20) != 'u')
            continue;
        if ((p[2] | 0x20) == 'd' && (p[3] | 0x20) == 'a')
            return 1;
        if (p[1] == 'u' && isupper((unsigned char)p[2]) &&
            (p == line || !isalnum((unsigned char)p[-1])))
            return 1;
    }
    for (const char *p = strchr(line, 'C'); p; p = strchr(p + 1, 'C'))
        if ((p[1] | 0x20) == 'u' && (p[2] | 0x20) == 'd' && (p[3] | 0x20) == 'a')
            return 1;
    return 0;
}

int ce_find(const char *line, ce_error *out)
{
    const ce_error *e = NULL;
    const char *p;

    /* every form says "cuda" in some case or names a driver call. PyTorch 0.x's
     * "THCudaCheck FAIL ... error=2 : out of memory" is the warning
     * before it raises the same error: the exception line, after the
     * traceback that tells the pass, reports it. */
    if (!may_report(line) || strstr(line, "THCudaCheck FAIL"))
        return 0;
    for (p = strstr(line, "cudaError"); p && !e; p = strstr(p + 9, "cudaError"))
        e = by_name(p, 0);
    for (p = strstr(line, "CUDA_ERROR_"); p && !e; p = strstr(p + 11, "CUDA_ERROR_"))
        e = by_name(p, 1);
    if (!e)
        e = by_words(line);
    if (!e)
        e = after_colon(line);
    if (!e)
        return 0;
    *out = *e;
    return 1;
}

size_t ce_canon(const char *line, char *buf, size_t len)
{
    ce_error e;
    int n;

    if (!ce_find(line, &e))
        return 0;
    n = snprintf(buf, len, "CUDA error %d (%s%s%s): %s", e.code,
                 e.rt ? e.rt : "", e.rt && e.drv ? ", " : "",
                 e.drv ? e.drv : "", e.text);
    return n > 0 && (size_t)n < len ? (size_t)n : 0;
}
