/* The cap on a kind of log line (core/logcap.c): at most N lines of it a
 * second, the rest counted and said in one line once the second is over,
 * by the next line of the kind or by a timer's flush; nothing held back
 * goes unsaid. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/logcap.h"
#include "core/ts.h"

#define MS (TS_SEC / 1000)
#define SEC TS_SEC

/* The number a summary line says ("N more incidents not logged (...)"), -1
 * when out holds no summary; the whole output must be that one line. */
static long said(const char *out)
{
    const char *m = strstr(out, "test: ");
    char *end;
    long n;

    if (!m)
        return -1;
    n = strtol(m + 6, &end, 10);
    CHECK_STR(end, " more incidents not logged (at most 3 a second are "
                   "written)\n");
    CHECK(strchr(out, '\n') == out + strlen(out) - 1); /* one line */
    return n;
}

static long flush_said(lcap *l, int64_t now, size_t *ret)
{
    check_capture cap;
    char *out;
    long n;

    check_stderr_begin(&cap);
    *ret = lcap_flush(l, now);
    out = check_stderr_end(&cap);
    n = out[0] ? said(out) : 0;
    free(out);
    return n;
}

static void test_window(void)
{
    lcap *l = lcap_new("test", LOG_LVL_WARN, "incidents", 3);
    int64_t t0 = 5 * SEC; /* any monotonic origin */
    size_t ret;

    REQUIRE(l != NULL);
    for (int i = 0; i < 3; i++)
        CHECK_INT(lcap_take(l, t0 + i * MS), 1);
    CHECK_INT(lcap_take(l, t0 + 10 * MS), 0);
    CHECK_INT(lcap_take(l, t0 + 999 * MS), 0);
    CHECK_INT((long)lcap_held(l), 2);
    /* the second is not over: nothing said yet */
    CHECK_INT(flush_said(l, t0 + 999 * MS, &ret), 0);
    CHECK_INT((long)ret, 0);
    /* over: said once, with the count */
    CHECK_INT(flush_said(l, t0 + SEC, &ret), 2);
    CHECK_INT((long)ret, 2);
    CHECK_INT(flush_said(l, t0 + 2 * SEC, &ret), 0);
    /* a new second starts with the next line: three again */
    for (int i = 0; i < 3; i++)
        CHECK_INT(lcap_take(l, t0 + 3 * SEC + i), 1);
    CHECK_INT(lcap_take(l, t0 + 3 * SEC + 5), 0);
    CHECK_INT((long)lcap_held(l), 3); /* since the start */
    lcap_free(l);
}

/* A line of the kind after the second is over says the held ones first,
 * then is itself written (its second's first). */
static void test_take_says(void)
{
    lcap *l = lcap_new("test", LOG_LVL_WARN, "incidents", 3);
    check_capture cap;
    char *out;
    int r;

    REQUIRE(l != NULL);
    for (int i = 0; i < 7; i++)
        lcap_take(l, i);
    check_stderr_begin(&cap);
    r = lcap_take(l, 3 * SEC);
    out = check_stderr_end(&cap);
    CHECK_INT(r, 1);
    CHECK_INT(said(out), 4);
    free(out);
    lcap_free(l);
}

/* Under the level the log writes, the summary is not written but the
 * count still starts afresh (the caller tests the level before taking,
 * as log_info does). */
static void test_level(void)
{
    lcap *l = lcap_new("test", LOG_LVL_DEBUG, "incidents", 3);
    size_t ret;

    REQUIRE(l != NULL);
    for (int i = 0; i < 5; i++)
        lcap_take(l, i);
    CHECK_INT(flush_said(l, SEC, &ret), 0); /* debug is off */
    CHECK_INT((long)ret, 2);
    CHECK_INT(lcap_take(l, SEC + 1), 1);
    lcap_free(l);
}

/* Random times against a model: no window of the cap writes more than 3
 * lines, every line is written or held, and the summaries (the last one
 * at exit, INT64_MAX) add up to every line held. */
static void test_model(void)
{
    lcap *l = lcap_new("test", LOG_LVL_WARN, "incidents", 3);
    int64_t t = 0, start = -1;
    long written = 0, in_window = 0, summed = 0, calls = 0;
    unsigned seed = 7;
    size_t ret;

    REQUIRE(l != NULL);
    for (int i = 0; i < 20000; i++) {
        seed = seed * 1103515245u + 12345u;
        t += (seed >> 16) % 4 == 0 ? (int64_t)((seed >> 8) % 3000) * MS
                                   : (int64_t)((seed >> 8) % 50) * MS;
        if ((seed >> 20) % 10 == 0) {
            long n = flush_said(l, t, &ret);
            CHECK_INT(n, (long)ret);
            summed += n;
            if (ret || start < 0 || t - start >= SEC)
                start = -1;
            continue;
        }
        if (start < 0 || t - start >= SEC) {
            check_capture cap;
            char *out;
            int r;
            check_stderr_begin(&cap);
            r = lcap_take(l, t);
            out = check_stderr_end(&cap);
            if (out[0])
                summed += said(out);
            free(out);
            start = t;
            in_window = r;
            written += r;
            CHECK_INT(r, 1);
        } else {
            int r = lcap_take(l, t);
            in_window += r;
            written += r;
            CHECK(in_window <= 3);
        }
        calls++;
    }
    /* a last burst, held back when the process stops: said at exit */
    t += 3 * SEC;
    for (int i = 0; i < 5; i++) {
        check_capture cap;
        char *out;
        check_stderr_begin(&cap);
        written += lcap_take(l, t);
        out = check_stderr_end(&cap);
        if (out[0])
            summed += said(out);
        free(out);
        calls++;
    }
    CHECK_INT(flush_said(l, t + 1, &ret), 0); /* its second is not over */
    summed += flush_said(l, INT64_MAX, &ret);
    CHECK_INT((long)ret, 2);
    CHECK_INT(written + (long)lcap_held(l), calls);
    CHECK_INT(summed, (long)lcap_held(l));
    CHECK(lcap_held(l) > 1000 && written > 1000); /* both paths ran */
    lcap_free(l);
}

int main(void)
{
    test_window();
    test_take_says();
    test_level();
    test_model();
    return check_report();
}
