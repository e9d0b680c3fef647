// Package memory is an in-memory registry backend for tests and the
// deterministic simulation. It keeps nothing across restarts: never use it
// where fences must survive a crash.
package memory
