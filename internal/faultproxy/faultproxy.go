package faultproxy

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fencegate/fencegate/clock"
)

// Mode is what the proxy does to traffic.
type Mode int32

// The modes.
const (
	Pass Mode = iota
	DropResponse
	Delay
	Cut
	Refuse
)

// String is the mode's name.
func (m Mode) String() string {
	switch m {
	case Pass:
		return "pass"
	case DropResponse:
		return "drop-response"
	case Delay:
		return "delay"
	case Cut:
		return "cut"
	case Refuse:
		return "refuse"
	}
	return fmt.Sprintf("Mode(%d)", int32(m))
}

// Stats counts what the proxy did.
type Stats struct {
	// Accepted connections (including refused and cut ones).
	Accepted int64
	// RequestBytes forwarded to the target.
	RequestBytes int64
	// ResponseBytes forwarded back to clients.
	ResponseBytes int64
	// DroppedResponses, CutConnections and RefusedConnections count faults.
	DroppedResponses   int64
	CutConnections     int64
	RefusedConnections int64
}

// Proxy is a running fault-injecting proxy.
type Proxy struct {
	target string
	ln     net.Listener

	mu        sync.Mutex
	mode      Mode
	remaining int  // faults left before switching to then; < 0: unlimited
	then      Mode // the mode after the remaining faults
	delay     time.Duration
	conns     map[*pair]struct{}
	closed    bool
	done      chan struct{}

	accepted, reqBytes, respBytes, dropped, cut, refused atomic.Int64
	wg                                                   sync.WaitGroup
}

type pair struct {
	client, server net.Conn
	once           sync.Once
}

func (p *pair) close() {
	p.once.Do(func() {
		p.client.Close()
		if p.server != nil {
			p.server.Close()
		}
	})
}

// Start starts a proxy to target ("127.0.0.1:8700") in mode Pass: it
// listens and serves in a goroutine of its own until Close, which stops
// it and waits for it and for every connection it carries.
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: %w", err)
	}
	p := &Proxy{target: target, ln: ln, conns: map[*pair]struct{}{}, remaining: -1, done: make(chan struct{})}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// Addr is the proxy's address (host:port).
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// URL is "http://" + Addr().
func (p *Proxy) URL() string { return "http://" + p.Addr() }

// SetMode switches to m until the next switch. Switching to Cut or Refuse
// closes every open connection at once.
func (p *Proxy) SetMode(m Mode) { p.setMode(m, -1, Pass) }

// SetModeN switches to m for the next n faults, then back to Pass.
func (p *Proxy) SetModeN(m Mode, n int) { p.setMode(m, n, Pass) }

// SetModeThen switches to m for the next n faults, then to then (for
// good): SetModeThen(DropResponse, 1, Refuse) loses one answer and then
// the whole service.
func (p *Proxy) SetModeThen(m Mode, n int, then Mode) { p.setMode(m, n, then) }

func (p *Proxy) setMode(m Mode, n int, then Mode) {
	p.mu.Lock()
	p.mode, p.remaining, p.then = m, n, then
	var open []*pair
	if m == Cut || m == Refuse {
		for c := range p.conns {
			open = append(open, c)
		}
	}
	p.mu.Unlock()
	for _, c := range open {
		c.close()
	}
}

// SetDelay sets the delay of mode Delay.
func (p *Proxy) SetDelay(d time.Duration) {
	p.mu.Lock()
	p.delay = d
	p.mu.Unlock()
}

// Mode is the current mode.
func (p *Proxy) Mode() Mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// closeAllLater closes every open connection from another goroutine (the
// caller holds p.mu, and may be one of the connections' own).
func (p *Proxy) closeAllLater() { go p.CutAll() }

// CutAll closes every open connection now, whatever the mode.
func (p *Proxy) CutAll() {
	p.mu.Lock()
	var open []*pair
	for c := range p.conns {
		open = append(open, c)
	}
	p.mu.Unlock()
	for _, c := range open {
		c.close()
	}
}

// Stats returns the counters.
func (p *Proxy) Stats() Stats {
	return Stats{
		Accepted: p.accepted.Load(), RequestBytes: p.reqBytes.Load(), ResponseBytes: p.respBytes.Load(),
		DroppedResponses: p.dropped.Load(), CutConnections: p.cut.Load(), RefusedConnections: p.refused.Load(),
	}
}

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.done)
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.CutAll()
	p.wg.Wait()
	return err
}

// fault consumes one fault of mode m if m is the current mode; it reports
// whether the fault applies (and the delay for Delay).
func (p *Proxy) fault(m Mode) (bool, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mode != m {
		return false, 0
	}
	d := p.delay
	if m == Delay {
		return true, d // delays are not counted
	}
	if p.remaining > 0 {
		p.remaining--
		if p.remaining == 0 {
			p.mode, p.remaining = p.then, -1
			if p.mode == Cut || p.mode == Refuse {
				defer p.closeAllLater()
			}
		}
	}
	return true, d
}

func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.accepted.Add(1)
		if ok, _ := p.fault(Refuse); ok {
			p.refused.Add(1)
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetLinger(0) // RST, not FIN
			}
			c.Close()
			continue
		}
		pr := &pair{client: c}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			return
		}
		p.conns[pr] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(1)
		go p.handle(pr)
	}
}

func (p *Proxy) forget(pr *pair) {
	pr.close()
	p.mu.Lock()
	delete(p.conns, pr)
	p.mu.Unlock()
}

func (p *Proxy) handle(pr *pair) {
	defer p.wg.Done()
	defer p.forget(pr)
	buf := make([]byte, 32<<10)
	// The first chunk decides Cut before anything reaches the target.
	n, err := pr.client.Read(buf)
	if n == 0 && err != nil {
		return
	}
	if ok, _ := p.fault(Cut); ok {
		p.cut.Add(1)
		return
	}
	server, derr := net.DialTimeout("tcp", p.target, 5*time.Second)
	if derr != nil {
		return
	}
	p.mu.Lock()
	pr.server = server
	closed := p.closed
	p.mu.Unlock()
	if closed {
		server.Close()
		return
	}
	var up sync.WaitGroup
	up.Add(1)
	go func() {
		defer up.Done()
		defer pr.close()
		if !p.forward(server, buf[:n], &p.reqBytes) {
			return
		}
		p.pump(pr.client, server, &p.reqBytes, nil)
	}()
	p.pump(server, pr.client, &p.respBytes, func() bool {
		if ok, _ := p.fault(DropResponse); ok {
			p.dropped.Add(1)
			return true
		}
		return false
	})
	pr.close()
	up.Wait()
}

// pump copies src to dst until either fails. drop, if set, is asked for
// every chunk; when it says so, the chunk is discarded and the pump ends.
func (p *Proxy) pump(src, dst net.Conn, counter *atomic.Int64, drop func() bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if drop != nil && drop() {
				return
			}
			if !p.forward(dst, buf[:n], counter) {
				return
			}
		}
		if err != nil {
			return // EOF or a closed connection: the pair is closed by the caller
		}
	}
}

// forward writes a chunk, after the delay when in mode Delay.
func (p *Proxy) forward(dst net.Conn, b []byte, counter *atomic.Int64) bool {
	if ok, d := p.fault(Delay); ok && d > 0 {
		t := clock.Real().NewTimer(d) // bytes move between real sockets: real time
		select {
		case <-t.C():
		case <-p.done:
			t.Stop()
			return false
		}
	}
	// Counted before the write: once the target has the bytes, its answer
	// may reach the client (and a test read the counter) before this
	// goroutine runs again.
	counter.Add(int64(len(b)))
	if _, err := dst.Write(b); err != nil {
		counter.Add(-int64(len(b)))
		return false
	}
	return true
}
