package redis

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/internal/redistest"
)

// FuzzParseStep feeds the step script's reply decoder (parseStep, and
// refresh over what it returns) replies of any shape: fields split from
// one string by '|', a field "<nil>" standing for a nil value and "#n"
// for an integer. It never panics; a reply it accepts names a known
// outcome and a positive time, and refresh accepts its values only when
// there is one per read.
func FuzzParseStep(f *testing.F) {
	for _, seed := range []string{
		"ok|1700000000|123456",
		"ok|1700000000|5|fg:{r}:rcpt:1:1|fg:{r}:rcpt:1:2",
		"retry|1700000000|999999|<nil>|{\"resource\":\"r\"}",
		"gen|1700000000|0|<nil>",
		"gen|1700000000|0|0123456789abcdef",
		"retry|#1700000000|#7|#3",
		"ok|0|0",
		"ok|-5|1",
		"bogus|1|1",
		"ok|x|y",
		"",
		"ok",
	} {
		f.Add(seed, 2)
	}
	f.Fuzz(func(t *testing.T, reply string, nReads int) {
		var vals []any
		for _, field := range strings.Split(reply, "|") {
			switch {
			case field == "<nil>":
				vals = append(vals, nil)
			case strings.HasPrefix(field, "#"):
				vals = append(vals, int64(len(field)))
			default:
				vals = append(vals, field)
			}
		}
		cmd := goredis.NewCmd(context.Background())
		cmd.SetVal(vals)
		rep, err := parseStep(cmd)
		if err != nil {
			return
		}
		switch rep.outcome {
		case "ok", "retry", "gen":
		default:
			t.Fatalf("accepted outcome %q", rep.outcome)
		}
		if rep.time.Unix() <= 0 {
			t.Fatalf("accepted time %v", rep.time)
		}
		if nReads < 0 || nReads > 8 {
			return
		}
		tx := &tx{s: &Store{cache: newCache()}, fresh: map[string]entry{}}
		for i := range nReads {
			tx.reads = append(tx.reads, read{kind: readString, key: "k" + string(rune('a'+i))})
		}
		if err := tx.refresh(rep.values); err == nil && len(rep.values) != nReads {
			t.Fatalf("refresh took %d values for %d reads", len(rep.values), nReads)
		}
	})
}

// FuzzStepScript sends the step script (step.lua) arguments of any shape
// on a real redis-server: ARGV split from one string by '|', nKeys keys.
// Whatever they are, the server keeps answering, and a step that does
// not answer "ok" wrote nothing: every check, and every read a trim
// plans, runs before the first write. (A step whose own ops conflict on
// a key's type, which the Go side never builds since a key's name fixes
// its type, may fail half-way with WRONGTYPE or a non-integer INCRBY, as
// such a conflict inside EXEC always did; those are let through.)
func FuzzStepScript(f *testing.F) {
	ctx := context.Background()
	srv := redistest.Start(f, "--appendonly", "no")
	c := goredis.NewClient(&goredis.Options{Addr: srv.Addr()})
	f.Cleanup(func() { _ = c.Close() })
	rec := `{"resource":"r"}`
	for _, seed := range []struct {
		reads []read
		ops   []op
	}{
		{nil, nil},
		{[]read{{kind: readString, key: "fz:rec"}}, []op{{name: "set", key: "fz:rec", args: []any{rec}}, {name: "incrby", key: "fz:bytes", args: []any{16}}}},
		{[]read{{kind: readString, key: "fz:rec", val: []byte(rec)}}, []op{{name: "del", key: "fz:rec"}}},
		{[]read{{kind: readField, key: "fz:q", field: "id"}}, []op{{name: "hset", key: "fz:q", args: []any{"id", "{}"}}, {name: "sadd", key: "fz:quar", args: []any{"r"}}}},
		{nil, []op{{name: "zadd", key: "fz:rcpts", args: []any{0, member(1, 1)}}, {name: "trim", key: "fz:rcpts", args: []any{1, 16, 1, member(1, 2), "fz:rcpt:", "fz:ops:", "fz:n", "fz:bytes"}}}},
	} {
		keys, args := stepArgs(time.Time{}, "", "", seed.reads, seed.ops)
		parts := make([]string, len(args))
		for i, a := range args {
			parts[i] = fmt.Sprint(a)
			if b, ok := a.([]byte); ok {
				parts[i] = string(b)
			}
		}
		f.Add(strings.Join(parts, "|"), len(keys))
	}
	f.Fuzz(func(t *testing.T, argv string, nKeys int) {
		if nKeys < 0 || nKeys > 8 || len(argv) > 4096 {
			return
		}
		if err := c.FlushAll(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		keys := []string{"fz:rec", "fz:bytes", "fz:q", "fz:quar", "fz:rcpts", "fz:rcpt:1:1", "fz:ops:x", "fz:n"}[:nKeys]
		var args []any
		for _, a := range strings.Split(argv, "|") {
			args = append(args, a)
		}
		rep, err := stepScript.Eval(ctx, c, keys, args...).Slice()
		if perr := c.Ping(ctx).Err(); perr != nil {
			t.Fatalf("server gone after %q: %v", argv, perr)
		}
		if err == nil && len(rep) > 0 && rep[0] == "ok" {
			return
		}
		if err != nil && (strings.Contains(err.Error(), "WRONGTYPE") || strings.Contains(err.Error(), "not an integer") || strings.Contains(err.Error(), "overflow")) {
			return
		}
		if n, derr := c.DBSize(ctx).Result(); derr != nil || n != 0 {
			t.Fatalf("step %q with %d keys answered %v %v and left %d keys (%v)", argv, nKeys, rep, err, n, derr)
		}
	})
}
