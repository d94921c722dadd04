/* The raw log line parser (ingest/syslog.c): both time formats, the host,
 * job and tag fields, the source a program names, and errors that say
 * what is wrong and at which column. */
#include "check.h"
#include "core/ts.h"
#include "ingest/syslog.h"

static const char *ts_text(int64_t ts)
{
    static char buf[40];
    ts_format(ts, buf, sizeof buf);
    return buf;
}

static void test_rfc3339(void)
{
    slg_line l;
    cs_err why = {{0}};
    const char *line = "2024-05-01T00:04:35.792320Z node0007 kernel: [100275.792320] "
                       "NVRM: Xid (PCI:0000:af:00): 79, pid='<unknown>'";

    REQUIRE(slg_parse(line, 2024, &l, &why) == 0);
    CHECK_INT(l.ts, INT64_C(1714521875792320));
    CHECK_INT(l.source, SRC_KERNEL);
    CHECK_STR(l.host, "node0007");
    CHECK_STR(l.job, "");
    CHECK_STR(l.program, "kernel");
    CHECK_STR(l.msg, "[100275.792320] NVRM: Xid (PCI:0000:af:00): 79, pid='<unknown>'");

    REQUIRE(slg_parse("2024-05-01T00:00:02+02:00 node0826 job=700007 python[21435]: "
                      "[rank60]: Watchdog caught", 2024, &l, &why) == 0);
    CHECK_STR(ts_text(l.ts), "2024-04-30T22:00:02.000Z");
    CHECK_INT(l.source, SRC_APP);
    CHECK_STR(l.job, "700007");
    CHECK_STR(l.program, "python");
    CHECK_STR(l.msg, "[rank60]: Watchdog caught");

    REQUIRE(slg_parse("2024-05-01T00:00:02Z node1 slurmstepd[811]: error: *** JOB 7 "
                      "ON node1 CANCELLED", 2024, &l, &why) == 0);
    CHECK_INT(l.source, SRC_SLURM);
    CHECK_STR(l.msg, "error: *** JOB 7 ON node1 CANCELLED");
    REQUIRE(slg_parse("2024-05-01T00:00:02Z head raylet[9]: x", 2024, &l, &why) == 0);
    CHECK_INT(l.source, SRC_RAY);
    REQUIRE(slg_parse("2024-05-01T00:00:02Z n1 sshd[9]:", 2024, &l, &why) == 0);
    CHECK_INT(l.source, SRC_APP);
    CHECK_STR(l.msg, "");
}

static void test_traditional(void)
{
    slg_line l;
    cs_err why = {{0}};

    REQUIRE(slg_parse("Dec  2 11:38:46 worker4 kernel: [  218.250408] NVRM: GPU "
                      "0000:0a:00.0: RmInitAdapter failed!", 2025, &l, &why) == 0);
    CHECK_STR(ts_text(l.ts), "2025-12-02T11:38:46.000Z");
    CHECK_STR(l.host, "worker4");
    CHECK_STR(l.msg, "[  218.250408] NVRM: GPU 0000:0a:00.0: RmInitAdapter failed!");
    /* some kernels' lines name no host */
    REQUIRE(slg_parse("May 18 19:02:39 kernel: NVRM: GPU at PCI:0000:2b:00", 2024,
                      &l, &why) == 0);
    CHECK_STR(l.host, "");
    CHECK_INT(l.source, SRC_KERNEL);
    CHECK_STR(l.msg, "NVRM: GPU at PCI:0000:2b:00");
    REQUIRE(slg_parse("Feb 14 05:03:41 000-000-00000-1-gpu-1 kernel: mlx5_core "
                      "0000:ab:00.0 mlx5_5: Port: 1 Link INIT", 2024, &l, &why) == 0);
    CHECK_STR(l.host, "000-000-00000-1-gpu-1");
}

static void test_errors(void)
{
    slg_line l;
    cs_err why = {{0}};

    CHECK_INT(slg_parse("hello world", 2024, &l, &why), -1);
    CHECK_STR(why.msg, "column 1: the line does not start with a time (RFC 3339, "
                       "or syslog's 'Mmm dd HH:MM:SS')");
    CHECK_INT(slg_parse("2024-13-01T00:00:00Z n1 kernel: x", 2024, &l, &why), -1);
    CHECK_STR(why.msg, "column 1: '2024-13-01T00:00:00Z' is not an RFC 3339 time");
    CHECK_INT(slg_parse("2024-05-01T00:00:00Z", 2024, &l, &why), -1);
    CHECK_STR(why.msg, "column 21: nothing after the time");
    CHECK_INT(slg_parse("2024-05-01T00:00:00Z n1 no tag here", 2024, &l, &why), -1);
    CHECK_STR(why.msg, "column 25: expected a tag such as 'kernel:' or 'slurmd[42]:'");
    CHECK_INT(slg_parse("2024-05-01T00:00:00Z n1 job= python: x", 2024, &l, &why), -1);
    CHECK_STR(why.msg, "column 25: 'job=' needs an id of 1 to 63 characters");
    CHECK_INT(slg_parse("Dec 32 11:38:46 w kernel: x", 2024, &l, &why), -1);
    CHECK_INT(slg_parse("Dec  2 11:38 w kernel: x", 2024, &l, &why), -1);
    CHECK_INT(slg_parse("", 2024, &l, &why), -1);
    CHECK_INT(slg_parse("2024-05-01T00:00:00Z n1 [9]: x", 2024, &l, &why), -1);
    CHECK_STR(why.msg, "column 25: the tag's program name is empty or longer than "
                       "63 characters");
}

int main(void)
{
    test_rfc3339();
    test_traditional();
    test_errors();
    return check_report();
}
