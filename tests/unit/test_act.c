/* The executor's readers of outside text: scontrol's one-line node and job
 * records (real 22.05 output) into the facts guardrails check, the
 * approvers file with its line-numbered errors, and the seal a journal
 * entry read back from Redis must carry. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "actions/approvals.h"
#include "actions/seal.h"
#include "actions/slurm.h"

static const char drained[] =
    "NodeName=gpu-003 Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=1 "
    "CPUTot=1 CPULoad=0.00 AvailableFeatures=(null) ActiveFeatures=(null) "
    "Gres=(null) NodeAddr=127.0.0.1 NodeHostName=localhost Port=16903 "
    "Version=22.05.8 OS=Linux 6.18.44-fc-v669 #1 SMP PREEMPT_DYNAMIC @0  "
    "RealMemory=100 AllocMem=0 FreeMem=23712 Sockets=1 Boards=1 "
    "State=IDLE+DRAIN ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A "
    "MCS_label=N/A Partitions=gpu  BootTime=2026-11-21T05:49:06 "
    "SlurmdStartTime=2026-11-21T17:47:57 LastBusyTime=2026-11-21T17:47:57 "
    "CfgTRES=cpu=1,mem=100M,billing=1 AllocTRES= CapWatts=n/a CurrentWatts=0 "
    "AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s "
    "Reason=cascade inc-12ab: hw.ecc x=y [root@2026-11-21T17:57:11]\n";

static const char job[] =
    "JobId=1 JobName=wrap UserId=root(0) GroupId=root(0) MCS_label=N/A "
    "Priority=4294901759 Nice=0 Account=(null) QOS=(null) JobState=COMPLETED "
    "Reason=None Dependency=(null) Requeue=1 Restarts=1 BatchFlag=1 Reboot=0 "
    "ExitCode=0:0 RunTime=00:05:00 TimeLimit=365-00:00:00 Partition=gpu "
    "ReqNodeList=gpu-001 ExcNodeList=(null) NodeList=gpu-001 NumNodes=1 "
    "Command=(null) WorkDir=/tmp/sl StdErr=/tmp/sl/slurm-1.out\n";

static const char *fact(json_t *f, const char *k)
{
    const char *v = json_string_value(json_object_get(f, k));
    return v ? v : "(none)";
}

static void test_node(void)
{
    json_t *f = json_object();
    cs_err err = {{0}};

    CHECK_INT(slurm_parse_node(drained, strlen(drained), f, &err), 0);
    CHECK_STR(fact(f, "node.state"), "DRAINED");
    CHECK_STR(fact(f, "node.state_raw"), "IDLE+DRAIN");
    CHECK_STR(fact(f, "node.drained_by"), "cascade");
    /* the reason keeps its '=' and loses SLURM's [user@time] */
    CHECK_STR(fact(f, "node.reason"), "cascade inc-12ab: hw.ecc x=y");
    CHECK_STR(fact(f, "node.reason_by"), "root");
    json_decref(f);

    /* a human's drain on a busy node */
    static const char human[] = "NodeName=g7 State=MIXED+DRAIN "
                                "Reason=disk swap OPS-12 [alice@2026-11-21T10:00:00]";
    f = json_object();
    CHECK_INT(slurm_parse_node(human, strlen(human), f, &err), 0);
    CHECK_STR(fact(f, "node.state"), "DRAINING");
    CHECK_STR(fact(f, "node.drained_by"), "human");
    CHECK_STR(fact(f, "node.reason_by"), "alice");
    json_decref(f);

    static const char idle[] = "NodeName=g8 State=IDLE Reason=";
    f = json_object();
    CHECK_INT(slurm_parse_node(idle, strlen(idle), f, &err), 0);
    CHECK_STR(fact(f, "node.state"), "IDLE");
    CHECK_STR(fact(f, "node.drained_by"), "none");
    json_decref(f);

    static const char reboot[] = "NodeName=g9 State=MIXED+DRAIN+REBOOT_REQUESTED";
    f = json_object();
    CHECK_INT(slurm_parse_node(reboot, strlen(reboot), f, &err), 0);
    CHECK_STR(fact(f, "node.state"), "REBOOT_REQUESTED");
    json_decref(f);

    /* what scontrol says of a node it does not know is no record */
    static const char unknown[] = "Node gpu-999 not found\n";
    f = json_object();
    CHECK_INT(slurm_parse_node(unknown, strlen(unknown), f, &err), -1);
    CHECK(strstr(err.msg, "not a node record") != NULL);
    CHECK_INT((int)json_object_size(f), 0);
    json_decref(f);
}

static void test_job(void)
{
    json_t *f = json_object();
    cs_err err = {{0}};

    CHECK_INT(slurm_parse_job(job, strlen(job), f, &err), 0);
    CHECK_STR(fact(f, "job.state"), "COMPLETED");
    CHECK_STR(fact(f, "job.name"), "wrap");
    CHECK_STR(fact(f, "job.partition"), "gpu");
    CHECK_STR(fact(f, "job.workdir"), "/tmp/sl");
    CHECK_STR(fact(f, "job.exclude"), "(null)");
    json_decref(f);
    f = json_object();
    CHECK_INT(slurm_parse_job("slurm_load_jobs error: Invalid job id specified",
                              48, f, &err), -1);
    CHECK(strstr(err.msg, "not a job record") != NULL);
    json_decref(f);
}

static char dir[] = "/tmp/test_act.XXXXXX"; /* mkdtemp's template */

static const char *write_file(const char *name, const char *text)
{
    static char path[128];
    FILE *fp;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    fp = fopen(path, "w");
    fputs(text, fp);
    fclose(fp);
    return path;
}

static void test_approvers(void)
{
    cs_err err = {{0}};
    approvers *p;
    char text[512];

    write_file("alice.token", "s3cret-a\n");
    setenv("TEST_TOKEN_BOB", "s3cret-b", 1);
    snprintf(text, sizeof text, "# who may approve\nalice file:%s/alice.token "
             "change,job\n\nbob env:TEST_TOKEN_BOB destructive  # admin\n", dir);
    p = apv_load(write_file("ok", text), &err);
    CHECK(p != NULL);
    if (p)
        CHECK_INT((int)apv_count(p), 2);
    apv_free(p);

    /* every mistake names its line, and no token is ever echoed */
    p = apv_load(write_file("inline", "alice s3cret-inline change\n"), &err);
    CHECK(p == NULL);
    CHECK(strstr(err.msg, "inline:1: a secret must be file:PATH or env:NAME") != NULL);
    CHECK(strstr(err.msg, "s3cret") == NULL);
    p = apv_load(write_file("class", "# c\nalice env:TEST_TOKEN_BOB change,root\n"),
                 &err);
    CHECK(p == NULL);
    CHECK(strstr(err.msg, "class:2: unknown playbook class 'root'") != NULL);
    p = apv_load(write_file("noenv", "alice env:NO_SUCH_VAR_X change\n"), &err);
    CHECK(p == NULL);
    CHECK(strstr(err.msg, "noenv:1: environment variable NO_SUCH_VAR_X") != NULL);
    p = apv_load(write_file("same", "a env:TEST_TOKEN_BOB job\n"
                                    "b env:TEST_TOKEN_BOB job\n"), &err);
    CHECK(p == NULL);
    CHECK(strstr(err.msg, "same:2: b has the same token as a") != NULL);
    p = apv_load(write_file("short", "alice env:TEST_TOKEN_BOB\n"), &err);
    CHECK(p == NULL);
    CHECK(strstr(err.msg, "short:1: expected") != NULL);
    p = apv_load(write_file("empty", "# nobody\n"), &err);
    CHECK(p == NULL);
    CHECK(strstr(err.msg, "no approvers") != NULL);
}

/* The journal's seal: any sealed field changed, moved, added or dropped,
 * another id or another key, and it no longer verifies. */
static void test_seal(void)
{
    cs_err err = {{0}};
    seal *s = seal_new("0123456789abcdef0123456789abcdef", 32, &err);
    seal *other = seal_new(NULL, 0, &err);
    seal_entry e = {{0}};
    char mac[SEAL_HEX];

    CHECK(s && other);
    if (!s || !other)
        return;
    CHECK(seal_kept(s) && !seal_kept(other));
    CHECK(seal_new("short", 5, &err) == NULL);
    CHECK(strstr(err.msg, "it needs 32 at least") != NULL);
    CHECK_INT(seal_field_of("who"), SEAL_WHO);
    CHECK_INT(seal_field_of("why"), -1);
    seal_entry_set(&e, SEAL_REQ, "{\"action\":{\"playbook\":\"node.drain\"}}");
    seal_entry_set(&e, SEAL_STATE, "pending");
    seal_entry_set(&e, SEAL_PLAYBOOK, "node.drain 1.0.0");
    seal_sign(s, "act-1", &e, mac);
    CHECK_INT((int)strlen(mac), SEAL_HEX - 1);
    CHECK_INT(seal_verify(s, "act-1", &e, mac), 0);
    CHECK_INT(seal_verify(s, "act-2", &e, mac), -1);
    CHECK_INT(seal_verify(other, "act-1", &e, mac), -1);
    CHECK_INT(seal_verify(s, "act-1", &e, "00"), -1);
    seal_entry_set(&e, SEAL_STATE, "running");
    CHECK_INT(seal_verify(s, "act-1", &e, mac), -1);
    seal_entry_set(&e, SEAL_STATE, "pending");
    seal_entry_set(&e, SEAL_WHO, "human:mallory");
    CHECK_INT(seal_verify(s, "act-1", &e, mac), -1);
    seal_entry_set(&e, SEAL_WHO, ""); /* empty is not absent */
    CHECK_INT(seal_verify(s, "act-1", &e, mac), -1);
    seal_entry_set(&e, SEAL_WHO, NULL);
    CHECK_INT(seal_verify(s, "act-1", &e, mac), 0);
    seal_entry_clear(&e);
    seal_free(s);
    seal_free(other);
}

int main(void)
{
    if (!mkdtemp(dir))
        return 2;
    test_node();
    test_job();
    test_approvers();
    test_seal();
    static const char *const made[] = {"alice.token", "ok", "inline", "class",
                                       "noenv", "same", "short", "empty"};
    for (size_t i = 0; i < sizeof made / sizeof *made; i++) {
        char path[128];
        snprintf(path, sizeof path, "%s/%s", dir, made[i]);
        unlink(path);
    }
    rmdir(dir);
    return check_report();
}
