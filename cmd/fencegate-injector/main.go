package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/fencegate/fencegate/inject"
	"github.com/fencegate/fencegate/inject/webhook"
	"github.com/fencegate/fencegate/internal/buildinfo"
)

// flags are the command line.
type flags struct {
	config       string
	certDir      string
	host         string
	port         int
	healthListen string
	version      bool
}

// parseFlags parses the command line; -h prints the usage on stdout.
func parseFlags(args []string, stdout io.Writer) (flags, error) {
	var f flags
	fs := flag.NewFlagSet("fencegate-injector", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // the caller reports the error once
	fs.Usage = func() {}
	fs.StringVar(&f.config, "config", "/etc/fencegate-injector/injector.yaml", "the injector's config file (the sidecar it injects)")
	fs.StringVar(&f.certDir, "cert-dir", "/etc/fencegate-injector/tls", "directory with the webhook's tls.crt and tls.key (re-read when they change)")
	fs.StringVar(&f.host, "host", "", "address the webhook listens on (empty: every address)")
	fs.IntVar(&f.port, "port", 9443, "port of the webhook (TLS)")
	fs.StringVar(&f.healthListen, "health-listen", ":8081", "address of /healthz and /readyz (plain HTTP)")
	fs.BoolVar(&f.version, "version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fmt.Fprintln(stdout, "Usage: fencegate-injector [flags]\n\nfencegate's mutating admission webhook: adds the sidecar to pods annotated fencegate.io/inject: \"true\".\n\nFlags:")
			fs.PrintDefaults()
		}
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return f, nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the command; it serves until ctx ends.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f, err := parseFlags(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "fencegate-injector: %v (see fencegate-injector -h)\n", err)
		return 2
	}
	if f.version {
		info := buildinfo.Read()
		fmt.Fprintf(stdout, "fencegate-injector %s (revision %s, %s)\n", info.Version, info.Revision, info.GoVersion)
		return 0
	}
	// Locked: the webhook server and its certificate watcher log from
	// their own goroutines.
	log := zap.New(zap.WriteTo(zapcore.Lock(zapcore.AddSync(stderr))))
	ctrllog.SetLogger(log)
	cfg, err := inject.LoadConfig(f.config)
	if err != nil {
		log.Error(err, "config refused", "config", f.config)
		return 2
	}
	native, err := resolveNative(cfg.Native)
	if err != nil {
		log.Error(err, "cannot decide between native and regular sidecars", "native", cfg.Native)
		return 1
	}
	if err := serve(ctx, log, f, cfg, native); err != nil {
		log.Error(err, "stopped")
		return 1
	}
	log.Info("stopped")
	return 0
}

// resolveNative asks the API server's version for native: auto.
func resolveNative(mode inject.NativeMode) (bool, error) {
	if mode != inject.NativeAuto {
		return mode.Native("")
	}
	rc, err := rest.InClusterConfig()
	if err != nil {
		return false, fmt.Errorf("fencegate-injector: native auto needs the API server's version: %w (set native: always or never outside a cluster)", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return false, fmt.Errorf("fencegate-injector: %w", err)
	}
	v, err := dc.ServerVersion()
	if err != nil {
		return false, fmt.Errorf("fencegate-injector: reading the API server's version: %w", err)
	}
	return mode.Native(v.GitVersion)
}

// serve runs the webhook server and the health listener until ctx ends.
func serve(ctx context.Context, log logr.Logger, f flags, cfg inject.Config, native bool) error {
	srv := crwebhook.NewServer(crwebhook.Options{Host: f.host, Port: f.port, CertDir: f.certDir})
	srv.Register(webhook.Path, webhook.New(cfg, webhook.WithNative(native)).Webhook())

	ln, err := net.Listen("tcp", f.healthListen)
	if err != nil {
		return fmt.Errorf("fencegate-injector: health listener: %w", err)
	}
	started := srv.StartedChecker()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := started(r); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	health := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	healthDone := make(chan error, 1)
	go func() { healthDone <- health.Serve(ln) }()

	log.Info("starting", "version", buildinfo.Read().Version, "webhook", fmt.Sprintf("%s:%d%s", f.host, f.port, webhook.Path),
		"health", ln.Addr().String(), "native", native, "nativeMode", cfg.Native, "image", cfg.Image)
	err = srv.Start(ctx) // returns once ctx is done (or it failed)
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = health.Shutdown(shutCtx)
	if herr := <-healthDone; herr != nil && !errors.Is(herr, http.ErrServerClosed) && err == nil {
		err = herr
	}
	return err
}
