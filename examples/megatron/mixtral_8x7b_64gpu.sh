#!/bin/bash
# Mixtral 8x7B with Megatron-LM on 64 H100 SXM: tp 2, pp 4 with 2 virtual stages, ep 8, dropless
# all-to-all dispatch with grouped GEMMs. calisim reads it with
#   calisim simulate --megatron examples/megatron/mixtral_8x7b_64gpu.sh --system h100-sxm \
#                    --set model.vocab_size=32000
# and searches layouts for the same run with
#   calisim search --megatron examples/megatron/mixtral_8x7b_64gpu.sh --system h100-sxm \
#                  --set model.vocab_size=32000
# PRECISION=fp8 (calisim: --var PRECISION=fp8) trains the expert and attention GEMMs in FP8.

NNODES=${NNODES:-8}
GPUS_PER_NODE=8
PRECISION=${PRECISION:-bf16}
TP=2
PP=4
EP=8

if [ "$PRECISION" = "fp8" ]; then
    PRECISION_ARGS="--bf16 --fp8-format hybrid --fp8-recipe tensorwise --fp8-param-gather"
else
    PRECISION_ARGS="--bf16"
fi

torchrun --nproc-per-node=$GPUS_PER_NODE --nnodes=$NNODES --node-rank=${NODE_RANK:-0} \
    --master-addr=${MASTER_ADDR:-localhost} --master-port=6000 \
    pretrain_gpt.py \
    --num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 \
    --num-attention-heads 32 --group-query-attention --num-query-groups 8 \
    --seq-length 4096 --max-position-embeddings 32768 \
    --position-embedding-type rope --rotary-base 1000000 \
    --normalization RMSNorm --swiglu --disable-bias-linear --untie-embeddings-and-output-weights \
    --attention-dropout 0.0 --hidden-dropout 0.0 \
    --num-experts 8 --moe-router-topk 2 --moe-router-load-balancing-type aux_loss \
    --moe-aux-loss-coeff 1e-2 --moe-grouped-gemm --moe-token-dispatcher-type alltoall \
    --tensor-model-parallel-size $TP --pipeline-model-parallel-size $PP \
    --num-layers-per-virtual-pipeline-stage 4 \
    --expert-model-parallel-size $EP --expert-tensor-parallel-size 1 \
    --sequence-parallel --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather \
    --recompute-granularity selective --recompute-modules moe_act layernorm \
    --micro-batch-size 1 --global-batch-size 256 \
    $PRECISION_ARGS \
    --cross-entropy-loss-fusion --cross-entropy-fusion-impl te \
    --tokenizer-type Llama2Tokenizer --tokenizer-model /data/mixtral/tokenizer.model \
    --data-path /data/mixtral/tokens_text_document --split 99,1,0 \
    --lr 1e-4 --min-lr 1e-5 --lr-decay-style cosine --weight-decay 0.1 --clip-grad 1.0 \
    --train-iters 100000 --log-interval 10 --save /checkpoints/mixtral --save-interval 1000
