# fencegate: one static binary for the registry, the sidecar and the tools,
# and the sidecar injector's (the chart runs it with command
# /usr/local/bin/fencegate-injector).
#   docker build --build-arg VERSION=v1.2.3 --build-arg REVISION=$(git rev-parse HEAD) -t fencegate:v1.2.3 .
#   docker run fencegate:v1.2.3 registry --config /etc/fencegate/registry.yaml
# The Go tag must equal go.mod's go line, and the go build line below is run
# as written by cmd/fencegate/dockerfile_test.go (on the context .dockerignore
# leaves), so keep it one RUN instruction.
FROM golang:1.26.8-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG REVISION=unknown
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags="-s -w -X github.com/fencegate/fencegate/internal/buildinfo.version=${VERSION} -X github.com/fencegate/fencegate/internal/buildinfo.revision=${REVISION}" \
      -o /out/fencegate ./cmd/fencegate
# The data directory, copied with --chown so that uid 65532 owns it (the
# runtime image has no shell to mkdir/chown in).
RUN mkdir -p /out/data

# The sidecar injector (a mutating admission webhook) is a binary of its own,
# so that client-go and controller-runtime stay out of the one every sidecar
# runs; cmd/fencegate-injector/dockerfile_test.go runs this go build line.
FROM build AS build-injector
ARG VERSION=dev
ARG REVISION=unknown
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags="-s -w -X github.com/fencegate/fencegate/internal/buildinfo.version=${VERSION} -X github.com/fencegate/fencegate/internal/buildinfo.revision=${REVISION}" \
      -o /out/fencegate-injector ./cmd/fencegate-injector

FROM gcr.io/distroless/static-debian12:nonroot AS runtime
ARG VERSION=dev
ARG REVISION=unknown
LABEL org.opencontainers.image.title="fencegate" \
      org.opencontainers.image.description="fencing-token registry and sidecar proxy" \
      org.opencontainers.image.source="https://github.com/fencegate/fencegate" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
COPY --from=build /out/fencegate /usr/local/bin/fencegate
COPY --from=build-injector /out/fencegate-injector /usr/local/bin/fencegate-injector
# Data (registry bbolt file and generated keys, sidecar ledger) lives under
# /var/lib/fencegate, the working directory; the chart mounts a volume there.
COPY --from=build --chown=65532:65532 /out/data /var/lib/fencegate
WORKDIR /var/lib/fencegate
USER 65532:65532
# Inbound listeners bind this host instead of 127.0.0.1: the registry (8700),
# the sidecar (8780) and its health listener (8782). The sidecar's admin API
# (8781) stays on loopback and is not exposed.
ENV FENCEGATE_LISTEN_HOST=0.0.0.0
EXPOSE 8700 8780 8782
ENTRYPOINT ["/usr/local/bin/fencegate"]
