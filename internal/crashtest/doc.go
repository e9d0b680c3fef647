// Package crashtest runs the child process of a crash test: the test binary
// executed again, running only a helper test that works on durable files
// and reports each write that returned on stdout, killed with SIGKILL at a
// random moment. The parent then checks that the files cover every report.
// store/bolt and store/guard use it; the child's work and the checks are
// theirs.
package crashtest
