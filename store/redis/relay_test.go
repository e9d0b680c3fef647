package redis

import (
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/internal/redistest"
	"github.com/fencegate/fencegate/store/storetest"
)

// BenchmarkBeginCommitOverHop is BenchmarkBeginCommit through a relay
// that holds every chunk it forwards, each way, for at least hopDelay
// (the timer's slack makes it more on a busy machine): a network hop, as
// between a sidecar and a Redis on another node, where the loopback
// benchmark hides what a round trip costs.
func BenchmarkBeginCommitOverHop(b *testing.B) {
	for _, n := range []int{1, 64} {
		b.Run("resources="+strconv.Itoa(n), func(b *testing.B) {
			srv := redistest.Start(b, "--appendonly", "no")
			addr := delayRelay(b, srv.Addr(), hopDelay)
			c := goredis.NewClient(&goredis.Options{Addr: addr})
			b.Cleanup(func() { _ = c.Close() })
			h := &roundTrips{}
			c.AddHook(h)
			s, err := New(c, Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			storetest.BeginCommitLoop(b, s, "hop-", n, b.N)
			b.StopTimer()
			b.ReportMetric(float64(h.n.Load())/float64(b.N), "round-trips/op")
		})
	}
}

// hopDelay is the relay's delay each way.
const hopDelay = 100 * time.Microsecond

// delayRelay listens on a loopback port and relays every connection to
// target, holding each chunk read for delay before writing it on; it
// stops with the test.
func delayRelay(tb testing.TB, target string, delay time.Duration) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				_ = in.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, in, out)
			mu.Unlock()
			wg.Add(2)
			go func() { defer wg.Done(); delayCopy(out, in, delay) }()
			go func() { defer wg.Done(); delayCopy(in, out, delay) }()
		}
	}()
	tb.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return l.Addr().String()
}

// delayCopy copies src to dst, each chunk delay after it was read.
func delayCopy(dst, src net.Conn, delay time.Duration) {
	defer func() { _ = dst.Close() }()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			time.Sleep(delay)
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				_ = src.Close()
			}
			return
		}
	}
}
