/* Prefilter: which signatures may match a line, from one Hyperscan scan.
 *
 * The classifier takes the first signature of a source, in catalog order,
 * whose PCRE2 pattern matches. Trying every pattern in turn costs a PCRE2
 * call per signature per line, and most lines (noise) match none. Here
 * each source's patterns are compiled into one Hyperscan database: a
 * pattern's required literals (rules/litx.h) where it has long enough
 * ones, else the pattern in prefilter mode. Either may report a pattern
 * that does not match but never misses one that does; PCRE2 then confirms only the candidates, in order,
 * and takes the fields. A pattern Hyperscan cannot compile (a
 * back-reference, a construct it lacks) is always a candidate, so the
 * answer never depends on Hyperscan's syntax.
 *
 * Hyperscan compiles slowly (about 100 ms for the built-in app patterns),
 * so the databases of the built-in rule set are compiled when cascade is
 * built and embedded (pfl_embedded); a rule set that differs is compiled
 * when it is loaded. A source with fewer than PFL_MIN_PATTERNS patterns
 * gets no database: trying a few patterns in turn costs less than a scan
 * plus the compile. */
#ifndef CS_PREFILTER_H
#define CS_PREFILTER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/err.h"
#include "core/signal.h"

#define PFL_MIN_PATTERNS 4
/* A pattern whose required literals (rules/litx.h) are all this long or
 * longer is scanned for those; else for itself, in prefilter mode. */
#define PFL_MIN_LITERAL 4

/* Compiled databases: immutable once built, shared by the classifiers of
 * one rule set. */
typedef struct pfl pfl;
/* One user's scratch space and answer buffer: not shared. */
typedef struct pfl_ctx pfl_ctx;

/* Databases compiled ahead, per source: a fingerprint of the patterns they
 * were compiled from, the serialized database, and which patterns it holds
 * (1) or left out (0: always candidates). */
typedef struct pfl_pre {
    size_t n;
    uint64_t fp[SRC__COUNT];
    const unsigned char *db[SRC__COUNT];
    size_t len[SRC__COUNT];
    const unsigned char *held[SRC__COUNT];
} pfl_pre;

/* The built-in rule set's databases, compiled at build time; NULL in the
 * tool that compiles them. */
const pfl_pre *pfl_embedded(void);

/* Builds the databases for patterns pats[0..n), each read by the sources
 * in its bit set (1u << sig_source). A source whose fingerprint matches
 * pre (may be NULL) is taken from it; the others are compiled. NULL with
 * the reason in err only when out of memory. */
pfl *pfl_new(const char *const *pats, const unsigned *sources, size_t n,
             const pfl_pre *pre, cs_err *err);
void pfl_free(pfl *p);

/* Patterns some source always tries (held by none of its databases). */
size_t pfl_always(const pfl *p);
/* Whether pattern i is tried on every line of a source that has a
 * database (Hyperscan could not hold it): its cost is never filtered. */
int pfl_bypassed(const pfl *p, size_t i);
/* Sources whose database came from pre, not from a compile. */
int pfl_reused(const pfl *p);
/* Sources with a database. */
int pfl_databases(const pfl *p);

/* Writes the databases as C source defining pfl_embedded(). */
int pfl_write_c(const pfl *p, FILE *out, cs_err *err);

pfl_ctx *pfl_ctx_new(const pfl *p, cs_err *err);
void pfl_ctx_free(pfl_ctx *x);

/* One byte per pattern: 1 where the pattern, read by source, may match
 * text[0..len), 0 elsewhere. Valid until the next scan with x. A scan
 * error marks every pattern. */
const unsigned char *pfl_scan(pfl_ctx *x, int source, const char *text,
                              size_t len);
/* The patterns the last scan marked, in their order, *n of them; NULL
 * when it marked every pattern. */
const unsigned *pfl_hits(pfl_ctx *x, size_t *n);

/* The pattern as handed to Hyperscan (named groups unnamed, a leading
 * (?J) dropped), into buf; NULL when it does not fit. */
const char *pfl_rewrite(const char *pattern, char *buf, size_t len);

#endif
