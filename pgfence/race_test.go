package pgfence_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/pgfence"
)

// TestStaleAndFreshRace: two service instances race on each of many
// resources: the stale owner (fence 5, which already wrote segment 1)
// writes segment 2 while the fresh owner (fence 6) writes its segment 1,
// both released together into Apply, at each isolation level (RunTx
// retries serialization failures). Whatever the order, the fresh write
// is accepted, the stale one is accepted only before it (else
// STALE_OWNER), the record ends at fence 6, and the business row holds
// the fresh value: the stale write never lands after the fresh one.
func TestStaleAndFreshRace(t *testing.T) { raceRounds(t, true) }

// TestFirstWritesRace: the same race on resources with no record yet
// (fence 5's segment 1 against fence 6's): neither can lock a record
// that does not exist, so the one that inserts second fails on the key
// (postgres.ErrRecordRace) and runs again, deciding on the first's record.
func TestFirstWritesRace(t *testing.T) { raceRounds(t, false) }

func raceRounds(t *testing.T, staleFirst bool) {
	w := newWorld(t)
	ctx := context.Background()
	const rounds = 25
	for _, iso := range []pgx.TxIsoLevel{pgx.ReadCommitted, pgx.RepeatableRead, pgx.Serializable} {
		t.Run(string(iso), func(t *testing.T) {
			staleWon := 0
			for i := range rounds {
				batch := fmt.Sprintf("%s-%d", strings.ReplaceAll(string(iso), " ", "-"), i)
				res := "race/" + batch
				stale, fresh := w.leaseOn(res, 5), w.leaseOn(res, 6)
				staleSeq := uint64(1)
				if staleFirst {
					if err := w.writeIn(iso, stale.request(1, "s1"), batch, "s1"); err != nil {
						t.Fatal(err)
					}
					staleSeq = 2
				}
				var wg sync.WaitGroup
				start := make(chan struct{})
				var staleErr, freshErr error
				wg.Add(2)
				go func() {
					defer wg.Done()
					<-start
					staleErr = w.writeIn(iso, stale.request(staleSeq, "stale"), batch, "stale")
				}()
				go func() { defer wg.Done(); <-start; freshErr = w.writeIn(iso, fresh.request(1, "fresh"), batch, "fresh") }()
				close(start)
				wg.Wait()
				if freshErr != nil {
					t.Fatalf("round %d: the fresh write: %v", i, freshErr)
				}
				switch code(staleErr) {
				case "":
					if staleErr != nil {
						t.Fatalf("round %d: the stale write: %v", i, staleErr)
					}
					staleWon++
				case fencegate.CodeStaleOwner:
				default:
					t.Fatalf("round %d: the stale write: %v, want accepted (first) or STALE_OWNER", i, staleErr)
				}
				var val string
				if err := w.pool.QueryRow(ctx, `SELECT value FROM racing WHERE batch = $1`, batch).Scan(&val); err != nil {
					t.Fatal(err)
				}
				rec, err := w.st.Record(ctx, res)
				if err != nil {
					t.Fatal(err)
				}
				if val != "fresh" || rec.HighestFence != 6 || rec.LastSeq != 1 {
					t.Fatalf("round %d: row %q, record fence %d segment %d; want the fresh owner's (fence 6, segment 1)", i, val, rec.HighestFence, rec.LastSeq)
				}
			}
			t.Logf("%s: the stale write got in first in %d of %d rounds", iso, staleWon, rounds)
		})
	}
}

// writeIn is a fenced write of value to batch's row of racing, in a
// transaction at iso run by RunTx.
func (w *world) writeIn(iso pgx.TxIsoLevel, req pgfence.Request, batch, value string) error {
	ctx := context.Background()
	return w.fence.RunTx(ctx, w.pool, pgx.TxOptions{IsoLevel: iso}, func(tx pgx.Tx) error {
		if _, err := w.fence.Apply(ctx, tx, req); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO racing (batch, value) VALUES ($1, $2)
			ON CONFLICT (batch) DO UPDATE SET value = excluded.value`, batch, value)
		return err
	})
}
