/* What `cascade rules check` warns of in a signature's pattern, beyond
 * whether it compiles (rules/playbooks.h pb_catalog_lint). */
#include "rules/playbooks.h"

#include <stdio.h>
#include <string.h>
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "rules/catalog_priv.h"

/* Nested unbounded quantifiers, (a+)+ or (?:\s*\w+)*: a line that almost
 * matches makes PCRE2 try every way of splitting it between the two, a
 * count that doubles per character, until the match limit gives up and
 * the line counts as no match. Scans the pattern as text: escapes and
 * character classes skipped, atomic groups and possessive quantifiers
 * (which do not backtrack) not counted. 1 when found. */
#define LINT_MAX_NEST 64

static size_t skip_class(const char *p)
{
    size_t i = 1;

    if (p[i] == '^')
        i++;
    if (p[i] == ']')
        i++;
    while (p[i] && p[i] != ']')
        i += p[i] == '\\' && p[i + 1] ? 2 : 1;
    return p[i] ? i + 1 : i;
}

/* The quantifier at p: its length, 0 for none; *unbounded and
 * *possessive say what it is. */
static size_t quantifier(const char *p, int *unbounded)
{
    size_t n = 0;

    *unbounded = 0;
    if (*p == '*' || *p == '+') {
        *unbounded = 1;
        n = 1;
    } else if (*p == '?') {
        n = 1;
    } else if (*p == '{') {
        const char *close = strchr(p, '}');
        const char *comma = strchr(p, ',');
        if (!close || strspn(p + 1, "0123456789,") != (size_t)(close - p - 1))
            return 0;
        *unbounded = comma && comma < close && comma + 1 == close;
        n = (size_t)(close - p) + 1;
    }
    if (n && (p[n] == '+' || p[n] == '?')) {
        if (p[n] == '+')
            *unbounded = 0; /* possessive: gives nothing back */
        n++;
    }
    return n;
}

static int nested_quantifiers(const char *pat)
{
    int inner[LINT_MAX_NEST] = {0}, atomic[LINT_MAX_NEST] = {0}, depth = 0;
    int unbounded, last = 0; /* the item before: 1 a group with one inside */

    for (size_t i = 0; pat[i];) {
        size_t q;
        if (pat[i] == '\\') {
            i += pat[i + 1] ? 2 : 1;
            last = 0;
        } else if (pat[i] == '[') {
            i += skip_class(pat + i);
            last = 0;
        } else if (pat[i] == '(') {
            if (++depth >= LINT_MAX_NEST)
                return 0;
            inner[depth] = 0;
            atomic[depth] = !strncmp(pat + i, "(?>", 3);
            i++;
            last = 0;
            continue;
        } else if (pat[i] == ')' && depth > 0) {
            last = inner[depth] && !atomic[depth];
            depth--;
            i++;
        } else {
            i++;
            last = 0;
        }
        if ((q = quantifier(pat + i, &unbounded)) == 0) {
            if (last)
                inner[depth] = 1; /* a group with one inside: so is this */
            continue;
        }
        if (unbounded && last)
            return 1;
        if (unbounded || last)
            inner[depth] = 1;
        i += q;
        last = 0;
    }
    return 0;
}

/* The text says where to look; a run of one character a nested pattern
 * can split many ways confirms it: ch x PROBE_RUN then a byte no pattern
 * wants, alone and after each example, must not reach PROBE_LIMIT steps
 * (a linear pattern takes a few hundred; (a+)+$ takes 2^40). */
#define PROBE_RUN 40
#define PROBE_LIMIT 200000

static int probe_one(const pcre2_code *re, pcre2_match_context *mc,
                     pcre2_match_data *md, const char *head, char ch)
{
    char text[600];
    size_t n = (size_t)snprintf(text, sizeof text - PROBE_RUN - 2, "%s",
                                head ? head : "");
    int rc;

    if (n > sizeof text - PROBE_RUN - 2)
        n = sizeof text - PROBE_RUN - 2;
    memset(text + n, ch, PROBE_RUN);
    text[n + PROBE_RUN] = '\x01';
    rc = pcre2_match(re, (PCRE2_SPTR)text, n + PROBE_RUN + 1, 0, 0, md, mc);
    return rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT ||
           rc == PCRE2_ERROR_HEAPLIMIT || rc == PCRE2_ERROR_JIT_STACKLIMIT;
}

/* The characters to try: those of the examples and a few of every log. */
static int catastrophic(const pb_signature *g)
{
    static const char common[] = "a0 ,.-_:/=x";
    pcre2_match_context *mc = pcre2_match_context_create(NULL);
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(g->re, NULL);
    char chars[256] = {0};
    int hit = 0;

    pcre2_set_match_limit(mc, PROBE_LIMIT);
    pcre2_set_depth_limit(mc, PROBE_LIMIT);
    for (const char *p = common; *p; p++)
        chars[(unsigned char)*p] = 1;
    for (int e = 0; e < g->nexamples; e++)
        for (const char *p = g->examples[e].text; p && *p; p++)
            chars[(unsigned char)*p] = (unsigned char)*p >= ' ';
    for (int ch = 1; ch < 256 && !hit; ch++) {
        if (!chars[ch])
            continue;
        hit = probe_one(g->re, mc, md, NULL, (char)ch);
        for (int e = 0; e < g->nexamples && !hit; e++)
            hit = probe_one(g->re, mc, md, g->examples[e].text, (char)ch);
    }
    pcre2_match_data_free(md);
    pcre2_match_context_free(mc);
    return hit;
}

int pb_catalog_lint(const pb_catalog *c, pb_error_fn fn, void *arg)
{
    char where[300], msg[400];
    int warnings = 0;

    for (size_t i = 0; i < c->nsigs; i++) {
        const pb_signature *g = &c->sigs[i];
        snprintf(where, sizeof where, "%s:%d", g->file, g->line);
        if (g->re && nested_quantifiers(g->match) && catastrophic(g)) {
            snprintf(msg, sizeof msg, "signature %s: match has a quantified "
                     "group with an unbounded quantifier inside ((a+)+): a "
                     "line that almost matches can backtrack until PCRE2's "
                     "match limit and count as no match; make the inner one "
                     "possessive (a++) or the group atomic ((?>...))", g->id);
            warnings++;
            if (fn)
                fn(arg, where, msg);
        }
        if (c->pf && pfl_bypassed(c->pf, i)) {
            snprintf(msg, sizeof msg, "signature %s: the prefilter cannot "
                     "hold this pattern (Hyperscan refuses it), so it is "
                     "tried on every line of its source", g->id);
            warnings++;
            if (fn)
                fn(arg, where, msg);
        }
    }
    return warnings;
}
