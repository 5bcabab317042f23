package main

// S2's bulk transfer (bench/s2.mjs): the sender writes --chunk-byte writes as
// fast as the transport takes them until stdin ends; the receiver counts the
// bytes delivered during --seconds after the first one and reports goodput.

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"time"

	kcp "github.com/xtaci/kcp-go/v5"
)

// Bulk KCP needs a window for a 200 Mbit/s × 30 ms path (≈ 540 segments):
// kcptun's "fast" profiles use windows of this size.
const kcpBulkWindow = 1024

type bulkOptions struct {
	options
	chunk   int
	seconds float64
}

func bulkReceive(o bulkOptions) error {
	conn, closeAll, err := accept(o.options)
	if err != nil {
		return err
	}
	defer closeAll()
	if s, ok := conn.(*kcp.UDPSession); ok {
		s.SetWindowSize(kcpBulkWindow, kcpBulkWindow)
	}
	buf := make([]byte, 1<<16)
	var total int64
	var first time.Time
	window := time.Duration(o.seconds * float64(time.Second))
	for {
		if !first.IsZero() {
			_ = conn.SetReadDeadline(first.Add(window))
		}
		n, err := conn.Read(buf)
		if first.IsZero() && n > 0 {
			first = time.Now()
		}
		total += int64(n)
		if err != nil {
			// kcp-go wraps its timeout error, hence errors.As.
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, io.EOF) {
				break
			}
			return err
		}
		if !first.IsZero() && time.Since(first) >= window {
			break
		}
	}
	secs := time.Since(first).Seconds()
	emit(map[string]any{"event": "result", "bytes": total, "seconds": secs, "mbps": float64(total) * 8 / secs / 1e6})
	return nil
}

func bulkSend(o bulkOptions) error {
	conn, err := dial(o.options)
	if err != nil {
		return err
	}
	defer conn.Close()
	if s, ok := conn.(*kcp.UDPSession); ok {
		s.SetWindowSize(kcpBulkWindow, kcpBulkWindow)
	}
	stop := stopped(o.maxMs)
	buf := make([]byte, o.chunk)
	var written int64
	done := make(chan error, 1)
	go func() {
		for seq := uint32(0); ; seq++ {
			binary.LittleEndian.PutUint32(buf, seq)
			n, err := conn.Write(buf)
			written += int64(n)
			if err != nil {
				done <- err
				return
			}
		}
	}()
	select {
	case <-stop:
	case err := <-done:
		return err
	}
	emit(map[string]any{"event": "result", "written": written})
	return nil
}
