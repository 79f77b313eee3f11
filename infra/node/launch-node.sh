#!/usr/bin/env bash
# One node of a CodeGrep training run: sets the node's environment, then hands over (exec, so
# signals reach it) to the launcher:
#   codegrep-train launch --config CONFIG                                   (one node)
#   codegrep-train launch --config CONFIG --node-rank NODE_RANK \
#     --set cluster.nodes=NNODES --set cluster.master_addr=MASTER_ADDR \
#     --set cluster.master_port=MASTER_PORT --set cluster.gpus_per_node=NPROC_PER_NODE (NNODES > 1)
# The launcher builds every command and gives each the torchrun variables that ms-swift's CLI
# reads (NPROC_PER_NODE, NNODES, NODE_RANK, MASTER_ADDR, MASTER_PORT) from the config's
# `cluster` section; on several nodes the --set options make that section the allocation's.
#
# Usage: launch-node.sh CONFIG.yaml [more codegrep-train launch options]
#   CODEGREP_TRAIN_ACTION=plan launch-node.sh CONFIG.yaml    # only print this node's plan
# Environment (each optional; a value already set wins):
#   NNODES=1          more than 1: a multi-node run; then also
#   NODE_RANK=0  MASTER_ADDR (required, node 0's address)  MASTER_PORT=29500
#   NPROC_PER_NODE    GPUs of this node: counted from CUDA_VISIBLE_DEVICES, else nvidia-smi
#   USE_HF=1          ms-swift downloads models from the Hugging Face hub, not ModelScope
# On one node the torchrun variables are left alone: the launcher sets them from the config
# (an NPROC_PER_NODE exported here would put a 1-GPU config's `swift rlhf` under torchrun).
# Not set on purpose: PYTORCH_CUDA_ALLOC_CONF=expandable_segments (vLLM's sleep mode, used by
# colocate with --sleep_level, refuses it) and NCCL_* (the cluster's network: set them outside).
set -euo pipefail

me=$(basename "$0")
die() {
  echo "$me: $*" >&2
  exit 2
}

[[ $# -ge 1 ]] || die "usage: $me CONFIG.yaml [codegrep-train options]"
config=$1
shift
[[ -f $config ]] || die "no config file: $config"

count_gpus() {
  if [[ -n ${CUDA_VISIBLE_DEVICES:-} ]]; then
    local IFS=,
    # shellcheck disable=SC2086  # split on commas on purpose
    set -- $CUDA_VISIBLE_DEVICES
    echo "$#"
  elif command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --list-gpus | grep -c '^GPU' || true
  else
    echo 0
  fi
}

whole() {
  [[ $2 =~ ^[0-9]+$ ]] || die "$1 must be a whole number, got '$2'"
}

export USE_HF=${USE_HF:-1}
export TOKENIZERS_PARALLELISM=${TOKENIZERS_PARALLELISM:-false}

action=${CODEGREP_TRAIN_ACTION:-launch}
case $action in
  launch | plan) ;;
  *) die "CODEGREP_TRAIN_ACTION must be launch or plan, got '$action'" ;;
esac

nnodes=${NNODES:-1}
whole NNODES "$nnodes"
((nnodes >= 1)) || die "NNODES must be at least 1"
gpus=${NPROC_PER_NODE:-$(count_gpus)}
whole NPROC_PER_NODE "$gpus"
if [[ $action == launch ]] && ((gpus < 1)); then
  die "no GPU on $(hostname): set CUDA_VISIBLE_DEVICES or NPROC_PER_NODE (a CPU config: run codegrep-train directly)"
fi

cmd=(codegrep-train "$action" --config "$config")
if ((nnodes > 1)); then
  export NNODES=$nnodes
  export NODE_RANK=${NODE_RANK:-0}
  [[ -n ${MASTER_ADDR:-} ]] || die "MASTER_ADDR (the address of node 0) is needed with NNODES > 1"
  export MASTER_ADDR
  export MASTER_PORT=${MASTER_PORT:-29500}
  export NPROC_PER_NODE=$gpus
  whole NODE_RANK "$NODE_RANK"
  whole MASTER_PORT "$MASTER_PORT"
  ((NODE_RANK < NNODES)) || die "NODE_RANK $NODE_RANK is not below NNODES $NNODES"
  if [[ $action == launch ]]; then
    cmd+=(--node-rank "$NODE_RANK")
  fi
  cmd+=(
    --set "cluster.nodes=$NNODES"
    --set "cluster.master_addr=$MASTER_ADDR"
    --set "cluster.master_port=$MASTER_PORT"
  )
  if ((gpus >= 1)); then
    cmd+=(--set "cluster.gpus_per_node=$NPROC_PER_NODE")
  fi
  echo "$me: node $NODE_RANK of $NNODES on $(hostname), $gpus GPUs," \
    "rendezvous $MASTER_ADDR:$MASTER_PORT" >&2
else
  echo "$me: one node ($(hostname)), $gpus GPUs" >&2
fi
echo "$me: + ${cmd[*]} $*" >&2
exec "${cmd[@]}" "$@"
