/* Classifier: turns one normalised signal into facts, the vocabulary the
 * correlation engine reasons with. It does no I/O and keeps only the small
 * state needed to assemble multi-line messages (Python tracebacks) per host,
 * job and rank, driven by event time. */
#ifndef CS_CLASSIFY_H
#define CS_CLASSIFY_H

#include <stdint.h>

#include "core/err.h"
#include "core/signal.h"
#include "rules/fact.h"

typedef struct classifier classifier;
struct pb_catalog;


/* The classifier reads the catalog's signatures; it borrows the catalog,
 * which must outlive it. */
classifier *cls_new(const struct pb_catalog *cat, cs_err *err);
/* Whether lines go through the Hyperscan prefilter (rules/prefilter.h)
 * before PCRE2 (on by default). Off, every signature of the source is
 * tried in turn: the same answers, slower; for tests and benchmarks. */
void cls_prefilter(classifier *c, int on);
void cls_free(classifier *c);
/* Lines PCRE2 gave up on (a signature's pattern hit its match limit):
 * each counts as no match, and is logged with its signature at the 1st,
 * 2nd, 4th... time. */
unsigned long cls_limit_hits(const classifier *c);
/* Moves the open multi-line assemblies of `from` into `to` (a rule set
 * swap keeps what was half-read). */
void cls_take_state(classifier *to, classifier *from);

#define CLS_MAX_FACTS 16
/* Writes up to CLS_MAX_FACTS facts for s into out; returns their count.
 * Lines that belong to an unfinished multi-line message give no fact until
 * the message is complete. */
int cls_classify(classifier *c, const sig *s, fact *out);

/* The collector's filter: whether a text line of this source can matter
 * to the correlator (a signature of the source matches it, or it may be
 * part of a multi-line message the classifier assembles: an NVRM kernel
 * line, a traceback or an indented line of a job). Stateless; what it
 * drops could make no fact. */
int cls_edge_keep(const classifier *c, int source, const char *line);

/* A report (a signature with `report: true`) gives its fact once its
 * indented lines are read: call this before cls_classify with each signal
 * (s), and with s NULL as time passes (now) or at the end of a stream
 * (now = INT64_MAX); a signal ends only reports of its own cluster, whose
 * event time it is, and so does the time of one cluster (cluster, with s
 * NULL; NULL: every cluster's). Each call returns 1 and the fact of one
 * report that s or the time ended, with its head signal (the caller
 * sig_frees it), or 0 when none is left. */
int cls_report_next(classifier *c, const sig *s, const char *cluster,
                    int64_t now, sig *head, fact *out);

/* Multi-line assembly state (a Python traceback whose exception line has
 * not arrived yet) must survive a restart. cls_tb_changes reports each
 * assembly changed since the last call as (key, value), and each one that
 * ended or expired (older than `now` allows) as (key, NULL); keys start
 * with the signal's cluster and '|'. cls_tb_restore takes such a pair back
 * after a restart; -1 when the value is malformed. */
typedef void (*cls_tb_fn)(void *arg, const char *key, const char *value);
/* now_of: the event time of a cluster, by which finished assemblies
 * expire (NULL: none expires). */
typedef int64_t (*cls_clock_fn)(void *arg, const char *cluster);
void cls_tb_changes(classifier *c, cls_clock_fn now_of, cls_tb_fn fn,
                    void *arg);
int cls_tb_restore(classifier *c, const char *key, const char *value);

/* Exposed for tests and fuzzers: the per-format parsers. cls_parse_xid
 * runs the kernel signatures that make xid facts. */
int cls_parse_xid(classifier *c, const char *line, fact *f);
int cls_parse_oom(const classifier *c, const char *line, fact *f);
/* The text a signature of this signal's source reads: the line, or for a
 * Kubernetes event "Reason: message". buf backs it when needed. */
const char *cls_text(const sig *s, char *buf, size_t len);
/* One alert given by its labels (a JSON object), as `rules test` runs an
 * alert example; returns the number of facts (0 or 1). */
int cls_classify_labels(classifier *c, const char *labels_json, fact *out);

#endif
