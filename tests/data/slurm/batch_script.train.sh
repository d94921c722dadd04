#!/bin/bash
#SBATCH --job-name=llama-7b-ft
#SBATCH --account=llm
export NCCL_DEBUG=INFO
export NCCL_IB_HCA=mlx5_0
export WANDB_API_KEY=secret123
torchrun --nproc_per_node=8 train.py --batch-size 64 --seq-len 2048 --precision fp32 --num_workers 8
sleep 600
