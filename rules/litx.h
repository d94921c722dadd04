/* Required literals of a regular expression: a few strings, one of which
 * is in every text the pattern matches (at least one; the pattern may
 * need more). The prefilter scans for these instead of an approximation
 * of the whole pattern: a literal matcher is several times faster than
 * the automata a pattern's classes and repeats compile to, and it can
 * only report more candidates than the pattern has, never fewer.
 *
 * The reader knows PCRE2's syntax as the rule files use it: literal text
 * and its escapes, classes, groups of every kind, alternation, repeats,
 * lookarounds (which require nothing) and inline flags (a caseless flag
 * anywhere makes every literal caseless: more candidates, none missed).
 * What it does not know (\Q...\E, extended mode, conditionals,
 * recursion, verbs) gives no literals, and the caller falls back to the
 * whole pattern. */
#ifndef CS_LITX_H
#define CS_LITX_H

#include <stddef.h>

#define LX_MAX_LITS 16  /* more alternatives than this: none kept */
#define LX_MAX_LEN 64   /* a longer run is cut (a part is as required) */

typedef struct lx_set {
    size_t n;
    char lit[LX_MAX_LITS][LX_MAX_LEN + 1];
    int caseless;
} lx_set;

/* Fills out with the literals pat requires; returns the length of the
 * shortest (0 when it requires none that this reader can prove). */
size_t lx_required(const char *pat, lx_set *out);

#endif
