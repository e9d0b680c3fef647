package etcdtest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"

	"go.etcd.io/etcd/client/pkg/v3/types"
	"go.etcd.io/etcd/server/v3/etcdserver/api/membership"
)

// clusterToken is etcdserver's default -initial-cluster-token: with the
// peer URLs it makes each member's ID.
const clusterToken = "etcdtest"

// maxHead bounds the request head a gate reads to learn the sender.
const maxHead = 64 << 10

// Partitioned is a Cluster whose members talk to each other only through
// gates, one in front of each member's peer port (the URL the member
// advertises), so that Partition can cut members off from each other
// while their clients still reach them.
//
// A gate learns which member a peer connection comes from by the first
// request's X-Server-From header (etcd's peer transport sets it on every
// Raft stream, message and snapshot request): a connection between
// members on two sides of a partition is closed before anything is
// forwarded. A connection without the header (a version probe) passes
// only while no partition is set.
type Partitioned struct {
	*Cluster

	mu    sync.Mutex
	side  map[string]int // member ID (hex) -> side; nil: no partition
	ids   map[string]int // member ID (hex) -> member index
	gates []*gate
}

// StartPartitionable starts an n-member cluster like Start, each member's
// peer traffic through a gate, and registers with tb.Cleanup the gates'
// close (after the members' kill).
func StartPartitionable(tb testing.TB, n int, args ...string) *Partitioned {
	tb.Helper()
	return startRetried(tb, "gated members", n, args, tryStartGated)
}

func tryStartGated(tb testing.TB, bin string, n int, args []string) (*Partitioned, error) {
	p := &Partitioned{Cluster: &Cluster{}, ids: map[string]int{}}
	tb.Cleanup(p.close) // before the members': it runs after their kill
	var initial []string
	for i := range n {
		client, err := freePort()
		if err != nil {
			return nil, err
		}
		peer, err := freePort()
		if err != nil {
			return nil, err
		}
		g, err := p.newGate(i, fmt.Sprintf("127.0.0.1:%d", peer))
		if err != nil {
			return nil, err
		}
		m := newMember(tb, bin, fmt.Sprintf("m%d", i), client, peer)
		m.args, m.advertisePeer = args, "http://"+g.ln.Addr().String()
		urls, err := types.NewURLs([]string{m.advertisePeer})
		if err != nil {
			return nil, fmt.Errorf("etcdtest: %w", err)
		}
		p.ids[membership.NewMember(m.name, urls, clusterToken, nil).ID.String()] = i
		p.members = append(p.members, m)
		initial = append(initial, m.name+"="+m.advertisePeer)
	}
	if err := p.launch(initial); err != nil {
		return nil, err
	}
	return p, nil
}

// Partition cuts member i off from every other member: connections
// between it and them are closed, and new ones refused, until Heal. Its
// clients still reach it.
func (p *Partitioned) Partition(i int) {
	p.mu.Lock()
	p.side = map[string]int{}
	for id, j := range p.ids {
		if j == i {
			p.side[id] = 1
		} else {
			p.side[id] = 0
		}
	}
	p.mu.Unlock()
	p.cutAll()
}

// Heal ends the partition: members connect to each other again.
func (p *Partitioned) Heal() {
	p.mu.Lock()
	p.side = nil
	p.mu.Unlock()
}

// allowed reports whether a peer connection from the member of ID from
// may reach member to.
func (p *Partitioned) allowed(from string, to int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.side == nil {
		return true
	}
	src, ok := p.side[from]
	if !ok {
		return false
	}
	for id, j := range p.ids {
		if j == to {
			return p.side[id] == src
		}
	}
	return false
}

func (p *Partitioned) cutAll() {
	p.mu.Lock()
	gates := append([]*gate(nil), p.gates...)
	p.mu.Unlock()
	for _, g := range gates {
		g.cutAll()
	}
}

func (p *Partitioned) close() {
	p.mu.Lock()
	gates := p.gates
	p.gates = nil
	p.mu.Unlock()
	for _, g := range gates {
		g.close()
	}
}

// gate is the listener in front of one member's peer port.
type gate struct {
	p      *Partitioned
	member int
	target string
	ln     net.Listener

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func (p *Partitioned) newGate(member int, target string) (*gate, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("etcdtest: gate: %w", err)
	}
	g := &gate{p: p, member: member, target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	p.mu.Lock()
	p.gates = append(p.gates, g)
	p.mu.Unlock()
	g.wg.Add(1)
	go g.serve()
	return g, nil
}

func (g *gate) serve() {
	defer g.wg.Done()
	for {
		c, err := g.ln.Accept()
		if err != nil {
			return
		}
		if !g.track(c) {
			_ = c.Close()
			return
		}
		g.wg.Add(1)
		go g.handle(c)
	}
}

// handle reads the first request's head, closes a connection across the
// partition, and otherwise forwards both ways until either side closes.
func (g *gate) handle(c net.Conn) {
	defer g.wg.Done()
	defer g.untrack(c)
	br := bufio.NewReaderSize(c, maxHead)
	req, err := http.ReadRequest(bufio.NewReader(io.LimitReader(&peekReader{br: br}, maxHead)))
	if err != nil || !g.p.allowed(req.Header.Get("X-Server-From"), g.member) {
		return
	}
	up, err := net.Dial("tcp", g.target)
	if err != nil {
		return
	}
	if !g.track(up) {
		_ = up.Close()
		return
	}
	defer g.untrack(up)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(c, up)
		_ = c.Close()
	}()
	_, _ = io.Copy(up, br) // the head peeked, then the rest
	_ = up.Close()
	<-done
}

// peekReader reads what br holds without consuming it, growing the peek
// until a request head's end: the head goes on to the member unchanged.
type peekReader struct {
	br  *bufio.Reader
	off int
}

func (r *peekReader) Read(b []byte) (int, error) {
	for r.br.Buffered() <= r.off {
		if _, err := r.br.Peek(r.br.Buffered() + 1); err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				return 0, io.EOF
			}
			return 0, err
		}
	}
	avail, _ := r.br.Peek(r.br.Buffered())
	n := copy(b, avail[r.off:])
	r.off += n
	return n, nil
}

func (g *gate) track(c net.Conn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.conns == nil {
		return false
	}
	g.conns[c] = struct{}{}
	return true
}

func (g *gate) untrack(c net.Conn) {
	_ = c.Close()
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.conns, c)
}

func (g *gate) cutAll() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for c := range g.conns {
		_ = c.Close()
	}
}

func (g *gate) close() {
	_ = g.ln.Close()
	g.mu.Lock()
	for c := range g.conns {
		_ = c.Close()
	}
	g.conns = nil
	g.mu.Unlock()
	g.wg.Wait()
}
