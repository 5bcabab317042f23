#!/bin/bash
# Usage: matrix.sh ROUNDS OUTFILE [bench args: clients window total warm size]
cd "$(dirname "$0")"
R=$1; OUT=$2; shift 2
for r in $(seq 1 $R); do
  for v in ${VARIANTS:-wsecho tokio-mt tokio-ct epoll epoll-nommsg epoll-flushall}; do
    ./run1.sh $v "$@" 2>/dev/null | tee -a $OUT
  done
done
