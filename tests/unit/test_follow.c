/* The follower's parts that need no broker: path patterns
 * (ingest/pathpat.h), the checkpoint file (ingest/fpos.h) and the line
 * encoder's plain lines (ingest/logline.h). The follower itself runs
 * against a broker in tests/integration/follow_race.sh. */
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "core/signal.h"
#include "ingest/colcfg.h"
#include "ingest/fpos.h"
#include "ingest/logline.h"
#include "ingest/pathpat.h"

static void test_pattern_errors(void)
{
    static const struct {
        const char *pat, *err;
    } bad[] = {
        {"/var/log/[ab].log", "column 10: '[' is not part of a pattern"},
        {"/jobs/{jobid}/out", "column 7: a capture is {job}, {rank} or {host}"},
        {"/jobs/{job}/{job}.out", "column 13: {job} given twice"},
        {"/a\\b", "column 3: '\\' is not part of a pattern"},
        {"/a\tb", "column 3: a control character"},
        {"", "the pattern is empty"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cs_err err = {{0}};
        pp_pattern *p = pp_compile(bad[i].pat, &err);
        CHECK(p == NULL);
        CHECK(strstr(err.msg, bad[i].err) != NULL);
        if (!strstr(err.msg, bad[i].err))
            fprintf(stderr, "  '%s': %s\n", bad[i].pat, err.msg);
        pp_free(p);
    }
}

static void test_pattern_match(void)
{
    cs_err err;
    pp_capture c;
    pp_pattern *p = pp_compile("/shared/jobs/{job}/rank{rank}-*.log", &err);

    REQUIRE(p);
    CHECK_STR(pp_glob(p), "/shared/jobs/*/rank*-*.log");
    CHECK_STR(pp_root(p), "/shared/jobs");
    CHECK_INT(pp_match(p, "/shared/jobs/5512/rank3-stdout.log", &c), 1);
    CHECK_STR(c.job, "5512");
    CHECK_INT(c.rank, 3);
    CHECK_STR(c.host, "");
    /* a rank is a number; '*' and a capture stop at '/' */
    CHECK_INT(pp_match(p, "/shared/jobs/5512/rankx-stdout.log", &c), 0);
    CHECK_INT(c.rank, -1);
    CHECK_INT(pp_match(p, "/shared/jobs/55/12/rank3-a.log", &c), 0);
    CHECK_INT(pp_match(p, "/shared/jobs/5512/rank3-a/b.log", &c), 0);
    CHECK_INT(pp_match(p, "/shared/jobs//rank3-a.log", &c), 0);
    /* '*' may be empty, a capture may not */
    CHECK_INT(pp_match(p, "/shared/jobs/9/rank12-.log", &c), 1);
    CHECK_INT(c.rank, 12);
    pp_free(p);

    p = pp_compile("/var/log/slurm/{host}-job{job}.out", &err);
    REQUIRE(p);
    /* the host may hold '-': backtracking finds the split the rest takes */
    CHECK_INT(pp_match(p, "/var/log/slurm/gpu-017-job77.out", &c), 1);
    CHECK_STR(c.host, "gpu-017");
    CHECK_STR(c.job, "77");
    CHECK_INT(c.rank, -1);
    pp_free(p);

    p = pp_compile("kern.lo?", &err);
    REQUIRE(p);
    CHECK_STR(pp_root(p), ".");
    CHECK_INT(pp_match(p, "kern.log", NULL), 1);
    CHECK_INT(pp_match(p, "kern.lo", NULL), 0);
    CHECK_INT(pp_match(p, "kern.log.1", NULL), 0);
    pp_free(p);

    p = pp_compile("/var/log/kern.log", &err);
    REQUIRE(p);
    CHECK_STR(pp_root(p), "/var/log");
    pp_free(p);
    p = pp_compile("/*.log", &err);
    REQUIRE(p);
    CHECK_STR(pp_root(p), "/");
    pp_free(p);
}

/* Many stars against a long name that almost matches: without the
 * memory of failed places this is a power of the length. */
static void test_pattern_cost(void)
{
    cs_err err;
    char name[300];
    pp_pattern *p = pp_compile("/x/*a*a*a*a*a*a*a*a*a*a*a*b", &err);
    clock_t t0 = clock();

    REQUIRE(p);
    memset(name, 'a', sizeof name - 1);
    memcpy(name, "/x/", 3);
    name[sizeof name - 1] = '\0';
    CHECK_INT(pp_match(p, name, NULL), 0);
    name[sizeof name - 2] = 'b';
    CHECK_INT(pp_match(p, name, NULL), 1);
    CHECK((clock() - t0) / (double)CLOCKS_PER_SEC < 1.0);
    pp_free(p);
}

static void test_fpos(void)
{
    char dir[] = "/tmp/cascade-fposXXXXXX", path[PATH_MAX];
    fpos_set s = {0}, back = {0};
    fpos_entry e = {64768, 131, 4096, 37, 1024, 0x0123456789abcdefULL,
                    "/var/log/with space.log"};
    cs_err err = {{0}};
    int found = 1;

    REQUIRE(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/pos", dir);
    CHECK_INT(fpos_load(path, &back, &found, &err), 0);
    CHECK_INT(found, 0);
    CHECK_INT(back.n, 0);
    REQUIRE(fpos_add(&s, &e) == 0);
    e.ino = 132;
    e.path = "/var/log/kern.log";
    REQUIRE(fpos_add(&s, &e) == 0);
    REQUIRE(fpos_save(path, &s, &err) == 0);
    REQUIRE(fpos_load(path, &back, &found, &err) == 0);
    CHECK_INT(found, 1);
    REQUIRE(back.n == 2);
    CHECK_STR(back.v[0].path, "/var/log/with space.log");
    CHECK_INT(back.v[0].offset, 4096);
    CHECK_INT(back.v[0].line, 37);
    CHECK(back.v[0].fp_hash == 0x0123456789abcdefULL);
    CHECK(fpos_find(&back, 64768, 132) == &back.v[1]);
    CHECK(fpos_find(&back, 1, 132) == NULL);
    fpos_clear(&back);
    fpos_clear(&s);

    static const struct {
        const char *text, *err;
    } bad[] = {
        {"", "empty"},
        {"cascade-follow 2\n", "pos:1: not a follower checkpoint"},
        {"cascade-follow 1\n1 2 3 4 5 00ff\n", "pos:2: expected"},
        {"cascade-follow 1\n1 2 3 4 5000 00ff /a\n", "pos:2: expected"},
        {"cascade-follow 1\n1 2 3 4 5 00fg /a\n", "pos:2: expected"},
        {"cascade-follow 1\n1 2 3 4 5 0 /a\n\n1 2 x 4 5 0 /b\n", "pos:4:"},
        {"cascade-follow 1\n99999999999999999999 2 3 4 5 0 /a\n", "pos:2:"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err.msg[0] = '\0';
        CHECK_INT(fpos_parse("pos", bad[i].text, strlen(bad[i].text), &back,
                             &err), -1);
        CHECK(strstr(err.msg, bad[i].err) != NULL);
        if (!strstr(err.msg, bad[i].err))
            fprintf(stderr, "  %zu: %s\n", i, err.msg);
    }
    /* the fingerprint tells a file from another that starts otherwise */
    uint32_t len;
    uint64_t h;
    int fd = open(path, O_RDONLY);
    REQUIRE(fd >= 0);
    REQUIRE(fpos_fingerprint(fd, &len, &h) == 0);
    CHECK(len > 0 && len <= FPOS_FP_MAX);
    CHECK_INT(fpos_same_start(fd, len, h), 1);
    CHECK_INT(fpos_same_start(fd, len, h ^ 1), 0);
    CHECK_INT(fpos_same_start(fd, len + 1, h), 0);
    close(fd);
    /* a file read from its end starts after its last whole line */
    fd = open(path, O_RDWR | O_TRUNC);
    REQUIRE(fd >= 0);
    REQUIRE(write(fd, "one\ntwo\nthr", 12) == 12);
    CHECK_INT(fpos_line_start(fd, 12), 8);
    CHECK_INT(fpos_line_start(fd, 8), 8);
    CHECK_INT(fpos_line_start(fd, 3), 0);
    CHECK_INT(fpos_count_lines(fd, 8), 2);
    close(fd);
    unlink(path);
    rmdir(dir);
}

static int encode(ll_encoder *e, const ll_origin *o, const char *text,
                  sig *s)
{
    char line[256], *buf;
    const char *key;
    size_t blen;
    cs_err why;
    int rc;

    snprintf(line, sizeof line, "%s", text);
    rc = ll_encode(e, o, line, strlen(line), &key, &buf, &blen, &why);
    if (rc == 0) {
        CHECK(sig_parse_msgpack(s, buf, blen, &why) == 0);
        CHECK_STR(key, "c1");
        free(buf);
    }
    return rc;
}

static void test_plain_lines(void)
{
    ll_opts o = {LL_PLAIN, "c1", 2024, NULL};
    ll_encoder *e = ll_new(&o);
    ll_origin from = {SRC_APP, "gpu-001", "5512", 3,
                      1714521600123456LL, 42};
    sig a, b, c;

    REQUIRE(e);
    REQUIRE(encode(e, &from, "torch.OutOfMemoryError: CUDA out of memory\r",
                   &a) == 0);
    CHECK_STR(a.line, "torch.OutOfMemoryError: CUDA out of memory");
    CHECK_STR(a.host, "gpu-001");
    CHECK_STR(a.job, "5512");
    CHECK_INT(a.rank, 3);
    CHECK_INT(a.source, SRC_APP);
    CHECK_INT(a.ts, 1714521600123456LL);
    /* read again at another time: the same signal */
    from.ts += 5000000;
    REQUIRE(encode(e, &from, "torch.OutOfMemoryError: CUDA out of memory",
                   &b) == 0);
    CHECK(a.id == b.id);
    /* the same text at another place: another signal */
    from.place = 43;
    REQUIRE(encode(e, &from, "torch.OutOfMemoryError: CUDA out of memory",
                   &c) == 0);
    CHECK(a.id != c.id);
    sig_free(&a);
    sig_free(&b);
    sig_free(&c);
    /* no rank: the direct path; the signal has none */
    from.rank = -1;
    from.source = SRC_KERNEL;
    REQUIRE(encode(e, &from, "NVRM: Xid (PCI:0000:3b:00): 79, pid=1", &a) ==
            0);
    CHECK_INT(a.rank, -1);
    CHECK_INT(a.source, SRC_KERNEL);
    sig_free(&a);
    CHECK_INT(encode(e, &from, "   \t", &a), 3);
    ll_free(e);
}

/* load YAML: ccf_load's answer, err's text in why */
static int load(const char *yaml, ccf_conf *c, cs_err *why)
{
    char path[] = "/tmp/cascade-ccfXXXXXX";
    int fd = mkstemp(path), rc;

    REQUIRE(fd >= 0);
    REQUIRE(write(fd, yaml, strlen(yaml)) == (ssize_t)strlen(yaml));
    close(fd);
    rc = ccf_load(c, path, why);
    if (rc) /* the message names the file: keep what follows it */
        memmove(why->msg, why->msg + strlen(path),
                strlen(why->msg + strlen(path)) + 1);
    unlink(path);
    return rc;
}

static void test_config(void)
{
    ccf_conf c;
    cs_err why;

    ccf_defaults(&c);
    REQUIRE(load("kafka: {brokers: x}\n"
                 "collect:\n"
                 "  cluster: prod-a\n"
                 "  log:\n"
                 "    checkpoint: /var/lib/cascade/f.pos\n"
                 "    from_start: true\n"
                 "    files:\n"
                 "      - {path: /var/log/kern.log}\n"
                 "      - {path: '/j/{job}/rank{rank}.log', format: plain, "
                 "source: ray, host: h1}\n"
                 "  journal: {kernel: false, units: [slurmd, fm.service]}\n"
                 "  slurm: {poll: 30s, state: /s, canary_feature: canary-ok,\n"
                 "          canary_nodes: 'gpu-[001-002],gpu-9'}\n",
                 &c, &why) == 0);
    CHECK_STR(c.cluster, "prod-a");
    CHECK_STR(c.log.checkpoint, "/var/lib/cascade/f.pos");
    CHECK_INT(c.log.from_start, 1);
    REQUIRE(c.log.nfiles == 2);
    CHECK_INT(c.log.files[0].format, LL_SYSLOG);
    CHECK_INT(c.log.files[1].format, LL_PLAIN);
    CHECK_INT(c.log.files[1].source, SRC_RAY);
    CHECK_STR(c.log.files[1].host, "h1");
    CHECK_STR(c.log.files[1].path, "/j/{job}/rank{rank}.log");
    CHECK_INT(c.journal.kernel, 0);
    REQUIRE(c.journal.nunits == 2);
    CHECK_STR(c.journal.units[1], "fm.service");
    CHECK_INT(c.slurm.poll_ms, 30000);
    CHECK_STR(c.slurm.state, "/s");
    CHECK_STR(c.slurm.canary_feature, "canary-ok");
    CHECK_STR(c.slurm.canary_nodes, "gpu-[001-002],gpu-9");
    CHECK_INT(c.remote_write.port, -1);

    setenv("CASCADE_TEST_RW_TOKEN", "rw-secret", 1);
    REQUIRE(load("collect:\n"
                 "  remote_write:\n"
                 "    port: 9097\n"
                 "    token: env:CASCADE_TEST_RW_TOKEN\n"
                 "    allow: [DCGM_FI_DEV_XID_ERRORS]\n"
                 "    rename: {dcgm_temp: DCGM_FI_DEV_GPU_TEMP}\n"
                 "    job_labels: [slurm_job_id, hpc_job]\n"
                 "    max_body: 2MiB\n"
                 "    all: true\n", &c, &why) == 0);
    CHECK_INT(c.remote_write.port, 9097);
    CHECK_STR(c.remote_write.token, "rw-secret");
    REQUIRE(c.remote_write.nallow == 1 && c.remote_write.nrename == 1 &&
            c.remote_write.njob_labels == 2);
    CHECK_STR(c.remote_write.rename[0][0], "dcgm_temp");
    CHECK_STR(c.remote_write.rename[0][1], "DCGM_FI_DEV_GPU_TEMP");
    CHECK_STR(c.remote_write.job_labels[1], "hpc_job");
    CHECK_INT(c.remote_write.max_body, 2 << 20);
    CHECK_INT(c.remote_write.all, 1);

    static const struct {
        const char *yaml, *err;
    } bad[] = {
        {"collect:\n  log:\n    files:\n      - {path: '/a/{x}.log'}\n",
         ":4:16: collect.log.files: path '/a/{x}.log', column 4 of the pattern: "
         "a capture is {job}, {rank} or {host}"},
        {"collect:\n  log:\n    files:\n      - /var/log/kern.log\n",
         ":4:9: collect.log.files: each file is a mapping"},
        {"collect:\n  log:\n    files:\n      - {format: plain}\n",
         ":4:9: collect.log.files: "},
        {"collect:\n  slurm: {poll: 0s}\n", ":2:17: collect.slurm.poll: a "
         "duration from 1s to 1h"},
        {"collect:\n  slurm:\n    canary_nodes: gpu-[001-\n", ":3:19: "
         "collect.slurm.canary_nodes: a SLURM hostlist"},
        {"collect: [1]\n", ":1:10: section 'collect' must be a mapping"},
        {"collect:\n  logs: {}\n", ":2:3: unknown key 'logs'"},
        {"collect:\n  journal: {units: [\"a=b\"]}\n", ":2:21: collect.journal.units: "
         "a unit's name"},
        {"collect:\n  remote_write: {allow: [ok, 9bad]}\n", ":2:30: "
         "collect.remote_write.allow: a Prometheus name"},
        {"collect:\n  remote_write:\n    rename: {a: 'b c'}\n", ":3:17: "
         "collect.remote_write.rename: FROM: TO"},
        {"collect:\n  remote_write: {token: env:CASCADE_TEST_NO_SUCH}\n",
         ":2:25: collect.remote_write.token: environment variable "},
        {"collect:\n  remote_write: {port: 70000}\n", ":2:24: collect.remote_write.port: "},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        why.msg[0] = '\0';
        CHECK_INT(load(bad[i].yaml, &c, &why), -1);
        CHECK(strncmp(why.msg, bad[i].err, strlen(bad[i].err)) == 0);
        if (strncmp(why.msg, bad[i].err, strlen(bad[i].err)))
            fprintf(stderr, "  %zu: %s\n", i, why.msg);
    }
    /* what was loaded before stays */
    CHECK_INT(c.log.nfiles, 2);
    ccf_free(&c);
}

int main(void)
{
    test_config();
    test_pattern_errors();
    test_pattern_match();
    test_pattern_cost();
    test_fpos();
    test_plain_lines();
    printf("%d passed, %d failed\n", check_passed, check_failed);
    return check_failed != 0;
}
