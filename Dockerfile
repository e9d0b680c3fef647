# fencegate: one static binary for the registry, the sidecar and the tools.
#   docker build -t fencegate .
#   docker run fencegate registry --config /etc/fencegate/registry.yaml
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/fencegate ./cmd/fencegate

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/fencegate /usr/local/bin/fencegate
USER 65532:65532
EXPOSE 8700 8780 8781
ENTRYPOINT ["/usr/local/bin/fencegate"]
