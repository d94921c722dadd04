/* The seen set's limit through the engine (correlate.max_seen_ids): what
 * it keeps, what it forgets and counts, what a redelivery then does. */
#include <stdio.h>

#include "check.h"
#include "engine/engine.h"
#include "engine/state.h"

#include "engine_fixture.h"

/* NCCL timeouts of 8,000 jobs, a tenth of a second apart, each with its
 * own id: with correlate.max_seen_ids at 1024 the set keeps the newest,
 * forgets the oldest (counted, the horizon shorter), a redelivery of a
 * recent one is still no news and one of the first counts again.
 * Without a limit all 8,000 stay. */
static int feed_timeout(engine *e, int i)
{
    char line[512];

    snprintf(line, sizeof line,
             "{\"ts\":\"2026-03-02T08:%02d:%02d.%03dZ\",\"source\":\"app\","
             "\"host\":\"n%d\",\"job\":\"%d\",\"id\":\"%016x\",\"line\":"
             "\"[Rank 3] Watchdog caught collective operation timeout: "
             "WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
             "Timeout(ms)=600000) ran for 600123 milliseconds before timing "
             "out.\"}",
             i / 600, i / 10 % 60, i % 10 * 100, i % 50, 1000 + i, i);
    return feed(e, line);
}

static void test_seen_limit(void)
{
    rec r = {0};
    cs_err err;
    engine *e = eng_new(&ops, &r, &err);
    eng_seen st;

    eng_set_max_seen(e, 1024);
    for (int i = 1; i <= 8000; i++)
        feed_timeout(e, i);
    eng_seen_stats(e, &st);
    CHECK(st.ids >= 512 && st.ids <= 1536);
    CHECK(st.evicted >= 8000 - 1536);
    CHECK_INT(st.evicted, 8000 - st.ids);
    CHECK(st.horizon > 0 && st.horizon < 800 * INT64_C(1000000));
    idset *seen = eng_cs(e, "default")->seen;
    CHECK(ids_get(seen, 8000, NULL)); /* the newest: a redelivery is seen */
    CHECK(!ids_get(seen, 1, NULL));   /* the first: forgotten */
    CHECK_INT(feed_timeout(e, 1), 1); /* so it counts again */
    CHECK(ids_get(seen, 1, NULL));
    CHECK_INT(feed_timeout(e, 1), 0); /* once */
    eng_free(e);

    e = eng_new(&ops, &r, &err);
    for (int i = 1; i <= 8000; i++)
        feed_timeout(e, i);
    eng_seen_stats(e, &st);
    CHECK_INT(st.ids, 8000);
    CHECK_INT(st.evicted, 0);
    CHECK(st.horizon == 2 * 3600 * INT64_C(1000000));
    eng_free(e);
}

int main(void)
{
    test_seen_limit();
    return check_report();
}
