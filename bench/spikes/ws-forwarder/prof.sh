#!/bin/bash
# Usage: prof.sh VARIANT LABEL [bench args]  -> perf profile of forwarder during one bench run
cd "$(dirname "$0")"; ulimit -n 20000
B=target/release
V=$1; L=$2; shift 2
case "$V" in
  epoll) $B/epollfwd 9003 9100 2>/dev/null & P=$!; URL=ws://127.0.0.1:9003/ ;;
  tokio-ct) $B/tokiofwd 9002 9100 ct 2>/dev/null & P=$!; URL=ws://127.0.0.1:9002/ ;;
  tokio-mt) $B/tokiofwd 9002 9100 mt 2>/dev/null & P=$!; URL=ws://127.0.0.1:9002/ ;;
  wsecho) node --perf-basic-prof wsecho.cjs 9001 2>/dev/null & P=$!; URL=ws://127.0.0.1:9001/ ;;
esac
sleep 0.6
perf record -q -g -o runs/perf.$L.data -p $P 2>/dev/null & PP=$!
sleep 0.3
if [ -n "$RUSTLOAD" ]; then $B/loadgen $URL $P "$@"; else node bench.cjs $URL $P "$@"; fi
kill -INT $PP; wait $PP
kill $P; wait $P 2>/dev/null
perf report -i runs/perf.$L.data --no-children --sort symbol --stdio -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -40 > runs/prof.$L.txt
./cats.sh runs/perf.$L.data
