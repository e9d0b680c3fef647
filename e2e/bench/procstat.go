package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clockTicks is the kernel's USER_HZ, the unit of utime and stime in
// /proc/PID/stat. It is 100 on every Linux architecture Go supports
// (sysconf(_SC_CLK_TCK) is a compile-time constant there).
const clockTicks = 100

// errProcStat is returned for a /proc file that does not parse.
var errProcStat = errors.New("bench: malformed /proc file")

// cpuTicks parses the contents of /proc/PID/stat and returns utime+stime
// in clock ticks. The command name (field 2) is in parentheses and may hold
// spaces and parentheses itself, so the fields are counted after the last
// ')'.
func cpuTicks(stat string) (uint64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("%w: stat without ')'", errProcStat)
	}
	f := strings.Fields(stat[i+1:])
	// After ')': state(3) ppid(4) ... utime(14) stime(15): indexes 11, 12.
	if len(f) < 13 {
		return 0, fmt.Errorf("%w: stat has %d fields after the name", errProcStat, len(f))
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	s, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("%w: utime %q stime %q", errProcStat, f[11], f[12])
	}
	return u + s, nil
}

// memKB holds the resident set fields of /proc/PID/status, in KiB.
type memKB struct {
	RSS, HWM int64
}

// parseStatusMem parses VmRSS and VmHWM out of /proc/PID/status.
func parseStatusMem(status string) (memKB, error) {
	var m memKB
	var seen int
	sc := bufio.NewScanner(strings.NewReader(status))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			return memKB{}, fmt.Errorf("%w: %s: %q", errProcStat, k, v)
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || n < 0 {
			return memKB{}, fmt.Errorf("%w: %s: %q", errProcStat, k, v)
		}
		if k == "VmRSS" {
			m.RSS = n
		} else {
			m.HWM = n
		}
		seen++
	}
	if seen != 2 {
		return memKB{}, fmt.Errorf("%w: status lacks VmRSS or VmHWM", errProcStat)
	}
	return m, nil
}

// readCPUSeconds is the CPU time (user+system) process pid used so far.
func readCPUSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("bench: %w", err)
	}
	t, err := cpuTicks(string(b))
	if err != nil {
		return 0, err
	}
	return float64(t) / clockTicks, nil
}

// readMem reads process pid's VmRSS and VmHWM.
func readMem(pid int) (memKB, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memKB{}, fmt.Errorf("bench: %w", err)
	}
	return parseStatusMem(string(b))
}

// rssKB is the resident set of /proc/PID/status split by kind, in KiB:
// VmRSS = RssAnon + RssFile + RssShmem. File-backed pages include a bolt
// store's mmap of its data file; anonymous ones are the heap and stacks.
type rssKB struct {
	RSS, HWM, Anon, File, Shmem int64
}

// parseStatusRSS parses VmRSS, VmHWM, RssAnon, RssFile and RssShmem out of
// /proc/PID/status; every one must be present (Linux 4.5 and later).
func parseStatusRSS(status string) (rssKB, error) {
	var m rssKB
	fields := map[string]*int64{"VmRSS": &m.RSS, "VmHWM": &m.HWM, "RssAnon": &m.Anon, "RssFile": &m.File, "RssShmem": &m.Shmem}
	seen := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(status))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		dst, want := fields[k]
		if !ok || !want {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" || seen[k] {
			return rssKB{}, fmt.Errorf("%w: %s: %q", errProcStat, k, v)
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || n < 0 {
			return rssKB{}, fmt.Errorf("%w: %s: %q", errProcStat, k, v)
		}
		*dst = n
		seen[k] = true
	}
	if len(seen) != len(fields) {
		return rssKB{}, fmt.Errorf("%w: status lacks one of VmRSS, VmHWM, RssAnon, RssFile, RssShmem", errProcStat)
	}
	return m, nil
}

// readRSS reads process pid's resident set split by kind.
func readRSS(pid int) (rssKB, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return rssKB{}, fmt.Errorf("bench: %w", err)
	}
	return parseStatusRSS(string(b))
}
