/* Remote-write bodies for bench/remote_write.sh: N files of S samples
 * each, snappy-compressed protobuf as Prometheus sends them (one sample a
 * series, labels sorted), in dcgm-exporter's shape: each host's GPUs
 * export 25 fields, of which 5 are names the rules read. As Prometheus
 * does, the series are split into SHARDS (default 8) sent in parallel,
 * each shard's requests in order: body i is shard i % SHARDS's, whose
 * series are its own hosts', at time BASE + (i / SHARDS) * 1000 ms, so
 * that a TSDB takes every sample as the next of its series. Files are
 * DIR/shard.K/body.NNNNNN.
 *
 *   bench_rwgen DIR N S [SHARDS [BASE_MS]]
 *
 * Prints the samples written and how many the rules read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <errno.h>
#include <sys/stat.h>

#include "rwbody.h"

static const char *const fields[] = {
    "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
    "DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_DEV_MEMORY_TEMP",
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
    "DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_ENC_UTIL", "DCGM_FI_DEV_DEC_UTIL",
    "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_USED",
    "DCGM_FI_DEV_FB_RESERVED", "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
    "DCGM_FI_DEV_VGPU_LICENSE_STATUS", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
    "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_ROW_REMAP_FAILURE",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
    "DCGM_FI_PROF_DRAM_ACTIVE", "DCGM_FI_PROF_PCIE_TX_BYTES"};
#define NFIELDS (sizeof fields / sizeof *fields)
#define KEPT 5 /* the first five */

/* one body: its series appended as they are written */
static unsigned char body_pb[16 << 20];
static size_t body_n;

static pbuf one_series;

/* Sample k of a body of a shard: host, GPU and field from k. */
static void one(size_t k, size_t shard, size_t s, int64_t ms)
{
    pbuf ts = {.n = 0};
    char host[32], gpu[8], uuid[48];
    size_t f = k % NFIELDS, g = (k / NFIELDS) % 8,
           h = shard * ((s + NFIELDS * 8 - 1) / (NFIELDS * 8)) +
               k / NFIELDS / 8; /* no host in two shards */

    snprintf(host, sizeof host, "gpu-%04zu", h);
    snprintf(gpu, sizeof gpu, "%zu", g);
    snprintf(uuid, sizeof uuid, "GPU-5fd4a4bc-%04zu-%zu", h, g);
    pb_label(&ts, "DCGM_FI_DRIVER_VERSION", "550.54.15");
    pb_label(&ts, "Hostname", host);
    pb_label(&ts, "UUID", uuid);
    pb_label(&ts, "__name__", fields[f]);
    pb_label(&ts, "cluster", "bench");
    pb_label(&ts, "device", "nvidia0");
    pb_label(&ts, "gpu", gpu);
    pb_label(&ts, "instance", "10.0.0.1:9400");
    pb_label(&ts, "job", "dcgm");
    pb_label(&ts, "modelName", "NVIDIA H100 80GB HBM3");
    pb_sample(&ts, 40.0 + (double)(k % 50), ms);
    one_series.n = 0;
    pb_series(&one_series, &ts);
    memcpy(body_pb + body_n, one_series.b, one_series.n);
    body_n += one_series.n;
}

int main(int argc, char **argv)
{
    long n, s, shards;
    int64_t base;
    size_t kept = 0, len;

    if (argc < 4 || (n = atol(argv[2])) <= 0 || (s = atol(argv[3])) <= 0 ||
        (shards = argc > 4 ? atol(argv[4]) : 8) <= 0) {
        fprintf(stderr, "usage: bench_rwgen DIR N S [SHARDS [BASE_MS]]\n");
        return 2;
    }
    base = argc > 5 ? atoll(argv[5])
                    : (int64_t)time(NULL) * 1000 - (n / shards + 1) * 1000;
    for (long k = 0; k < shards; k++) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/shard.%ld", argv[1], k);
        if (mkdir(dir, 0755) && errno != EEXIST) {
            perror(dir);
            return 1;
        }
    }
    for (long i = 0; i < n; i++) {
        char path[4096], *body;
        FILE *f;

        body_n = 0;
        for (long k = 0; k < s; k++) {
            one((size_t)k, (size_t)(i % shards), (size_t)s,
                base + (i / shards) * 1000);
            kept += (size_t)k % NFIELDS < KEPT;
            if (body_n > sizeof body_pb - 4096) {
                fprintf(stderr, "bench_rwgen: S too large\n");
                return 2;
            }
        }
        snprintf(path, sizeof path, "%s/shard.%ld/body.%06ld", argv[1],
                 i % shards, i);
        if (!(body = rw_snap_raw(body_pb, body_n, &len)) || !(f = fopen(path, "wb")) ||
            fwrite(body, 1, len, f) != len || fclose(f)) {
            perror(path);
            return 1;
        }
        free(body);
    }
    printf("%ld samples, %zu of names the rules read\n", n * s, kept);
    return 0;
}
