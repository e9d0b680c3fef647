package redis

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/store"
)

// stepSource is the compare-and-write script (step.lua): it checks a
// step's reads and time and applies its writes, deciding nothing.
//
//go:embed step.lua
var stepSource string

var stepScript = goredis.NewScript(stepSource)

// The bounds of a step's time (see the package comment, "Time"): the
// script refuses a decision made more than StepBehind before its TIME or
// more than StepAhead after it, and the step runs again at the TIME it
// returns.
const (
	// StepBehind is how far a decision may lag the server's TIME when the
	// script runs. That lag is the estimate's own (at most the round trip
	// of the reply it came from: the estimate never runs ahead of the
	// server but for drift) plus everything between the decision and the
	// script (the client, the network, the server's queue: with
	// appendfsync always, other steps' fsyncs). Only the estimate's own
	// lag moves what is decided, so this is a bound against an estimate
	// gone stale (a server clock stepped forward, a drift), set above what
	// a loaded server's queue adds so that load does not make steps run
	// again.
	StepBehind = 250 * time.Millisecond
	// StepAhead is how far a decision may lead the server's TIME: only
	// a drift of the two clocks' rates since the last reply (or a server
	// clock stepped back) puts the estimate ahead, and ahead is the
	// direction that would place a Resolve's evidence after the moment it
	// was gathered, so it is kept small.
	StepAhead = time.Millisecond
)

// Read kinds of a step's read set, as the script spells them.
const (
	readString = "s" // a string key: GET
	readField  = "h" // a hash field: HGET
)

// read is one value a step's decision rests on: the key (and hash field)
// and the value expected there (nil: absent).
type read struct {
	kind  string
	key   string
	field string
	val   []byte
}

// op is one buffered write: a command of the script's whitelist (step.lua)
// on key with args. A step in WATCH mode sends the same ops in MULTI/EXEC
// (all but trim, which only the script runs).
type op struct {
	name string
	key  string
	args []any
}

// stepReply is what the script answered.
type stepReply struct {
	outcome string // "ok", "retry", "time" or "gen"
	time    time.Time
	// values are the current values of the read set ("retry", "time"), the
	// marker ("gen", one value), or the receipt keys a trim deleted
	// ("ok").
	values []any
}

// errCorruptReceipt marks the script's refusal of a trim over a corrupt
// receipt or index entry.
const corruptPrefix = "fencegate corrupt:"

// stepArgs encodes a step for the script: its keys and arguments.
func stepArgs(decided time.Time, genKey, genWant string, reads []read, ops []op) ([]string, []any) {
	var keys []string
	index := map[string]int{}
	key := func(k string) string {
		i, ok := index[k]
		if !ok {
			keys = append(keys, k)
			i = len(keys)
			index[k] = i
		}
		return strconv.Itoa(i)
	}
	at := ""
	if !decided.IsZero() {
		at = strconv.FormatInt(decided.UnixMicro(), 10)
	}
	args := []any{at, StepBehind.Microseconds(), StepAhead.Microseconds()}
	if genKey == "" {
		args = append(args, 0, "")
	} else {
		args = append(args, key(genKey), genWant)
	}
	args = append(args, len(reads))
	for _, r := range reads {
		args = append(args, r.kind, key(r.key))
		if r.kind == readField {
			args = append(args, r.field)
		}
		if r.val == nil {
			args = append(args, "0")
		} else {
			args = append(args, "1", r.val)
		}
	}
	args = append(args, len(ops))
	for _, o := range ops {
		args = append(args, o.name, key(o.key), len(o.args))
		args = append(args, o.args...)
	}
	return keys, args
}

// sendStep runs the script in one round trip (MULTI, EVALSHA, EXEC: the
// EXEC is the step's commit point, as it is the WATCH transaction's).
// Until the server has run it for this Store, it sends the source
// (EVAL), and so it does again, at once, when the server answers
// NOSCRIPT (a restarted server: that EVALSHA ran nothing). With Options.MinReplicas, a step that wrote then waits for
// the replicas on the same connection. An error is wrapped with op (a
// Redis error, or ErrCorrupt from a trim); one that arrives after the
// script was sent leaves the step's outcome unknown.
func (s *Store) sendStep(ctx context.Context, op string, keys []string, args []any, writes bool) (stepReply, error) {
	var rep stepReply
	run := func(c goredis.Cmdable) error {
		sha := s.scriptSent.Load()
		cmd, err := evalStep(ctx, c, keys, args, sha)
		if err != nil && sha && goredis.HasErrorPrefix(err, "NOSCRIPT") {
			s.scriptSent.Store(false) // a restarted server
			cmd, err = evalStep(ctx, c, keys, args, false)
		}
		if err != nil {
			return err
		}
		s.scriptSent.Store(true)
		rep, err = parseStep(cmd)
		return err
	}
	var err error
	if s.minReplicas > 0 {
		// WAIT must follow on the connection that wrote.
		err = s.c.Watch(ctx, func(rtx *goredis.Tx) error {
			if err := run(rtx); err != nil || !writes || rep.outcome != "ok" {
				return err
			}
			return s.replicated(ctx, rtx)
		})
	} else {
		err = run(s.c)
	}
	if f, ok := err.(final); ok {
		return stepReply{}, f.err
	}
	if err != nil {
		return stepReply{}, wrap(op, err)
	}
	return rep, nil
}

// evalStep sends the script (by its SHA-1, or its source) in MULTI/EXEC.
func evalStep(ctx context.Context, c goredis.Cmdable, keys []string, args []any, sha bool) (*goredis.Cmd, error) {
	var cmd *goredis.Cmd
	_, err := c.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		if sha {
			cmd = p.EvalSha(ctx, stepScript.Hash(), keys, args...)
		} else {
			cmd = p.Eval(ctx, stepSource, keys, args...)
		}
		return nil
	})
	if err == nil {
		err = cmd.Err()
	}
	return cmd, err
}

// parseStep reads the script's reply.
func parseStep(cmd *goredis.Cmd) (stepReply, error) {
	vals, err := cmd.Slice()
	if err != nil {
		if strings.Contains(err.Error(), corruptPrefix) {
			return stepReply{}, final{fmt.Errorf("store/redis: %v: %w", err, store.ErrCorrupt)}
		}
		return stepReply{}, err
	}
	bad := func() (stepReply, error) {
		return stepReply{}, fmt.Errorf("unexpected reply of the step script: %v", vals)
	}
	if len(vals) < 3 {
		return bad()
	}
	outcome, _ := vals[0].(string)
	sec, err1 := replyInt(vals[1])
	usec, err2 := replyInt(vals[2])
	if err1 != nil || err2 != nil || sec <= 0 || usec < 0 || usec > 999_999 {
		return bad()
	}
	switch outcome {
	case "ok", "retry", "time", "gen":
	default:
		return bad()
	}
	return stepReply{outcome: outcome, time: time.Unix(sec, usec*1000).UTC(), values: vals[3:]}, nil
}

// replyInt reads TIME's seconds or microseconds (a string in the reply).
func replyInt(v any) (int64, error) {
	switch x := v.(type) {
	case string:
		return strconv.ParseInt(x, 10, 64)
	case int64:
		return x, nil
	}
	return 0, errors.New("not a number")
}

// replyBytes is a value of the reply: nil when absent.
func replyBytes(v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case string:
		return []byte(x), nil
	}
	return nil, fmt.Errorf("unexpected value %T in the step script's reply", v)
}
