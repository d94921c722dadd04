/* Reports: messages whose fact waits for the lines after their head
 * (NCCL's desync report, an OOM printed before its traceback), ended by
 * the rank's next line or by their quiet, and kept across a restart. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "rules/classify.h"
#include "rules/playbooks.h"

static pb_catalog *cat;

/* An app signal of job on host g1 (rank's launcher tag aside). */
static sig app(const char *job, int rank, const char *line, const char *ts)
{
    sig s;
    cs_err err;
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:i}", "ts", ts, "source",
                          "app", "host", "g1", "job", job, "line", line, "rank",
                          rank);
    if (sig_from_json(&s, o, &err))
        fprintf(stderr, "bad test signal: %s\n", err.msg);
    json_decref(o);
    return s;
}

/* One app line through cls_report_next first, as the engine does: the
 * return value is what the line gave (0 or 1), and *done the report fact
 * it or the time ended (its detail copied to done_detail). */
static char done_detail[320];

static int report_feed(classifier *k, int rank, const char *line,
                       const char *ts, int *done)
{
    fact f[CLS_MAX_FACTS], g;
    sig s = app("r1", rank, line, ts), head;
    int n;

    *done = 0;
    while (cls_report_next(k, &s, NULL, s.ts, &head, &g) == 1) {
        (*done)++;
        snprintf(done_detail, sizeof done_detail, "%s", g.detail);
        CHECK_STR(g.scenario, "nccl.rank_desync");
        CHECK_STR(head.line, "         - To our best knowledge, the "
                  "lagging/dead/mismatched ranks that caused the desync are:");
        sig_free(&head);
    }
    n = cls_classify(k, &s, f);
    sig_free(&s);
    return n;
}

static char rep_key[128], rep_val[1200];

static void save_report(void *arg, const char *key, const char *value)
{
    (void)arg;
    if (value && strstr(key, "|r1|4")) {
        snprintf(rep_key, sizeof rep_key, "%s", key);
        snprintf(rep_val, sizeof rep_val, "%s", value);
    }
}

/* Each line through cls_report_next, then cls_classify; the scenarios of
 * every fact given, in order, separated by spaces. */
static void oom_feed(classifier *k, const char *const *lines, int n,
                     const char *ts, char *got, size_t len)
{
    fact f[CLS_MAX_FACTS], g;
    sig head;

    got[0] = '\0';
    for (int i = 0; i < n; i++) {
        sig s = app("r9", 0, lines[i], ts);
        while (cls_report_next(k, &s, NULL, s.ts, &head, &g) == 1) {
            snprintf(got + strlen(got), len - strlen(got), "%s ", g.scenario);
            sig_free(&head);
        }
        int m = cls_classify(k, &s, f);
        for (int j = 0; j < m; j++)
            snprintf(got + strlen(got), len - strlen(got), "%s ", f[j].scenario);
        sig_free(&s);
    }
}

/* PyTorch 0.x's THC (and Chainer's trainer) print the OOM before the
 * traceback that raised it: the frames after it name the pass, and the
 * exception line that ends them is the same fault with the same pass. */
static void test_oom_before_traceback(void)
{
    static const char *const thc[] = {
        "THCudaCheck FAIL file=/pytorch/torch/lib/THC/generic/THCStorage.cu "
        "line=66 error=2 : out of memory",
        "Traceback (most recent call last):",
        "  File \"main.py\", line 136, in train",
        "    loss.backward()",
        "  File \"/usr/lib/python2.7/site-packages/torch/autograd/variable.py\", "
        "line 144, in backward",
        "RuntimeError: cuda runtime error (2) : out of memory at "
        "/pytorch/torch/lib/THC/generic/THCStorage.cu:66"};
    char got[256];
    cs_err err;
    classifier *k = cls_new(cat, &err);
    sig h;
    fact g;

    oom_feed(k, thc, 6, "2026-03-02T08:30:00Z", got, sizeof got);
    CHECK_STR(got, "oom.activation oom.activation ");
    /* the head alone, ended by its quiet: no traceback, no pass */
    oom_feed(k, thc, 1, "2026-03-02T08:31:00Z", got, sizeof got);
    CHECK_STR(got, "");
    CHECK_INT(cls_report_next(k, NULL, NULL, INT64_MAX, &h, &g), 1);
    CHECK_STR(g.scenario, "oom.batch_size");
    sig_free(&h);
    /* an exception line long after a report is not its */
    oom_feed(k, thc + 5, 1, "2026-03-02T08:32:00Z", got, sizeof got);
    CHECK_STR(got, "oom.batch_size ");
    cls_free(k);
}

/* PyTorch's desync report (pytorch#152623): the head's fact waits for the
 * snapshot lines and carries them; the report ends at a line of the same
 * rank that is not indented, or after 2 s; other ranks' lines go on; a
 * restart in the middle keeps what was read; lines redelivered after the
 * report was given are not read again. */
static void test_desync_report(void)
{
    static const char *const head = "         - To our best knowledge, the "
        "lagging/dead/mismatched ranks that caused the desync are:";
    static const char *const lines[] = {
        ("             [7] finished collective #182, but didn't join "
         "collective #183 (count from 1)"),
        "         - Snapshot of ranks' latest states:",
        "           #315 started ranks:",
        "             [0, 1, 2] started ALLREDUCE",
        "           #317 started ranks:",
        "             [3, 4, 5, 6] started _ALLGATHER_BASE"};
    const char *want = "[7] finished collective #182, but didn't join "
        "collective #183 (count from 1); Snapshot of ranks' latest states: "
        "#315 started ranks: [0, 1, 2] started ALLREDUCE; #317 started "
        "ranks: [3, 4, 5, 6] started _ALLGATHER_BASE";
    const char *t = "2026-03-02T08:25:00.003Z";
    cs_err err;
    classifier *a = cls_new(cat, &err), *b;
    int done;

    /* ended by the rank's next unindented line */
    CHECK_INT(report_feed(a, 0, head, t, &done), 0);
    for (int i = 0; i < 6; i++) {
        CHECK_INT(report_feed(a, 0, lines[i], t, &done), 0);
        CHECK_INT(done, 0);
        /* another rank printing meanwhile changes nothing */
        CHECK_INT(report_feed(a, 1, "[rank1]: step 12", t, &done), 0);
        CHECK_INT(done, 0);
    }
    CHECK_INT(report_feed(a, 0, "[rank0]:[E515 18:36:47.343391940 "
              "ProcessGroupNCCL.cpp:2268] failure detected by watchdog", t,
              &done), 0);
    CHECK_INT(done, 1);
    CHECK_STR(done_detail, want);
    /* a redelivered line of it is not a report of its own */
    CHECK_INT(report_feed(a, 0, lines[0], t, &done), 0);
    CHECK_INT(done, 0);
    CHECK_INT(report_feed(a, 0, "x", "2026-03-02T08:25:09Z", &done), 0);
    CHECK_INT(done, 0);

    /* ended by time: 2 s of nothing from that rank */
    CHECK_INT(report_feed(a, 2, head, t, &done), 0);
    CHECK_INT(report_feed(a, 2, lines[3], t, &done), 0);
    CHECK_INT(report_feed(a, 3, "tick", "2026-03-02T08:25:02.003Z", &done), 0);
    CHECK_INT(done, 0);
    CHECK_INT(report_feed(a, 3, "tick", "2026-03-02T08:25:02.004Z", &done), 0);
    CHECK_INT(done, 1);
    CHECK_STR(done_detail, "[0, 1, 2] started ALLREDUCE");

    /* a restart after three lines */
    CHECK_INT(report_feed(a, 4, head, t, &done), 0);
    for (int i = 0; i < 3; i++)
        CHECK_INT(report_feed(a, 4, lines[i], t, &done), 0);
    cls_tb_changes(a, NULL, save_report, NULL);
    CHECK(strstr(rep_val, " R ") != NULL);
    b = cls_new(cat, &err);
    CHECK_INT(cls_tb_restore(b, rep_key, rep_val), 0);
    /* the head and a line again (redelivered), then the rest */
    CHECK_INT(report_feed(b, 4, head, t, &done), 0);
    for (int i = 2; i < 6; i++)
        CHECK_INT(report_feed(b, 4, lines[i], t, &done), 0);
    sig h;
    fact g;
    CHECK_INT(cls_report_next(b, NULL, NULL, INT64_MAX, &h, &g), 1);
    CHECK_STR(g.detail, want);
    sig_free(&h);
    CHECK_INT(cls_report_next(b, NULL, NULL, INT64_MAX, &h, &g), 0);
    /* malformed stored forms are refused */
    CHECK_INT(cls_tb_restore(b, "default|g1|r1|9", "5 R 6 1 no tab"), -1);
    CHECK_INT(cls_tb_restore(b, "default|g1|r1|9", "5 R 6 1 x\tnot json"), -1);
    cls_free(a);
    cls_free(b);
}

int main(void)
{
    cat = pb_catalog_embedded();
    test_oom_before_traceback();
    test_desync_report();
    pb_catalog_free(cat);
    return check_report();
}
