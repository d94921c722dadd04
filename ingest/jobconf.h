/* A job's launch configuration, read from its batch script: the `config`
 * of a job signal, which a fix patches (job.resubmit's batch_size,
 * num_workers, fp16, env). Documented rules, in docs/COLLECTORS.md:
 *
 * - options on any command line of the script (torchrun, python, srun,
 *   deepspeed, accelerate launch), as --name VALUE, --name=VALUE, or
 *   Hydra's name=VALUE and a.b.name=VALUE; '-' and '_' alike:
 *     batch_size, per_device_train_batch_size, train_batch_size,
 *       micro_batch_size                            -> batch_size
 *     num_workers, dataloader_num_workers            -> num_workers
 *     seq_len, seq_length, max_seq_len, max_seq_length,
 *       block_size                                   -> seq_len
 *     precision (bf16..., 16... or fp16..., 32 or fp32) -> precision
 *     --bf16, --fp16 (flags)                         -> precision
 *     --gradient_checkpointing (flag, or true/false) -> gradient_checkpointing
 *   the first one given wins;
 * - `export NAME=VALUE` and `NAME=VALUE` lines of the variables a fix may
 *   set (NCCL_*, TORCH_*, PYTORCH_*, CUDA_*, OMP_*, UCX_*, GLOO_*,
 *   NVIDIA_*, and names ending in BATCH_SIZE; never a name with KEY,
 *   TOKEN, SECRET, PASSW or CREDENTIAL in it) -> env; no other variable
 *   is kept (a script's environment holds secrets); a BATCH_SIZE
 *   variable is the batch size when no option gave one;
 * - comments and #SBATCH lines are not read. */
#ifndef CS_JOBCONF_H
#define CS_JOBCONF_H

#include <stddef.h>

#include <jansson.h>

/* The bytes of a script read at most: the rest is not looked at. */
#define JC_MAX_SCRIPT (256 * 1024)

/* A new object (empty when nothing was found); NULL only when out of
 * memory. */
json_t *jc_parse(const char *script, size_t len);

#endif
