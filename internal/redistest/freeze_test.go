package redistest_test

import (
	"net"
	"testing"
	"time"

	"github.com/fencegate/fencegate/internal/redistest"
)

// While frozen the server answers nobody; once Freeze's wait returns it
// answers again.
func TestFreeze(t *testing.T) {
	s := redistest.Start(t, redistest.DebugArgs...)
	wait, err := s.Freeze(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.DialTimeout("tcp", s.Addr(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if n, err := c.Read(make([]byte, 16)); err == nil {
		t.Fatalf("a frozen server answered %d bytes", n)
	}
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if got, err := do(t, s.Addr(), "PING"); err != nil || got != "+PONG" {
		t.Fatalf("PING after the freeze = %q, %v", got, err)
	}
}

// Without DebugArgs the server refuses DEBUG, and wait says so.
func TestFreezeNeedsDebugArgs(t *testing.T) {
	s := redistest.Start(t)
	wait, err := s.Freeze(time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if err := wait(); err == nil {
		t.Fatal("DEBUG SLEEP accepted without --enable-debug-command")
	}
}
