package proxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"
)

// ErrDowngrade: a configuration puts an enforced route back to shadow or
// off. The seed says resource-side verification is never switched off
// again; an operator may still force it, explicitly and logged.
var ErrDowngrade = errors.New("proxy: refusing to leave enforce mode")

// ledger remembers, in DataDir/enforcement.json, every route that has been
// enforced, and every forced downgrade.
type ledger struct {
	path  string
	State ledgerState
}

type ledgerState struct {
	Routes map[string]*ledgerRoute `json:"routes"`
}

type ledgerRoute struct {
	EnforcedSince time.Time `json:"enforcedSince"`
	History       []string  `json:"history,omitempty"`
}

func openLedger(dir string) (*ledger, error) {
	l := &ledger{path: filepath.Join(dir, "enforcement.json"), State: ledgerState{Routes: map[string]*ledgerRoute{}}}
	raw, err := os.ReadFile(l.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return l, nil
	case err != nil:
		return nil, fmt.Errorf("proxy: enforcement ledger: %w", err)
	}
	if err := json.Unmarshal(raw, &l.State); err != nil {
		return nil, fmt.Errorf("proxy: enforcement ledger %s is corrupt (refusing to guess which routes were enforced): %w", l.path, err)
	}
	if l.State.Routes == nil {
		l.State.Routes = map[string]*ledgerRoute{}
	}
	return l, nil
}

// check records newly enforced routes and refuses downgrades not forced.
func (l *ledger) check(routes []*route, force []string, log *zap.Logger) error {
	changed := false
	var refused []string
	now := time.Now().UTC()
	for _, r := range routes {
		e := l.State.Routes[r.key]
		switch {
		case r.Mode == ModeEnforce && e == nil:
			l.State.Routes[r.key] = &ledgerRoute{EnforcedSince: now, History: []string{now.Format(time.RFC3339) + " enforce"}}
			changed = true
		case r.Mode == ModeEnforce && e != nil && e.EnforcedSince.IsZero():
			e.EnforcedSince = now
			e.History = append(e.History, now.Format(time.RFC3339)+" enforce again")
			changed = true
		case r.Mode != ModeEnforce && e != nil && !e.EnforcedSince.IsZero():
			if !slices.Contains(force, r.key) {
				refused = append(refused, fmt.Sprintf("%s (enforced since %s, now %s)", r.key, e.EnforcedSince.Format(time.RFC3339), r.Mode))
				continue
			}
			log.Warn("FORCED downgrade of an enforced route: resource-side verification is weakened by operator order",
				zap.String("route", r.key), zap.String("mode", r.Mode), zap.Time("enforcedSince", e.EnforcedSince))
			e.History = append(e.History, now.Format(time.RFC3339)+" forced downgrade to "+r.Mode)
			e.EnforcedSince = time.Time{}
			changed = true
		}
	}
	if len(refused) > 0 {
		return fmt.Errorf("%w: %s; to force it, start with --force-downgrade 'METHOD /path' for each route (logged)", ErrDowngrade, strings.Join(refused, "; "))
	}
	if changed {
		return l.save()
	}
	return nil
}

func (l *ledger) save() error {
	raw, err := json.MarshalIndent(l.State, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(l.path), 0o700); err != nil {
		return fmt.Errorf("proxy: enforcement ledger: %w", err)
	}
	tmp := l.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("proxy: enforcement ledger: %w", err)
	}
	if _, err := f.Write(raw); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("proxy: enforcement ledger: %w", err)
	}
	return os.Rename(tmp, l.path)
}
