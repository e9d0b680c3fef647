package main

import (
	"context"
	"net"

	"github.com/jackc/pgx/v5"
)

// A postgres arm's runs also count the CPU of the PostgreSQL server
// processes serving the run's database (role "postgres", core-seconds
// per 1,000 requests, as redis-server's is counted for the redis store):
// at the measured window's start the backends connected to the database
// are listed from pg_stat_activity (only the measured arm's pool is busy:
// the other arms' connections idle), and their utime+stime is read from
// /proc at both ends. A backend that starts within the window is not
// counted, nor one that ends in it, nor the server's own background
// processes (WAL writer, checkpointer); the figure is a lower bound.
// Counted only when the server is on this machine (a loopback host).

// pgBackendCPU is one window's reading.
type pgBackendCPU struct {
	start map[int]float64
}

// pgCPUHooks returns the start hook of arm a's window and what adds the
// "postgres" figure to a run's CPU map at its end; both do nothing for
// an arm that is not on the run's database, or a server elsewhere.
func (s *stack) pgCPUHooks(ctx context.Context, a *arm) (start func(), done func(requests int, cpu map[string]float64)) {
	start, done = func() {}, func(int, map[string]float64) {}
	if a.Store != "postgres" || s.pg == nil || !loopbackServer(s.pg.admin) {
		return start, done
	}
	var c pgBackendCPU
	start = func() {
		pids, err := s.pgBackendPids(ctx)
		if err == nil {
			c.begin(pids)
		}
	}
	done = func(requests int, cpu map[string]float64) {
		if v, ok := c.seconds(); ok && requests > 0 {
			cpu["postgres"] = v / float64(requests) * 1000
		}
	}
	return start, done
}

// begin reads the CPU of pids.
func (c *pgBackendCPU) begin(pids []int) {
	c.start = make(map[int]float64, len(pids))
	for _, pid := range pids {
		if v, err := readCPUSeconds(pid); err == nil {
			c.start[pid] = v
		}
	}
}

// seconds is the CPU the processes begin read have used since, summed
// over those still running; false when there is none.
func (c *pgBackendCPU) seconds() (float64, bool) {
	var sum float64
	n := 0
	for pid, v0 := range c.start {
		if v1, err := readCPUSeconds(pid); err == nil && v1 >= v0 {
			sum += v1 - v0
			n++
		}
	}
	return sum, n > 0
}

// pgBackendPids lists the server processes connected to the run's
// database, on the stack's one monitoring connection (to the admin
// database, so it is not among them), opened on first use.
func (s *stack) pgBackendPids(ctx context.Context) ([]int, error) {
	if s.pgStat == nil {
		cctx, cancel := context.WithTimeout(ctx, pgConnectTimeout)
		defer cancel()
		conn, err := pgx.Connect(cctx, s.pg.admin)
		if err != nil {
			return nil, err
		}
		s.pgStat = conn
	}
	rows, err := s.pgStat.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE datname = $1", s.pg.name)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int])
}

// loopbackServer reports whether dsn's server is on this machine: a
// loopback address, localhost, or a Unix socket directory.
func loopbackServer(dsn string) bool {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return false
	}
	if cfg.Host == "localhost" || len(cfg.Host) > 0 && cfg.Host[0] == '/' {
		return true
	}
	ip := net.ParseIP(cfg.Host)
	return ip != nil && ip.IsLoopback()
}
