#!/bin/bash
# Usage: run1.sh NAME  -> starts that server, runs bench, kills server. Backend udpecho must run on 9100.
cd "$(dirname "$0")"; ulimit -n 20000
B=target/release
case "$1" in
  wsecho) node wsecho.cjs 9001 & P=$!; URL=ws://127.0.0.1:9001/ ;;
  tokio-mt) $B/tokiofwd 9002 9100 mt & P=$!; URL=ws://127.0.0.1:9002/ ;;
  tokio-ct) $B/tokiofwd 9002 9100 ct & P=$!; URL=ws://127.0.0.1:9002/ ;;
  epoll) $B/epollfwd 9003 9100 & P=$!; URL=ws://127.0.0.1:9003/ ;;
  epoll-nommsg) $B/epollfwd 9003 9100 nommsg & P=$!; URL=ws://127.0.0.1:9003/ ;;
  epoll-flushall) $B/epollfwd 9003 9100 flushall & P=$!; URL=ws://127.0.0.1:9003/ ;;
  *) echo unknown; exit 1;;
esac
sleep 0.6
if [ -n "$RUSTLOAD" ]; then R=$($B/loadgen $URL $P "${@:2}"); else R=$(node bench.cjs $URL $P "${@:2}"); fi
echo "$1 $R"
kill $P; wait $P 2>/dev/null
