/* cascade rules: check rule files the way an operator edits them, and run
 * the examples written next to each signature (like promtool's rule
 * tests), so no signature lands without a line it must recognise. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cli.h"
#include "core/signal.h"
#include "rules/classify.h"
#include "rules/playbooks.h"

static void print_error(void *arg, const char *where, const char *msg)
{
    (void)arg;
    fprintf(stderr, "%s: %s\n", where, msg);
}

static void print_warning(void *arg, const char *where, const char *msg)
{
    (void)arg;
    fprintf(stderr, "%s: warning: %s\n", where, msg);
}

static int rules_check(const char *dir)
{
    pb_catalog *c = pb_catalog_new();
    int errors = pb_catalog_load_dir(c, dir, print_error, NULL), warnings;
    size_t n = pb_catalog_count(c), nsig, nplay, ncorr;

    warnings = errors ? 0 : pb_catalog_lint(c, print_warning, NULL);
    pb_signatures(c, &nsig);
    pb_playbooks(c, &nplay);
    pb_correlations(c, &ncorr);
    pb_catalog_free(c);
    if (errors < 0)
        return 2;
    printf("%s: %zu scenarios, %zu signatures, %zu correlations, %zu "
           "playbooks, %d error%s, %d warning%s\n", dir, n, nsig, ncorr,
           nplay, errors, errors == 1 ? "" : "s", warnings,
           warnings == 1 ? "" : "s");
    return errors ? 1 : 0;
}

/* One example line as the signal its signature's source would carry. A
 * Kubernetes example is written "Reason: message". */
static int example_signal(const pb_example *ex, const char *text, sig *s)
{
    cs_err err;
    json_t *o;

    if (ex->source == SRC_K8S) {
        const char *sep = strstr(text, ": ");
        char reason[128];
        snprintf(reason, sizeof reason, "%.*s",
                 sep ? (int)(sep - text) : 0, text);
        o = json_pack("{s:s, s:s, s:s, s:s, s:{s:s, s:s}}", "ts",
                      "2026-01-01T00:00:00Z", "source", "k8s", "host",
                      "example-host", "job", "example-job", "event", "reason",
                      reason, "message", sep ? sep + 2 : text);
    } else {
        o = json_pack("{s:s, s:s, s:s, s:s, s:s}", "ts", "2026-01-01T00:00:00Z",
                      "source", sig_source_name((sig_source)ex->source), "host",
                      "example-host", "job", "example-job", "line", text);
    }
    if (!o)
        return -1;
    int rc = sig_from_json(s, o, &err);
    json_decref(o);
    return rc;
}

/* A multi-line example (a wrapped kernel message, a traceback) arrives as
 * one signal per line, in order; what counts is what its last line makes,
 * since assembled messages give their fact when they are complete. A
 * Kubernetes event is one signal whatever it holds: its message may have
 * lines of its own (a mount's command and output, as kubectl shows). */
static int example_lines(classifier *cls, const pb_example *ex, fact *f)
{
    const char *p = ex->text, *nl;
    char line[4096];
    int n = 0;
    sig s;

    do {
        nl = ex->source == SRC_K8S ? NULL : strchr(p, '\n');
        snprintf(line, sizeof line, "%.*s",
                 (int)(nl ? (size_t)(nl - p) : strlen(p)), p);
        if (example_signal(ex, line, &s))
            return -1;
        n = cls_classify(cls, &s, f);
        sig_free(&s);
        p = nl + 1;
    } while (nl && *p);
    if (n == 0) { /* a report is complete when its lines stop */
        sig head;
        if (cls_report_next(cls, NULL, NULL, INT64_MAX, &head, f) == 1) {
            sig_free(&head);
            n = 1;
        }
    }
    return n;
}

/* Runs one example; prints why when it fails. Returns 0 when it passes. */
static int run_example(classifier *cls, const pb_signature *g,
                       const pb_example *ex)
{
    fact f[CLS_MAX_FACTS];
    const char *want_sc = ex->scenario && strcmp(ex->scenario, "none")
        ? ex->scenario : NULL;
    const char *got_sc, *why = NULL;
    char msg[512];
    int n;

    if (g->source == SRC_ALERTMANAGER) {
        n = cls_classify_labels(cls, ex->text, f);
    } else if ((n = example_lines(cls, ex, f)) < 0) {
        fprintf(stderr, "%s:%d: example of %s: not a valid signal\n",
                g->file, ex->line, g->id);
        return 1;
    }
    got_sc = n > 0 ? f[0].scenario : NULL;
    if (ex->fact && (n == 0 || strcmp(fact_name(f[0].kind), ex->fact))) {
        snprintf(msg, sizeof msg, "want fact %s, got %s", ex->fact,
                 n ? fact_name(f[0].kind) : "nothing");
        why = msg;
    } else if (ex->fact && f[0].sig_id != g->id) {
        snprintf(msg, sizeof msg, "matched by signature %s, not this one",
                 f[0].sig_id ? f[0].sig_id : "?");
        why = msg;
    } else if (want_sc && (!got_sc || strcmp(got_sc, want_sc))) {
        snprintf(msg, sizeof msg, "want scenario %s, got %s%s%s", want_sc,
                 got_sc ? got_sc : "none", n ? " from " : "",
                 n && f[0].sig_id ? f[0].sig_id : "");
        why = msg;
    } else if (want_sc && f[0].sig_id != g->id) {
        snprintf(msg, sizeof msg, "right scenario, but matched by signature "
                 "%s, not this one", f[0].sig_id ? f[0].sig_id : "?");
        why = msg;
    } else if (ex->detail && (n == 0 || strcmp(f[0].detail, ex->detail))) {
        snprintf(msg, sizeof msg, "want detail '%s', got '%s'", ex->detail,
                 n ? f[0].detail : "");
        why = msg;
    } else if (!want_sc && got_sc) {
        snprintf(msg, sizeof msg, "want no scenario, got %s from %s", got_sc,
                 f[0].sig_id ? f[0].sig_id : "?");
        why = msg;
    }
    if (!why)
        return 0;
    fprintf(stderr, "%s:%d: example of %s: %s\n  text: %s\n", g->file,
            ex->line, g->id, why, ex->text);
    return 1;
}

static int rules_test(const char *dir)
{
    pb_catalog *c = pb_catalog_new();
    int errors = pb_catalog_load_dir(c, dir, print_error, NULL), failed = 0,
        total = 0;
    classifier *cls = NULL;
    size_t n;
    const pb_signature *g;
    cs_err err;

    if (errors) {
        fprintf(stderr, "%s: the rule files have problems; run `cascade rules "
                        "check %s`\n", dir, dir);
        pb_catalog_free(c);
        return errors < 0 ? 2 : 1;
    }
    g = pb_signatures(c, &n);
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < g[i].nexamples; k++) {
            /* A fresh classifier each time: no traceback state carries
             * from one example to the next. */
            cls_free(cls);
            if (!(cls = cls_new(c, &err))) {
                fprintf(stderr, "cascade rules test: %s\n", err.msg);
                pb_catalog_free(c);
                return 2;
            }
            failed += run_example(cls, &g[i], &g[i].examples[k]);
            total++;
        }
    cls_free(cls);
    pb_catalog_free(c);
    printf("%s: %zu signatures, %d examples, %d failed\n", dir, n, total,
           failed);
    return failed ? 1 : 0;
}

int cmd_rules(int argc, char **argv)
{
    const char *dir = argc == 3 ? argv[2] : "rules";

    if (argc >= 2 && argc <= 3 && !strcmp(argv[1], "check"))
        return rules_check(dir);
    if (argc >= 2 && argc <= 3 && !strcmp(argv[1], "test"))
        return rules_test(dir);
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: cascade rules check [DIR]\n"
               "       cascade rules test [DIR]\n\n"
               "check validates the rule files (*.yaml, one per family) in DIR\n"
               "(default: rules) and reports every problem as\n"
               "FILE:LINE:COL: reason.\n\n"
               "test runs every signature's examples through the classifier:\n"
               "each line (or alert) must produce the scenario (or fact kind)\n"
               "written next to it, from that signature and not another one.\n"
               "Failures are reported as FILE:LINE: why.\n\n"
               "The binary carries the rules/ folder it was built from as its\n"
               "default catalog.\n\n"
               "exit: 0 valid / all pass, 1 problems or failures, 2 the\n"
               "folder cannot be read\n");
        return 0;
    }
    fprintf(stderr, "usage: cascade rules check|test [DIR] (--help)\n");
    return 2;
}
