// Package deps pins the project's dependencies while the packages that use
// them are being written. It is removed once every dependency has a user.
package deps

import (
	_ "github.com/anishathalye/porcupine"
	_ "github.com/go-chi/chi/v5"
	_ "github.com/go-chi/chi/v5/middleware"
	_ "github.com/lestrrat-go/jwx/v2/jwa"
	_ "github.com/lestrrat-go/jwx/v2/jwk"
	_ "github.com/lestrrat-go/jwx/v2/jws"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/prometheus/client_golang/prometheus/testutil"
	_ "github.com/redis/go-redis/v9"
	_ "go.etcd.io/bbolt"
	_ "go.uber.org/zap"
	_ "go.uber.org/zap/zaptest"
	_ "go.yaml.in/yaml/v3"
	_ "pgregory.net/rapid"
)
