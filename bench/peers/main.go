// Peers for the side-by-side benchmarks: KCP (kcp-go in turbo mode, the
// version pinned in go.mod) and TCP with Nagle off, each as a sender (client,
// namespace A) or a receiver (server, namespace B). S1 (bench/s1.mjs) is
// below; S2's bulk transfer (bench/s2.mjs) is in bulk.go.
//
//	peers kcp|tcp recv --listen HOST:PORT --count N [--size 400] [--max-ms T]
//	peers kcp|tcp send --to HOST:PORT --count N [--size 400] [--hz 60] [--max-ms T]
//
// Messages are --size bytes: u32 seq, u32 size, u64 send time (ns,
// CLOCK_MONOTONIC, which every network namespace shares), then bytes derived
// from seq; little-endian. The same format as Ricochet's peer
// (wasm/native/examples/s1_peer.rs). Each process prints
// JSON lines: {"event":"listening"} (receivers), then one {"event":"result"}.
// Receivers stop after --count messages; senders keep their connection (so
// repairs can finish) until stdin ends or --max-ms passes.
package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	kcp "github.com/xtaci/kcp-go/v5"
	"golang.org/x/sys/unix"
)

// KCP turbo mode as the scenario states it: nodelay=1, interval=10 ms,
// fast resend after 2 duplicate ACKs, no congestion control.
const (
	kcpNoDelay  = 1
	kcpInterval = 10
	kcpResend   = 2
	kcpNoCC     = 1
	headerBytes = 16
)

type options struct {
	proto, role, listen, to string
	count, size             int
	hz                      float64
	maxMs                   int
}

func monoNs() int64 {
	var ts unix.Timespec
	// CLOCK_MONOTONIC cannot fail on Linux; a zero stamp would show as a huge latency.
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

func fill(buf []byte, seq uint32) {
	binary.LittleEndian.PutUint32(buf[0:], seq)
	binary.LittleEndian.PutUint32(buf[4:], uint32(len(buf)))
	x := seq*2654435761 | 1
	for i := headerBytes; i < len(buf); i++ {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		buf[i] = byte(x)
	}
}

// intact checks size and padding, so a corrupted or misframed message counts.
func intact(buf []byte) bool {
	seq := binary.LittleEndian.Uint32(buf[0:])
	want := make([]byte, len(buf))
	fill(want, seq)
	copy(want[8:16], buf[8:16])
	return string(want) == string(buf)
}

func emit(v map[string]any) {
	b, _ := json.Marshal(v)
	fmt.Println(string(b))
}

// stopped closes when stdin reaches end of file or maxMs passes.
func stopped(maxMs int) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, bufio.NewReader(os.Stdin))
		close(done)
	}()
	both := make(chan struct{})
	go func() {
		select {
		case <-done:
		case <-time.After(time.Duration(maxMs) * time.Millisecond):
		}
		close(both)
	}()
	return both
}

func tune(s *kcp.UDPSession) {
	s.SetNoDelay(kcpNoDelay, kcpInterval, kcpResend, kcpNoCC)
	s.SetStreamMode(false)
	_ = s.SetReadBuffer(4 << 20)
	_ = s.SetWriteBuffer(4 << 20)
}

func accept(o options) (net.Conn, func(), error) {
	if o.proto == "kcp" {
		l, err := kcp.ListenWithOptions(o.listen, nil, 0, 0)
		if err != nil {
			return nil, nil, err
		}
		emit(map[string]any{"event": "listening"})
		s, err := l.AcceptKCP()
		if err != nil {
			return nil, nil, err
		}
		tune(s)
		return s, func() { s.Close(); l.Close() }, nil
	}
	l, err := net.Listen("tcp4", o.listen)
	if err != nil {
		return nil, nil, err
	}
	emit(map[string]any{"event": "listening"})
	c, err := l.Accept()
	if err != nil {
		return nil, nil, err
	}
	_ = c.(*net.TCPConn).SetNoDelay(true)
	return c, func() { c.Close(); l.Close() }, nil
}

func receive(o options) error {
	conn, closeAll, err := accept(o)
	if err != nil {
		return err
	}
	defer closeAll()
	stop := stopped(o.maxMs)
	lat := make([]int64, 0, o.count)
	var orderErrors, corrupt int
	next := uint32(0)
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, o.size)
		for len(lat) < o.count {
			if _, err := io.ReadFull(conn, buf); err != nil {
				done <- err
				return
			}
			now := monoNs()
			if !intact(buf) {
				corrupt++
				continue
			}
			if seq := binary.LittleEndian.Uint32(buf[0:]); seq != next {
				orderErrors++
				next = seq
			}
			next++
			lat = append(lat, (now-int64(binary.LittleEndian.Uint64(buf[8:])))/1000)
		}
		done <- nil
	}()
	var readErr error
	select {
	case readErr = <-done:
	case <-stop:
		// Closing ends the reader's ReadFull; wait for it so lat is ours alone.
		conn.Close()
		<-done
		readErr = errors.New("stopped before every message arrived")
	}
	r := map[string]any{"event": "result", "received": len(lat), "order_errors": orderErrors, "corrupt": corrupt, "latencies_us": lat}
	if readErr != nil {
		r["error"] = readErr.Error()
	}
	emit(r)
	return nil
}

func dial(o options) (net.Conn, error) {
	if o.proto == "kcp" {
		s, err := kcp.DialWithOptions(o.to, nil, 0, 0)
		if err != nil {
			return nil, err
		}
		tune(s)
		return s, nil
	}
	c, err := net.Dial("tcp4", o.to)
	if err != nil {
		return nil, err
	}
	// Go sets TCP_NODELAY by default; said again because it is the point.
	_ = c.(*net.TCPConn).SetNoDelay(true)
	return c, nil
}

func send(o options) error {
	conn, err := dial(o)
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := stopped(o.maxMs)
	period := time.Duration(float64(time.Second) / o.hz)
	buf := make([]byte, o.size)
	start := time.Now()
	var lateMax time.Duration
	sent := 0
	for ; sent < o.count; sent++ {
		due := start.Add(time.Duration(sent) * period)
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		if late := time.Since(due); late > lateMax {
			lateMax = late
		}
		fill(buf, uint32(sent))
		binary.LittleEndian.PutUint64(buf[8:], uint64(monoNs()))
		if _, err := conn.Write(buf); err != nil {
			return err
		}
	}
	<-stop
	r := map[string]any{"event": "result", "sent": sent, "late_tick_max_us": lateMax.Microseconds()}
	if o.proto == "kcp" {
		s := kcp.DefaultSnmp.Copy()
		r["kcp"] = map[string]any{"out_segs": s.OutSegs, "retrans_segs": s.RetransSegs, "fast_retrans_segs": s.FastRetransSegs, "lost_segs": s.LostSegs, "out_bytes": s.OutBytes}
	}
	emit(r)
	return nil
}

func main() {
	roles := map[string]bool{"send": true, "recv": true, "bulk-send": true, "bulk-recv": true}
	if len(os.Args) < 3 || (os.Args[1] != "kcp" && os.Args[1] != "tcp") || !roles[os.Args[2]] {
		fmt.Fprintln(os.Stderr, "usage: peers kcp|tcp send|recv|bulk-send|bulk-recv [--listen|--to HOST:PORT] --count N [--size B] [--hz R] [--chunk B] [--seconds S] [--max-ms T]")
		os.Exit(2)
	}
	o := options{proto: os.Args[1], role: os.Args[2]}
	fs := flag.NewFlagSet("peers", flag.ExitOnError)
	fs.StringVar(&o.listen, "listen", "", "receiver: address to listen on")
	fs.StringVar(&o.to, "to", "", "sender: receiver's address")
	fs.IntVar(&o.count, "count", 10000, "messages")
	fs.IntVar(&o.size, "size", 400, "bytes per message (at least 16)")
	fs.Float64Var(&o.hz, "hz", 60, "messages per second")
	fs.IntVar(&o.maxMs, "max-ms", 600000, "give up after this long")
	chunk := fs.Int("chunk", 16384, "bulk: bytes per write")
	seconds := fs.Float64("seconds", 60, "bulk: measured window after the first byte")
	_ = fs.Parse(os.Args[3:])
	if o.size < headerBytes {
		fmt.Fprintln(os.Stderr, "--size must be at least 16")
		os.Exit(2)
	}
	runs := map[string]func() error{
		"send":      func() error { return send(o) },
		"recv":      func() error { return receive(o) },
		"bulk-send": func() error { return bulkSend(bulkOptions{o, *chunk, *seconds}) },
		"bulk-recv": func() error { return bulkReceive(bulkOptions{o, *chunk, *seconds}) },
	}
	if err := runs[o.role](); err != nil {
		fmt.Fprintf(os.Stderr, "peers %s %s: %v\n", o.proto, o.role, err)
		os.Exit(1)
	}
}
