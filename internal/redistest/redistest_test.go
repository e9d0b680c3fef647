package redistest_test

import (
	"bufio"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/internal/redistest"
)

// do sends one RESP command and returns the first line of the answer.
func do(t *testing.T, addr string, args ...string) (string, error) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	var b strings.Builder
	b.WriteString("*" + itoa(len(args)) + "\r\n")
	for _, a := range args {
		b.WriteString("$" + itoa(len(a)) + "\r\n" + a + "\r\n")
	}
	if _, err := c.Write([]byte(b.String())); err != nil {
		return "", err
	}
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSpace(line)
	if strings.HasPrefix(line, "$") && line != "$-1" {
		v, err := r.ReadString('\n')
		return strings.TrimSpace(v), err
	}
	return line, nil
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestRestartKeepsAppendOnlyData(t *testing.T) {
	s := redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always")
	if got, err := do(t, s.Addr(), "SET", "k", "v"); err != nil || got != "+OK" {
		t.Fatalf("SET = %q, %v", got, err)
	}
	s.Kill()
	if _, err := do(t, s.Addr(), "PING"); err == nil {
		t.Fatal("killed server still answers")
	}
	s.Restart()
	if got, err := do(t, s.Addr(), "GET", "k"); err != nil || got != "v" {
		t.Fatalf("GET after restart = %q, %v; want v", got, err)
	}
}

func TestServersAreSeparate(t *testing.T) {
	a, b := redistest.Start(t), redistest.Start(t)
	if a.Addr() == b.Addr() || a.Dir() == b.Dir() {
		t.Fatalf("two servers share %s / %s", a.Addr(), a.Dir())
	}
	if got, err := do(t, a.Addr(), "SET", "k", "a"); err != nil || got != "+OK" {
		t.Fatalf("SET = %q, %v", got, err)
	}
	if got, err := do(t, b.Addr(), "GET", "k"); err != nil || got != "$-1" {
		t.Fatalf("GET on the other server = %q, %v; want nil", got, err)
	}
}
