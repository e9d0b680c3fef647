package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"

	"github.com/fencegate/fencegate/clock"
)

// machineInfo is where and on what the benchmark ran.
type machineInfo struct {
	CPUModel  string `json:"cpuModel"`
	CPUs      int    `json:"cpus"`
	Kernel    string `json:"kernel"`
	GoVersion string `json:"goVersion"`
	Date      string `json:"date"`
	Commit    string `json:"commit"`
	Dirty     bool   `json:"dirty"`
	MemTotal  string `json:"memTotal"`
}

// readMachine gathers the machine's description; what cannot be read is
// left "unknown".
func readMachine(root string, ck clock.Clock) machineInfo {
	m := machineInfo{CPUModel: "unknown", Kernel: "unknown", Commit: "unknown", MemTotal: "unknown",
		CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), Date: ck.Now().UTC().Format("2006-01-02 15:04 MST")}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		m.CPUModel, m.CPUs = parseCPUInfo(f)
		f.Close()
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				m.MemTotal = strings.TrimSpace(v)
			}
		}
	}
	if out, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output(); err == nil {
		m.Commit = strings.TrimSpace(string(out))
	}
	if out, err := exec.Command("git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output(); err == nil {
		m.Dirty = len(strings.TrimSpace(string(out))) > 0
	}
	return m
}

// parseCPUInfo returns the first "model name" and the number of
// "processor" entries of /proc/cpuinfo (the machine's CPUs, whatever this
// process's affinity).
func parseCPUInfo(f io.Reader) (string, int) {
	model, n := "unknown", 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "processor":
			n++
		case "model name":
			if model == "unknown" {
				model = strings.TrimSpace(v)
			}
		}
	}
	if n == 0 {
		n = runtime.NumCPU()
	}
	return model, n
}

// loadAvg is /proc/loadavg's three load averages.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// cpuPressure is the kernel's CPU pressure (PSI): the share of the last
// 10 s and 60 s in which some runnable task waited for a CPU. On a
// shared machine it says how much others competed with the benchmark.
func cpuPressure() string {
	b, err := os.ReadFile("/proc/pressure/cpu")
	if err != nil {
		return "unknown"
	}
	return parsePressure(string(b))
}

// parsePressure extracts "avg10 X%, avg60 Y%" from the "some" line of a
// /proc/pressure file.
func parsePressure(s string) string {
	for _, line := range strings.Split(s, "\n") {
		rest, ok := strings.CutPrefix(line, "some ")
		if !ok {
			continue
		}
		var a10, a60 string
		for _, f := range strings.Fields(rest) {
			if v, ok := strings.CutPrefix(f, "avg10="); ok {
				a10 = v
			}
			if v, ok := strings.CutPrefix(f, "avg60="); ok {
				a60 = v
			}
		}
		if a10 != "" && a60 != "" {
			return "avg10 " + a10 + "%, avg60 " + a60 + "%"
		}
	}
	return "unknown"
}
