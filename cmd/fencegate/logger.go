package main

import (
	"fmt"
	"os"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Log formats of --log-format.
const (
	logJSON    = "json"
	logConsole = "console"
)

// newLoggers returns the logger of the servers (level, format: json or
// console, on stderr) and the lifecycle logger the start and shutdown
// lines go to: the same encoder and stream at info whatever the level, so
// that an operator always sees where a server listens and that it ended.
func newLoggers(level, format string) (log, life *zap.Logger, err error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, nil, fmt.Errorf("log level: %w", err)
	}
	ec := zap.NewProductionEncoderConfig()
	ec.TimeKey = "ts"
	ec.EncodeTime = zapcore.ISO8601TimeEncoder
	var enc zapcore.Encoder
	switch format {
	case logJSON, "":
		enc = zapcore.NewJSONEncoder(ec)
	case logConsole:
		ec.EncodeLevel = zapcore.CapitalLevelEncoder
		enc = zapcore.NewConsoleEncoder(ec)
	default:
		return nil, nil, fmt.Errorf("--log-format must be json or console, not %q", format)
	}
	sink := zapcore.Lock(os.Stderr)
	opts := []zap.Option{zap.AddCaller(), zap.ErrorOutput(sink), zap.AddStacktrace(zapcore.ErrorLevel)}
	log = zap.New(zapcore.NewCore(enc, sink, zap.NewAtomicLevelAt(lvl)), opts...)
	life = zap.New(zapcore.NewCore(enc.Clone(), sink, zapcore.InfoLevel), zap.AddCaller())
	return log, life, nil
}
