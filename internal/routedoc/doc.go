// Package routedoc checks an HTTP reference in docs/ against the chi
// router that serves it, for tests: every route served is documented, and
// every documented route is served. Routes are compared by method and
// path, path parameters by position ({id}, a final *); the profiler's
// routes (/debug/...) are left out on both sides, the doc naming them
// once.
package routedoc
