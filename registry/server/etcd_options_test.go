package server

import (
	"testing"
	"time"

	"go.uber.org/zap"
)

// TestEtcdOptionsCarryTheSection: every key of the etcd section reaches
// the backend's Options, the step bounds included (zero stays zero: the
// backend's defaults).
func TestEtcdOptionsCarryTheSection(t *testing.T) {
	c := EtcdConfig{Endpoints: []string{"http://a:1"}, DialTimeout: 2 * time.Second, Username: "u", Prefix: "p",
		RetryFor: 7 * time.Second, AttemptTimeout: 900 * time.Millisecond}
	o := c.options(nil, "pw", "/s.json", zap.NewNop())
	if o.RetryFor != 7*time.Second || o.AttemptTimeout != 900*time.Millisecond || o.DialTimeout != 2*time.Second ||
		o.Username != "u" || o.Password != "pw" || o.Prefix != "p" || o.StateFile != "/s.json" || len(o.Endpoints) != 1 || o.Logger == nil {
		t.Fatalf("options %+v do not carry %+v", o, c)
	}
	if o := (EtcdConfig{}).options(nil, "", "", zap.NewNop()); o.RetryFor != 0 || o.AttemptTimeout != 0 {
		t.Fatalf("an unset section sets RetryFor %v AttemptTimeout %v, want the backend's defaults (0)", o.RetryFor, o.AttemptTimeout)
	}
}
