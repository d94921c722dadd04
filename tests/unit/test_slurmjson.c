/* The SLURM collector's readers: squeue/sinfo --json as Debian's SLURM
 * 22.05.8 printed them for the test cluster (tests/data/slurm, captured
 * from slurm_lib.sh's slurmctld: running, a node failed under a job, the
 * controller stopped), later shapes written after the 23.x API reference,
 * batch scripts read for a job's config (ingest/jobconf.h), and the
 * leaf switches of `scontrol show topology` (ingest/slurmtopo.h), as
 * 22.05.8 printed them with and without topology.conf. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ingest/jobconf.h"
#include "ingest/slurmjson.h"
#include "ingest/slurmtopo.h"

static const char *dir;

static char *slurp(const char *name, size_t *len)
{
    char path[1024];
    FILE *f;
    char *buf;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "rb");
    REQUIRE(f);
    buf = malloc(1 << 20);
    REQUIRE(buf);
    *len = fread(buf, 1, (1 << 20) - 1, f);
    buf[*len] = '\0';
    fclose(f);
    return buf;
}

static const sj_job *job(const sj_job *v, size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(v[i].id, id))
            return &v[i];
    return NULL;
}

static void test_recorded_jobs(void)
{
    size_t len, n;
    char *text = slurp("squeue.running.json", &len);
    sj_job *v;
    const sj_job *j;
    cs_err err;

    REQUIRE(sj_parse_jobs(text, len, &v, &n, &err) == 0);
    CHECK_INT(n, 4);
    REQUIRE((j = job(v, n, "1")));
    CHECK_STR(j->state, "RUNNING");
    CHECK_STR(j->name, "llama-7b-ft");
    CHECK_STR(j->account, "llm");
    CHECK_STR(j->nodes, "gpu-001");
    CHECK_STR(j->cluster, "cascade-test");
    CHECK_STR(j->reason, "");
    CHECK_INT(j->batch, 1);
    CHECK_INT(j->start, 1795712617);
    CHECK_INT(j->submit, 1795712615);
    REQUIRE((j = job(v, n, "3")));
    CHECK_STR(j->state, "PENDING");
    CHECK_STR(j->reason, "Dependency");
    CHECK_STR(j->dependency, "afterok:1(unfulfilled)");
    REQUIRE((j = job(v, n, "4")));
    CHECK_STR(j->state, "FAILED");
    CHECK_INT(j->exit_code, 768);
    sj_free_jobs(v, n);
    free(text);

    text = slurp("squeue.nodefail.json", &len);
    REQUIRE(sj_parse_jobs(text, len, &v, &n, &err) == 0);
    REQUIRE((j = job(v, n, "1")));
    CHECK_STR(j->state, "NODE_FAIL");
    CHECK_STR(j->reason, "NodeDown");
    REQUIRE((j = job(v, n, "3")));
    CHECK_STR(j->reason, "DependencyNeverSatisfied");
    CHECK_STR(j->dependency, "afterok:1(failed)");
    sj_free_jobs(v, n);
    free(text);

    /* the controller stopped: exit 0, an empty list, and errors */
    text = slurp("squeue.noctld.json", &len);
    CHECK_INT(sj_parse_jobs(text, len, &v, &n, &err), -1);
    CHECK(strstr(err.msg, "the controller answered with an error: Failed "
                          "while looking for jobs: Unspecified error") != NULL);
    free(text);
}

static void test_recorded_nodes(void)
{
    size_t len, n;
    char *text = slurp("sinfo.down.json", &len);
    sj_node *v;
    cs_err err;

    REQUIRE(sj_parse_nodes(text, len, &v, &n, &err) == 0);
    REQUIRE(n == 3);
    CHECK_STR(v[2].name, "gpu-003");
    CHECK_STR(v[2].state, "idle");
    CHECK_STR(v[2].flags, "DRAIN");
    CHECK_STR(v[2].reason, "cascade: test drain");
    CHECK_STR(v[2].reason_by, "root");
    CHECK_INT(v[2].reason_at, 1795712618);
    CHECK_INT(sj_node_down(&v[2]), 0);
    CHECK_STR(v[0].state, "allocated");
    free(v);
    free(text);
}

/* The shapes of later releases (v0.0.40: state lists, numbers as
 * objects), GRES and TRES counts. */
static void test_later_shapes(void)
{
    const char *jobs =
        "{\"jobs\":[{\"job_id\":77,\"job_state\":[\"FAILED\",\"COMPLETING\"],"
        "\"restart_cnt\":{\"set\":true,\"infinite\":false,\"number\":2},"
        "\"end_time\":{\"set\":true,\"number\":1795712700},"
        "\"start_time\":{\"set\":false,\"number\":0},"
        "\"gres_detail\":[\"gpu:a100:8(IDX:0-7)\",\"gpu:a100:4(IDX:0-3)\"],"
        "\"nodes\":\"gpu-[001-002]\"},"
        "{\"job_id\":78,\"job_state\":\"COMPLETING\","
        "\"tres_alloc_str\":\"cpu=8,gres/gpu:h100=4,node=1\"},"
        "{\"job_state\":\"RUNNING\"}],\"errors\":[]}";
    const char *nodes =
        "{\"nodes\":[{\"name\":\"gpu-9\",\"state\":[\"DOWN\",\"NOT_RESPONDING\"],"
        "\"gres\":\"gpu:h100:8(S:0-1),nic:2\",\"features\":\"rack-3,canary\","
        "\"address\":\"10.3.0.9\",\"hostname\":\"gpu-9\"}]}";
    sj_job *v;
    sj_node *nv;
    size_t n;
    cs_err err;

    REQUIRE(sj_parse_jobs(jobs, strlen(jobs), &v, &n, &err) == 0);
    CHECK_INT(n, 2); /* the one without a job_id is left out */
    CHECK_STR(v[0].state, "FAILED");
    CHECK_STR(v[0].flag, "COMPLETING");
    CHECK_INT(v[0].restart_cnt, 2);
    CHECK_INT(v[0].end, 1795712700);
    CHECK_INT(v[0].start, 0);
    CHECK_INT(v[0].gpus, 12);
    CHECK_STR(v[1].state, "");
    CHECK_STR(v[1].flag, "COMPLETING");
    CHECK_INT(v[1].gpus, 4);
    sj_free_jobs(v, n);
    REQUIRE(sj_parse_nodes(nodes, strlen(nodes), &nv, &n, &err) == 0);
    REQUIRE(n == 1);
    CHECK_STR(nv[0].state, "down");
    CHECK_STR(nv[0].flags, "NOT_RESPONDING");
    CHECK_INT(nv[0].gpus, 8);
    CHECK_INT(sj_node_down(&nv[0]), 1);
    CHECK_STR(nv[0].address, "10.3.0.9");
    CHECK_STR(nv[0].hostname, ""); /* the same as its name */
    char rack[64];
    CHECK_INT(sj_node_features(&nv[0], "canary", rack, sizeof rack), 1);
    CHECK_STR(rack, "rack-3");
    json_t *addrs = sj_node_addrs(&nv[0]);
    CHECK_INT(json_array_size(addrs), 1);
    CHECK_STR(json_string_value(json_array_get(addrs, 0)), "10.3.0.9");
    json_decref(addrs);
    snprintf(nv[0].address, sizeof nv[0].address, "%s", "127.0.0.1");
    CHECK(sj_node_addrs(&nv[0]) == NULL); /* loopback names every node */
    free(nv);

    /* v0.0.39's exit code object; a TRES list with gpumem first; a job
     * name that is not UTF-8 does not make the answer unreadable */
    const char *more =
        "{\"jobs\":[{\"job_id\":9,\"job_state\":[\"FAILED\"],\"name\":\"bad\xff\","
        "\"exit_code\":{\"status\":[\"ERROR\"],\"return_code\":{\"set\":true,\"number\":3}},"
        "\"tres_alloc_str\":\"cpu=8,gres/gpumem=80G,gres/gpu=2\"}]}";
    REQUIRE(sj_parse_jobs(more, strlen(more), &v, &n, &err) == 0);
    REQUIRE(n == 1);
    CHECK_INT(v[0].exit_code, 3);
    CHECK_INT(v[0].gpus, 2);
    CHECK_STR(v[0].name, "bad?");
    sj_free_jobs(v, n);

    /* a big job's hostlist, longer than any fixed field, kept whole */
    {
        char *big = malloc(64 * 1024), *w;
        REQUIRE(big);
        w = big + sprintf(big, "{\"jobs\":[{\"job_id\":10,\"job_state\":\"RUNNING\",\"nodes\":\"");
        for (int i = 0; i < 1000; i++)
            w += sprintf(w, "%sgpu-%04d", i ? "," : "", i * 2);
        sprintf(w, "\"}]}");
        REQUIRE(sj_parse_jobs(big, strlen(big), &v, &n, &err) == 0);
        REQUIRE(n == 1);
        CHECK_INT(strlen(v[0].nodes), 1000 * 8 + 999);
        sj_free_jobs(v, n);
        free(big);
    }

    CHECK_INT(sj_parse_jobs("{\"meta\":{}}", 11, &v, &n, &err), -1);
    CHECK(strstr(err.msg, "no \"jobs\" list") != NULL);
    CHECK_INT(sj_parse_jobs("{\"jobs\":[", 9, &v, &n, &err), -1);
    CHECK(strstr(err.msg, "not JSON: the answer ends inside its object") != NULL);
    /* the answer is scanned, not built: nesting and strings are checked,
     * what no field read crosses is not (a stray comma is let be) */
    CHECK_INT(sj_parse_jobs("{\"jobs\":[{\"job_id\":1]}]}", 24, &v, &n, &err), -1);
    CHECK(strstr(err.msg, "not JSON: ") != NULL);
    CHECK(v == NULL && n == 0);
    CHECK_INT(sj_parse_jobs("[1]", 3, &v, &n, &err), -1);
    CHECK(strstr(err.msg, "not JSON: no object at byte 0") != NULL);
}

static void check_config(const char *script, const char *want)
{
    json_t *c = jc_parse(script, strlen(script));
    char *got = json_dumps(c, JSON_COMPACT | JSON_SORT_KEYS);

    CHECK_STR(got, want);
    free(got);
    json_decref(c);
}

static void test_jobconf(void)
{
    size_t len;
    char *text = slurp("batch_script.train.sh", &len);
    json_t *c = jc_parse(text, len);
    char *got = json_dumps(c, JSON_COMPACT | JSON_SORT_KEYS);

    /* the recorded script: its options and NCCL variables, never the
     * WANDB key it exports */
    CHECK_STR(got, "{\"batch_size\":64,\"env\":{\"NCCL_DEBUG\":\"INFO\","
                   "\"NCCL_IB_HCA\":\"mlx5_0\"},\"num_workers\":8,"
                   "\"precision\":\"fp32\",\"seq_len\":2048}");
    free(got);
    json_decref(c);
    free(text);

    check_config("#!/bin/bash\n#SBATCH --batch-size=999\n"
                 "srun python train.py trainer.precision=bf16-mixed \\\n"
                 "  data.batch_size=32 model.max_seq_len=4096\n",
                 "{\"batch_size\":32,\"precision\":\"bf16\",\"seq_len\":4096}");
    check_config("accelerate launch run.py --per_device_train_batch_size 8 "
                 "--fp16 --gradient_checkpointing --dataloader_num_workers=4\n"
                 "python eval.py --batch-size 128\n",
                 "{\"batch_size\":8,\"gradient_checkpointing\":true,"
                 "\"num_workers\":4,\"precision\":\"fp16\"}");
    check_config("export GLOBAL_BATCH_SIZE=256\nTORCH_NCCL_ASYNC_ERROR_HANDLING=1 "
                 "torchrun x.py\nexport AWS_SECRET_ACCESS_KEY=x\n",
                 "{\"batch_size\":256,\"env\":{\"GLOBAL_BATCH_SIZE\":\"256\","
                 "\"TORCH_NCCL_ASYNC_ERROR_HANDLING\":\"1\"}}");
    check_config("export NVIDIA_API_KEY=nvapi-x\nexport NCCL_TOKEN=y\n"
                 "export NCCL_IB_HCA=mlx5\n",
                 "{\"env\":{\"NCCL_IB_HCA\":\"mlx5\"}}");
    check_config("python x.py --batch-size abc --num-workers -3 --precision x\n",
                 "{}");
    check_config("", "{}");
}

typedef struct racks {
    char seen[1024];
    int n;
} racks;

static void add_rack(void *arg, const char *node, const char *sw)
{
    racks *r = arg;
    size_t at = strlen(r->seen);

    snprintf(r->seen + at, sizeof r->seen - at, "%s%s=%s", at ? " " : "",
             node, sw);
    r->n++;
}

static void test_topology(void)
{
    size_t len;
    char *text = slurp("topology.tree.txt", &len);
    racks r = {"", 0};
    cs_err err = {{0}};

    /* two leaf switches under a spine: the spine's Nodes are no rack */
    CHECK_INT(stopo_parse(text, len, add_rack, &r, &err), 2);
    CHECK_STR(r.seen, "gpu-001=leaf1 gpu-002=leaf1 gpu-003=leaf2");
    free(text);

    text = slurp("topology.none.txt", &len);
    r.seen[0] = '\0';
    r.n = 0;
    CHECK_INT(stopo_parse(text, len, add_rack, &r, &err), 0);
    CHECK_INT(r.n, 0);
    free(text);

    /* what is malformed is named, with its line */
    const char *bad = "SwitchName=s0 Level=0 Nodes=gpu-001\n"
                      "SwitchName=s1 Level=0 Nodes=gpu-[003-\n";
    CHECK_INT(stopo_parse(bad, strlen(bad), add_rack, &r, &err), -1);
    CHECK(strstr(err.msg, "line 2: switch s1: Nodes=gpu-[003- is not a "
                          "hostlist") != NULL);
    bad = "SwitchName=s0 Level=zero Nodes=gpu-001";
    CHECK_INT(stopo_parse(bad, strlen(bad), add_rack, &r, &err), -1);
    CHECK(strstr(err.msg, "line 1: Level is not a number") != NULL);
    /* no trailing newline, tabs, unknown keys: read */
    r.seen[0] = '\0';
    bad = "SwitchName=t9\tLevel=0 Foo LinkSpeed=1 Nodes=n[1-2]";
    CHECK_INT(stopo_parse(bad, strlen(bad), add_rack, &r, &err), 1);
    CHECK_STR(r.seen, "n1=t9 n2=t9");
}

int main(int argc, char **argv)
{
    REQUIRE(argc == 2);
    dir = argv[1];
    test_recorded_jobs();
    test_recorded_nodes();
    test_later_shapes();
    test_jobconf();
    test_topology();
    printf("%d passed, %d failed\n", check_passed, check_failed);
    return check_failed != 0;
}
