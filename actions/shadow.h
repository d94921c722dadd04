/* Shadow mode, scored: what cascade proposed (the actions of the
 * incidents a stream produced) against what the operators really did (a
 * JSON Lines log of their actions). A proposal matches an operator action
 * with the same playbook on the same target (node or job; either side
 * naming none matches any) taken within the window around the incident
 * (from its opening minus the window to its last update plus the window).
 * Each operator action matches one proposal at most, earliest first.
 *
 *   match rate (precision)  matched proposals / proposals
 *   coverage (recall)       matched operator actions / operator actions
 *
 * Operator log lines: {"ts": RFC 3339 or epoch seconds, "playbook":
 * "node.drain", "node": "gpu-020" | "job": "493477", "by": "alice"}. */
#ifndef CS_SHADOW_H
#define CS_SHADOW_H

#include <stdint.h>
#include <stdio.h>

#include "core/err.h"

typedef struct shadow shadow;

shadow *shadow_new(int64_t window_us);
void shadow_free(shadow *s);
/* One incident as `cascade replay` prints it; its actions become
 * proposals. -1 (err says why) when the line is not an incident. */
int shadow_add_incident(shadow *s, const char *line, size_t len, cs_err *err);
/* One line of the operators' log. -1 (err says what is wrong, the caller
 * adds where) for a bad line; blank lines and # comments are skipped. */
int shadow_add_operator(shadow *s, const char *line, size_t len, cs_err *err);

typedef struct shadow_score {
    size_t proposals, operator_actions, matched;
    double match_rate, coverage; /* 0..1; 0 when nothing to divide */
} shadow_score;

void shadow_run(shadow *s, shadow_score *out);
/* The scores, then the proposals nobody acted on and the operator actions
 * cascade did not propose, one per line; as text or one JSON object. */
void shadow_print(const shadow *s, const shadow_score *sc, int json, FILE *f);

#endif
