// Package redisconf is what the registry and the sidecar share about their
// Redis server: Config, the one client configuration type (the registry's
// redis section and the sidecar's store.redis) with its one validator, and
// the checks of the server's settings that both Redis backends
// (store/redis and registry/redis) make when they open.
package redisconf
