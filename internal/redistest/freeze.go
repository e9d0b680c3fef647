package redistest

import (
	"bufio"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/fencegate/fencegate/clock"
)

// DebugArgs are the redis-server arguments Freeze needs: DEBUG allowed
// from loopback connections.
var DebugArgs = []string{"--enable-debug-command", "local"}

// Freeze makes the whole server stop serving for d (DEBUG SLEEP, so the
// server must run with DebugArgs): no command of any client is read or
// answered until it wakes, and then the commands that arrived meanwhile
// run, even those whose client gave up and closed its connection. Freeze
// returns once the command is sent; wait returns when the server has
// answered it (it is awake again), or the error that prevented that.
func (s *Server) Freeze(d time.Duration) (wait func() error, err error) {
	c, err := net.DialTimeout("tcp", s.Addr(), time.Second)
	if err != nil {
		return nil, fmt.Errorf("redistest: freeze: %w", err)
	}
	secs := strconv.FormatFloat(d.Seconds(), 'f', 3, 64)
	cmd := "*3\r\n$5\r\nDEBUG\r\n$5\r\nSLEEP\r\n$" + strconv.Itoa(len(secs)) + "\r\n" + secs + "\r\n"
	if _, err := c.Write([]byte(cmd)); err != nil {
		c.Close()
		return nil, fmt.Errorf("redistest: freeze: %w", err)
	}
	return func() error {
		defer c.Close()
		_ = c.SetDeadline(clock.Real().Now().Add(d + 10*time.Second))
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			return fmt.Errorf("redistest: freeze: %w", err)
		}
		if line = strings.TrimSpace(line); line != "+OK" {
			return fmt.Errorf("redistest: freeze: DEBUG SLEEP answered %q (start the server with DebugArgs)", line)
		}
		return nil
	}, nil
}
