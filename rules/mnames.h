/* The metric names the rules read: the one list the engine (which keeps a
 * series for these alone) and the collectors (which drop every other
 * sample at the edge) share. A name here is what a `metric` signal
 * carries, after any renaming a collector does. */
#ifndef CS_RULES_MNAMES_H
#define CS_RULES_MNAMES_H

/* dcgm-exporter's names for the GPU fields the rules read. */
#define M_UTIL "DCGM_FI_DEV_GPU_UTIL"
#define M_POWER "DCGM_FI_DEV_POWER_USAGE"
#define M_TEMP "DCGM_FI_DEV_GPU_TEMP"
#define M_CLOCK "DCGM_FI_DEV_SM_CLOCK"
#define M_THROTTLE "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"
/* Its SW (32) and HW (64) thermal slowdown bits. */
#define THROTTLE_THERMAL 96
/* A training job's progress (not a series) and its step time. */
#define M_STEP "tb_step"
#define M_STEP_TIME "tb_perf_step_time_seconds"
/* One rank's compute time of a step, before it waits in the step's
 * collectives (labels job, rank): the fail-slow rule compares ranks. */
#define M_RANK_COMPUTE "tb_perf_rank_compute_seconds"
#define M_RETX "hw_rdma_tx_retx_pkts_total"
#define M_ACK "hw_rdma_tx_ack_timeout_total"
#define M_TCP_RETX "hw_tcp_retransmits_total"
/* Correctable ECC counters: DCGM's volatile and aggregate single-bit
 * totals, and the AMD exporter's HBM correctable count (seed 004). */
#define M_SBE_VOL "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"
#define M_SBE_AGG "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL"
#define M_RAS_CE "hw_gpu_ras_umc_ce_total"
#define M_HW_POWER "hw_gpu_power_watts"
#define M_SCRAPE "hw_scrape_duration_seconds"
#define M_DMESG "hw_dmesg_gpu_errors_total"
#define M_CPU "ray_node_cpu_utilization"
#define M_IO "hw_io_pressure_full_pct"
#define M_MEM_RAY "ray_node_mem_used"
#define M_MEM_HW "hw_mem_used_bytes"

/* 1 when the rules keep a series of this metric (every name above but
 * M_STEP, which is read as progress, not kept). */
int mn_series(const char *name);
/* 1 when a rule reads this metric at all: mn_series or M_STEP. */
int mn_read(const char *name);
/* The names mn_read accepts, for listing: *n is set to their count. */
const char *const *mn_names(size_t *n);

#endif
