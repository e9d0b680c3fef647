package redis

import (
	"context"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"
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
