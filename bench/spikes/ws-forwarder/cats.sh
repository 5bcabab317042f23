#!/bin/bash
# Category breakdown (inclusive %) of a perf data file, by kernel protocol entry points + user space
F=$1
perf report -i $F --children --sort symbol --stdio -g none 2>/dev/null | grep -v '^#' | awk '
/\] udp_sendmsg / {us+=$1}
/\] udp_recvmsg / {ur+=$1}
/\] tcp_sendmsg / {ts+=$1}
/\] tcp_recvmsg / {tr+=$1}
/\] do_epoll_wait / {ep+=$1}
/\] do_syscall_64 / {sc+=$1}
/\] net_rx_action / {rx+=$1}
/\] __schedule / {sch+=$1}
END {printf "UDP send %.1f%% | UDP recv %.1f%% | TCP send %.1f%% | TCP recv %.1f%% | epoll_wait %.1f%% | all syscalls %.1f%% | (within: loopback rx softirq %.1f%%, __schedule %.1f%%)\n", us, ur, ts, tr, ep, sc, rx, sch}'
perf report -i $F --no-children --sort dso --stdio -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -5 | sed -E 's/ +/ /g' | tr '\n' ';'; echo
