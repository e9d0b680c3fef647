// Package lockedbuf is a bytes.Buffer that concurrent writers and readers
// may share: the tests that capture a process's or a logger's output while
// it still runs read it through one.
package lockedbuf
