// Package wakeuptest holds the test cases of the shared-store registry
// backends (registry/redis, registry/etcd) for their wake-ups across
// processes, and the running registry they start over a backend: two
// registries ("processes") A and B over two backends on one store, B's
// clock a fake nobody advances, so that only the backend's own wake-up (a
// Redis publication, an etcd watch) can grant B's waiting acquire when A
// ends the lease. Each backend's tests open the backends (a server of its
// own, a cluster) and pass how to count a backend's confirmed
// subscriptions.
package wakeuptest
