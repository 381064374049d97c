#!/bin/bash
# Llama-3-70B pre-training with Megatron-LM on 8 nodes of 8 H100 SXM: the layout of calisim's
# flagship (configs/strategies/llama3-70b-64gpu.json). calisim reads it with
#   calisim simulate --megatron examples/megatron/llama3_70b_64gpu.sh --system h100-sxm \
#                    --set model.vocab_size=128256
# (the Hugging Face tokenizer's vocabulary is not in the script).
#SBATCH --job-name=llama3-70b
#SBATCH --nodes=8
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=8
#SBATCH --exclusive

set -euo pipefail
export CUDA_DEVICE_MAX_CONNECTIONS=1

GPUS_PER_NODE=8
NUM_NODES=${SLURM_NNODES:-8}
MEGATRON=${MEGATRON_PATH:-/opt/megatron-lm}
MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
CHECKPOINTS=/checkpoints/llama3-70b
DATA_PREFIX=/data/llama3/tokens_text_document

MODEL_ARGS=(
    --num-layers 80
    --hidden-size 8192
    --ffn-hidden-size 28672
    --num-attention-heads 64
    --group-query-attention
    --num-query-groups 8
    --kv-channels 128
    --seq-length 8192
    --max-position-embeddings 8192
    --position-embedding-type rope
    --rotary-base 500000
    --normalization RMSNorm
    --swiglu
    --untie-embeddings-and-output-weights
    --disable-bias-linear
    --attention-dropout 0.0
    --hidden-dropout 0.0
)

TRAINING_ARGS=(
    --micro-batch-size 1
    --global-batch-size 128
    --train-iters 100000
    --lr 1.5e-4 --min-lr 1.5e-5 --lr-decay-style cosine --lr-warmup-iters 2000
    --weight-decay 0.1 --adam-beta1 0.9 --adam-beta2 0.95 --clip-grad 1.0
    --init-method-std 0.008
    --bf16
    --use-distributed-optimizer
    --use-flash-attn
)

# 80 layers over 4 pipeline ranks, 4 layers per virtual stage: 5 chunks per rank.
PARALLEL_ARGS=(
    --tensor-model-parallel-size 8
    --pipeline-model-parallel-size 4
    --num-layers-per-virtual-pipeline-stage 4
    --sequence-parallel
)

DATA_ARGS=(
    --data-path "$DATA_PREFIX"
    --split 99,1,0
    --tokenizer-type HuggingFaceTokenizer
    --tokenizer-model meta-llama/Meta-Llama-3-70B
)

LOGGING_ARGS=(
    --log-interval 1
    --save-interval 1000
    --eval-interval 1000
    --eval-iters 10
    --save "$CHECKPOINTS"
    --load "$CHECKPOINTS"
)

srun torchrun \
    --nproc_per_node "$GPUS_PER_NODE" --nnodes "$NUM_NODES" \
    --rdzv-backend c10d --rdzv-endpoint "$MASTER_ADDR:29500" \
    "$MEGATRON/pretrain_gpt.py" \
    "${MODEL_ARGS[@]}" \
    "${TRAINING_ARGS[@]}" \
    "${PARALLEL_ARGS[@]}" \
    "${DATA_ARGS[@]}" \
    "${LOGGING_ARGS[@]}" 2>&1 | tee "train_$(date +%s).log"
